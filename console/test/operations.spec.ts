/**
 * The console's pages for the circuit breaker and bulk actions, in a real browser against a real
 * `npm start` (as console.spec.ts): an automation's breaker set on its page trips on signed
 * deliveries, its paused runs resumed or canceled through a dialog with a reason; a bulk cancel from
 * the Runs page acts on exactly the runs its preview counted. Each new state passes axe.
 * With CONSOLE_SCREENSHOTS=<dir> it also writes these states' screenshots for docs/console.md#tests.
 */
import { expect, test, type APIRequestContext, type Page } from '@playwright/test';
import { hmacEvent } from '../../test/helpers/signing';
import { assertAccessible as expectAccessible, bearer, createAutomation, screenshot, signIn } from './session';

test.describe.configure({ mode: 'serial' });

/** A signed delivery; resolves with the run id it started (200 even when the run is paused). */
async function deliver(
  request: APIRequestContext,
  flow: { secret: string; url: string },
  name: string,
): Promise<string> {
  const event = hmacEvent(flow.secret, { name });
  const res = await request.post(new URL(flow.url).pathname, { headers: event.headers, data: event.body });
  expect(res.status()).toBe(200);
  return ((await res.json()) as { executionId: string }).executionId;
}

async function statusOf(request: APIRequestContext, executionId: string): Promise<string> {
  const res = await request.get(`/api/v1/automation_executions/${encodeURIComponent(executionId)}`, {
    headers: await bearer(request),
  });
  expect(res.status()).toBe(200);
  return ((await res.json()) as { execution: { status: string } }).execution.status;
}

/** Tabs forward until the control has the focus: it is reachable with the keyboard alone. */
async function tabTo(page: Page, name: string): Promise<void> {
  await page.locator('body').focus();
  for (let i = 0; i < 120; i++) {
    await page.keyboard.press('Tab');
    if ((await page.evaluate(() => document.activeElement?.textContent?.trim() ?? '')) === name) return;
  }
  throw new Error(`"${name}" was not reached with Tab`);
}

test('a breaker of 1 set on the automation page trips on the second event; resume runs it, cancel asks for a reason', async ({
  page,
  request,
}) => {
  const flow = await createAutomation(request, 'Console breaker', [
    { id: 'hello', log: { message: "'hello ' + ctx.trigger.name" } },
  ]);
  await signIn(page);
  await page.goto(`/console/automations/${encodeURIComponent(flow.id)}`);
  const breaker = page.getByRole('region', { name: 'Circuit breaker' });
  await breaker.getByLabel('Maximum runs').fill('1');
  await breaker.getByLabel('Period').fill('3600s');
  await breaker.getByRole('button', { name: 'Set circuit breaker' }).click();
  await expect(page.getByRole('status').filter({ hasText: 'Circuit breaker set.' })).toBeVisible();
  await expect(breaker).toContainText('Breaker CLOSED: 0 runs in the period.');

  const first = await deliver(request, flow, 'Ann');
  const second = await deliver(request, flow, 'Bob');
  await expect.poll(() => statusOf(request, first)).toBe('COMPLETED');
  expect(await statusOf(request, second)).toBe('PAUSED');
  await expect(breaker).toContainText('Breaker OPEN');
  await expect(breaker).toContainText('1 paused runs.');
  await expectAccessible(page, 'automation with an open breaker');
  await screenshot(page, 'breaker-open', breaker);
  // The Runs page lists the paused run as PAUSED (in a second tab: this one goes on with the breaker).
  const runsTab = await page.context().newPage();
  await runsTab.goto(`/console/runs?automation=${encodeURIComponent(flow.id)}`);
  const pausedRow = runsTab
    .getByRole('row')
    .filter({ has: runsTab.getByRole('link', { name: `Run ${second.split(':').pop()}` }) });
  await expect(pausedRow).toContainText('PAUSED');
  await screenshot(runsTab, 'runs-paused');
  await runsTab.close();

  // Resume, reached with the keyboard: the dialog asks for a reason, Confirm resumes, the count is shown.
  await tabTo(page, 'Resume paused runs');
  await page.keyboard.press('Enter');
  const resume = page.getByRole('dialog', { name: 'Resume the paused runs?' });
  await expect(resume).toBeVisible();
  await expectAccessible(page, 'resume dialog');
  await screenshot(page, 'breaker-resume-dialog', resume);
  await resume.getByLabel('Reason').fill('checked the sender');
  await resume.getByRole('button', { name: 'Confirm' }).click();
  await expect(resume).toHaveCount(0);
  await expect(breaker.getByRole('status').filter({ hasText: 'Resumed 1 paused runs.' })).toBeVisible();
  await expect.poll(() => statusOf(request, second)).toBe('COMPLETED');
  await expect(breaker).toContainText('Breaker CLOSED');

  // Counting starts again from zero: the next run runs, the one after is paused.
  const third = await deliver(request, flow, 'Cy');
  const fourth = await deliver(request, flow, 'Di');
  await expect.poll(() => statusOf(request, third)).toBe('COMPLETED');
  expect(await statusOf(request, fourth)).toBe('PAUSED');
  await expect(breaker).toContainText('Breaker OPEN');

  // Cancel without a reason is refused in the dialog and changes nothing; with one it cancels.
  await breaker.getByRole('button', { name: 'Cancel paused runs' }).click();
  const cancel = page.getByRole('dialog', { name: 'Cancel the paused runs?' });
  await cancel.getByRole('button', { name: 'Confirm' }).click();
  await expect(cancel.getByRole('alert')).toContainText('A reason is required');
  expect(await statusOf(request, fourth)).toBe('PAUSED');
  await cancel.getByLabel('Reason').fill('a runaway sync');
  await cancel.getByRole('button', { name: 'Confirm' }).click();
  await expect(cancel).toHaveCount(0);
  await expect(breaker.getByRole('status').filter({ hasText: 'Canceled 1 paused runs.' })).toBeVisible();
  expect(await statusOf(request, fourth)).toBe('CANCELED');
  await expect(breaker).toContainText('Breaker CLOSED');
  await expectAccessible(page, 'automation after the paused runs were canceled');
});

