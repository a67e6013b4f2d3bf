/**
 * The automation editor's first minutes, in a real browser against a real `npm start`: a new
 * automation's starter step runs on a real payload (Test, and a signed delivery's run completes),
 * Test runs what the editor shows (unsaved edits included, nothing saved), leaving the page with
 * unsaved edits asks first, and a mistyped step kind is named with the kind it is closest to.
 */
import { expect, test, type Page } from '@playwright/test';
import { hmacEvent } from '../../test/helpers/signing';
import { assertAccessible, signIn } from './session';

test.describe.configure({ mode: 'serial' });

async function setSteps(page: Page, steps: unknown): Promise<void> {
  const editor = page.getByRole('textbox', { name: 'Steps (JSON)' });
  await editor.click();
  await page.keyboard.press('ControlOrMeta+a');
  await page.keyboard.press('Delete');
  await editor.fill(JSON.stringify(steps, null, 2));
}

test('a new automation starts from a step that runs on any payload; Test runs the unsaved editor; leaving asks first', async ({
  page,
  request,
}) => {
  await signIn(page);
  await page.goto('/console/automations/new');
  await page.getByLabel('Display name').fill('Editor starter flow');

  // Unsaved: a link in the console asks, and staying keeps the edits.
  const questions: string[] = [];
  page.once('dialog', (dialog) => {
    questions.push(dialog.message());
    void dialog.dismiss();
  });
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Runs', exact: true }).click();
  expect(questions).toEqual(['This automation has unsaved changes. Leave the page and lose them?']);
  await expect(page.getByRole('heading', { level: 1, name: 'New automation' })).toBeVisible();
  await expect(page.getByLabel('Display name')).toHaveValue('Editor starter flow');

  // The template as it is: saved, published, tested and run on an object payload.
  await page.getByRole('button', { name: 'Save' }).click();
  const secretPanel = page.getByRole('region', { name: 'Signing secret' });
  await expect(secretPanel.getByRole('button', { name: 'Copy secret' })).toBeVisible();
  const secret = (await secretPanel.locator('code').textContent())!.trim();
  const listener = page.getByRole('region', { name: 'Listener' });
  const url = (await listener.locator('code.url').textContent())!.trim();
  await listener.getByRole('button', { name: 'Publish', exact: true }).click();
  await expect(listener.getByText(/Published \(version 1\)/)).toBeVisible();
  await page.getByLabel('Sample payload (JSON)').fill('{"user": "ada", "groups": ["x"]}');
  await page.getByRole('button', { name: 'Test', exact: true }).click();
  const table = page.getByRole('table', { name: /Dry run of the draft/ });
  await expect(table.getByRole('row', { name: /hello/ })).toContainText('WOULD_RUN');
  await expect(table.getByRole('row', { name: /hello/ })).toContainText('received an object with 2 fields');

  const event = hmacEvent(secret, { user: 'ada' });
  const res = await request.post(new URL(url).pathname, { headers: event.headers, data: event.body });
  expect(res.status()).toBe(200);
  const { executionId } = (await res.json()) as { executionId: string };
  await page.goto(`/console/runs/${encodeURIComponent(executionId)}`);
  await expect(page.getByText('COMPLETED').first()).toBeVisible();

  // Edited, not saved: Test runs the editor's steps; the saved draft is unchanged.
  await page.goBack();
  await setSteps(page, [{ id: 'shout', log: { message: "'hi ' + ctx.trigger.user" } }]);
  await page.getByLabel('Sample payload (JSON)').fill('{"user": "ada"}');
  await page.getByRole('button', { name: 'Test', exact: true }).click();
  await expect(table.getByRole('row', { name: /shout/ })).toContainText('hi ada');
  await expect(table.getByRole('row', { name: /hello/ })).toHaveCount(0);
  await assertAccessible(page, 'automation tested unsaved');

  // A mistyped kind, tested unsaved: named at its field with the kind it is closest to.
  await setSteps(page, [{ id: 'shout', logg: { message: "'x'" } }]);
  await page.getByRole('button', { name: 'Test', exact: true }).click();
  await expect(page.getByRole('alert')).toContainText('"logg" is not a step kind; did you mean "log"?');

  // Leaving with the edits, accepted: the page goes, and the saved steps are still the template's.
  page.once('dialog', (dialog) => void dialog.accept());
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Runs', exact: true }).click();
  await expect(page.getByRole('heading', { level: 1, name: 'Runs' })).toBeVisible();
  await page.goBack();
  await expect(page.getByRole('textbox', { name: 'Steps (JSON)' })).toContainText('"hello"');
});
