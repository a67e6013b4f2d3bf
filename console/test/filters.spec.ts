/**
 * The one filter control (console/src/FilterBar.tsx) on each list page, in a real browser against
 * a real `npm start`: on Runs (searched by an event id's first characters too), Deliveries, Audit
 * and API clients a filter narrows the list to the rows it names and leaves the others out, its value is in the address, and "Clear" brings them back.
 */
import { expect, test, type APIRequestContext, type Page } from '@playwright/test';
import { hmacEvent } from '../../test/helpers/signing';
import { BOOTSTRAP } from '../playwright.config';
import { assertAccessible, bearer, createAutomation, signIn } from './session';

test.describe.configure({ mode: 'serial' });

/** A signed delivery (with `secret`, forged when it is not the automation's); resolves with its answer. */
async function deliver(
  request: APIRequestContext,
  flow: { url: string },
  secret: string,
): Promise<{ status: number; executionId?: string }> {
  const event = hmacEvent(secret, { name: 'filters' });
  const res = await request.post(new URL(flow.url).pathname, { headers: event.headers, data: event.body });
  return { status: res.status(), executionId: ((await res.json()) as { executionId?: string }).executionId };
}

function runRow(page: Page, executionId: string) {
  return page.getByRole('row').filter({ has: page.getByRole('link', { name: `Run ${executionId.split(':').pop()}` }) });
}

test('a filter on Runs, Deliveries, Audit and API clients narrows the list, and Clear undoes it', async ({
  page,
  request,
}) => {
  const quick = await createAutomation(request, 'Filters quick flow', [{ id: 'only', log: { message: "'x'" } }]);
  const waiting = await createAutomation(request, 'Filters waiting flow', [{ id: 'wait', waitForApproval: {} }]);
  const done = await deliver(request, quick, quick.secret);
  const open = await deliver(request, waiting, waiting.secret);
  expect([done.status, open.status]).toEqual([200, 200]);
  expect((await deliver(request, quick, 'not-the-secret')).status).toBe(401);
  const headers = await bearer(request);
  for (const displayName of ['filters robot alpha', 'filters robot beta'])
    expect(
      (await request.post('/api/v1/iam/clients', { headers, data: { displayName, roles: ['read_only'] } })).status(),
    ).toBe(200);
  await signIn(page);

  // Runs: by automation, then by status.
  await page.goto('/console/runs');
  const filters = page.getByRole('form', { name: 'Filter runs' });
  await expect(runRow(page, done.executionId!)).toBeVisible();
  await expect(runRow(page, open.executionId!)).toBeVisible();
  await filters.getByLabel('Automation').selectOption({ label: 'Filters waiting flow' });
  await expect(runRow(page, done.executionId!)).toHaveCount(0);
  await expect(runRow(page, open.executionId!)).toContainText('RUNNING');
  await expect(page).toHaveURL(new RegExp(`automation=${waiting.id}`));
  await filters.getByLabel('Status').selectOption('COMPLETED');
  await expect(runRow(page, open.executionId!)).toHaveCount(0);
  await assertAccessible(page, 'runs filtered');
  await filters.getByRole('button', { name: 'Clear' }).click();
  await expect(runRow(page, done.executionId!)).toBeVisible();
  await expect(runRow(page, open.executionId!)).toBeVisible();
  // Searched by the first characters of an event id, in capitals.
  await filters.getByLabel('Event or run id').fill(open.executionId!.split(':').pop()!.slice(0, 10).toUpperCase());
  await filters.getByRole('button', { name: 'Filter' }).click();
  await expect(runRow(page, done.executionId!)).toHaveCount(0);
  await expect(runRow(page, open.executionId!)).toBeVisible();
  await expect(page).toHaveURL(/q=/);
  await filters.getByRole('button', { name: 'Clear' }).click();
  await expect(runRow(page, done.executionId!)).toBeVisible();

  // Deliveries: by reason.
  await page.goto(`/console/deliveries?automation=${quick.id}`);
  await expect(page.getByRole('row', { name: /signature_mismatch/ })).toHaveCount(1);
  await expect(page.getByRole('row', { name: /accepted/ })).toHaveCount(1);
  await page.getByRole('form', { name: 'Filter deliveries' }).getByLabel('Reason').selectOption('signature_mismatch');
  await expect(page.getByRole('row', { name: /accepted/ })).toHaveCount(0);
  await expect(page.getByRole('row', { name: /signature_mismatch/ })).toHaveCount(1);
  await expect(page).toHaveURL(new RegExp(`automation=${quick.id}.*reason=signature_mismatch`));

  // Audit: typed text applies on Filter.
  await page.goto('/console/audit');
  const audit = page.getByRole('form', { name: 'Filter the audit trail' });
  await expect(page.getByRole('row', { name: /automation\.create/ }).first()).toBeVisible();
  await audit.getByLabel('Action').fill('api_client.create');
  await audit.getByRole('button', { name: 'Filter' }).click();
  await expect(page).toHaveURL(/action=api_client\.create/);
  await expect(page.getByRole('row', { name: /automation\.create/ })).toHaveCount(0);
  await expect(page.getByRole('row', { name: /api_client\.create/ }).first()).toBeVisible();
  await audit.getByRole('button', { name: 'Clear' }).click();
  await expect(page.getByRole('row', { name: /automation\.create/ }).first()).toBeVisible();
  await expect(audit.getByLabel('Action')).toHaveValue('');

  // API clients: by name, then by role.
  await page.goto('/console/clients');
  const clients = page.getByRole('form', { name: 'Filter API clients' });
  await expect(page.getByRole('row', { name: /filters robot beta/ })).toBeVisible();
  await clients.getByLabel('Name or client ID').fill('ALPHA');
  await clients.getByLabel('Name or client ID').press('Enter');
  await expect(page.getByRole('row', { name: /filters robot alpha/ })).toBeVisible();
  await expect(page.getByRole('row', { name: /filters robot beta/ })).toHaveCount(0);
  await clients.getByLabel('Name or client ID').fill('');
  await clients.getByRole('button', { name: 'Filter' }).click();
  await clients.getByLabel('Access').selectOption('super_admin');
  await expect(page.getByRole('row', { name: /filters robot/ })).toHaveCount(0);
  await expect(page.getByRole('row', { name: new RegExp(BOOTSTRAP.clientId) })).toBeVisible();
  await expect(page).toHaveURL(/role=super_admin/);
  await assertAccessible(page, 'API clients filtered');
});