test('a bulk cancel from the Runs page cancels exactly the runs its preview counted', async ({ page, request }) => {
  const flow = await createAutomation(request, 'Console bulk', [{ id: 'hold', waitForApproval: {} }]);
  const runs = [
    await deliver(request, flow, 'Ann'),
    await deliver(request, flow, 'Bob'),
    await deliver(request, flow, 'Cy'),
  ];
  for (const run of runs) await expect.poll(() => statusOf(request, run)).toBe('RUNNING');
  await signIn(page);
  await page.goto(`/console/runs?automation=${encodeURIComponent(flow.id)}&status=RUNNING`);
  await expect(page.getByLabel('Status').locator('option', { hasText: 'PAUSED' })).toHaveCount(1);

  await tabTo(page, 'Bulk action');
  await page.keyboard.press('Enter');
  const form = page.getByRole('form', { name: 'Bulk action' });
  await form.getByLabel('Action').selectOption('cancel');
  await form.getByLabel('Reason').fill('bulk cleanup');
  await form.getByRole('button', { name: 'Preview' }).click();
  const preview = page.getByRole('region', { name: 'Preview' });
  await expect(preview.getByRole('status')).toHaveText('3 runs match.');
  await expect(preview.getByRole('list', { name: 'Sample of the matched runs' }).getByRole('listitem')).toHaveCount(3);
  await expectAccessible(page, 'bulk action preview');
  await screenshot(page, 'bulk-preview');

  // A run started after the preview is not in it, so it is not touched.
  const later = await deliver(request, flow, 'Di');
  await expect.poll(() => statusOf(request, later)).toBe('RUNNING');

  await preview.getByRole('button', { name: 'Cancel 3 runs' }).click();
  const dialog = page.getByRole('dialog', { name: 'Cancel 3 runs?' });
  await screenshot(page, 'bulk-confirm', dialog);
  // Two buttons, "Confirm" and "Back" (never a second "Cancel"); Back changes nothing.
  await expect(dialog.getByRole('button')).toHaveText(['Back', 'Confirm']);
  await dialog.getByRole('button', { name: 'Back' }).click();
  await expect(dialog).toHaveCount(0);
  expect(await statusOf(request, runs[0]!)).toBe('RUNNING');
  await preview.getByRole('button', { name: 'Cancel 3 runs' }).click();
  await dialog.getByRole('button', { name: 'Confirm' }).click();
  const progress = page.getByRole('region', { name: /Progress of bulk action/ });
  await expect(progress.getByRole('status')).toContainText('COMPLETED');
  await expect(progress.getByRole('status')).toContainText('cancel: 3 matched, 3 succeeded, 0 skipped, 0 failed.');
  await expect(progress.getByRole('button', { name: 'Stop bulk action' })).toHaveCount(0);
  await expectAccessible(page, 'bulk action completed');
  await screenshot(page, 'bulk-progress', progress);
  for (const run of runs) expect(await statusOf(request, run)).toBe('CANCELED');
  expect(await statusOf(request, later)).toBe('RUNNING');
});
