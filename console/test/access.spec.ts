/**
 * Access and Tasks in a real browser against a real `npm start`, by role and accessible name as
 * the contract names them: a user's grants with "Grant access", "Extend" and "Revoke" (each asked
 * in a dialog with "Confirm"), a grant's provisioning timeline, the Tasks page with an open
 * provisioning task completed with the keyboard alone, and a failed deprovision retried; axe on
 * every page (no serious or critical violation).
 */
import { expect, test, type APIRequestContext, type Page } from '@playwright/test';
import { assertAccessible, bearer, signIn } from './session';

test.describe.configure({ mode: 'serial' });

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

/** What the setup made through the API: the user, the app and its three entitlements. */
const made: { userId?: string; userName?: string; appId?: string } = {};
const WIKI = 'Wiki editor';
const BADGE = 'Building badge';
const LEDGER = 'Ledger (ticketed removal)';

async function apiPost(request: APIRequestContext, path: string, data: unknown): Promise<Json> {
  const res = await request.post(path, { headers: await bearer(request), data });
  expect(res.status(), `${path}: ${await res.text()}`).toBe(200);
  return res.json();
}

async function apiGet(request: APIRequestContext, path: string): Promise<Json> {
  const res = await request.get(path, { headers: await bearer(request) });
  expect(res.status()).toBe(200);
  return res.json();
}

async function openAccessOf(page: Page): Promise<void> {
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Access', exact: true }).click();
  await expect(page.getByRole('heading', { level: 1, name: 'Access' })).toBeVisible();
  await page.getByLabel('User').selectOption(made.userId!);
  await expect(page.getByRole('heading', { level: 2, name: `Grants of ${made.userName}` })).toBeVisible();
}

test('setup: a user and three entitlements (unconfigured, manual, a connector deprovisioner)', async ({ request }) => {
  made.userName = `Ada ${Date.now()}`;
  made.userId = (
    await apiPost(request, '/api/v1/users', {
      displayName: made.userName,
      email: `ada-${Date.now()}@acme.example`,
      type: 'USER_TYPE_HUMAN',
    })
  ).user.id;
  made.appId = (await apiPost(request, '/api/v1/apps', { displayName: 'Intranet' })).app.id;
  await apiPost(request, `/api/v1/apps/${made.appId}/entitlements`, { displayName: WIKI, durationGrant: '2592000s' });
  await apiPost(request, `/api/v1/apps/${made.appId}/entitlements`, {
    displayName: BADGE,
    provisionerPolicy: { manual: { instructions: 'Print the badge and hand it over' } },
  });
  await apiPost(request, `/api/v1/apps/${made.appId}/entitlements`, {
    displayName: LEDGER,
    deprovisionerPolicy: { externalTicket: { instructions: 'close the account' } },
  });
});

test('Access: Grant access, then Extend and Revoke in dialogs with Confirm; the grant page shows its timeline', async ({
  page,
  request,
}) => {
  await signIn(page);
  await openAccessOf(page);
  await expect(page.getByText('No grants.')).toBeVisible();
  await assertAccessible(page, 'Access (a user)');

  const form = page.getByRole('form', { name: 'Grant access' });
  await form.getByLabel('Entitlement').selectOption({ label: WIKI });
  await form.getByLabel('Duration').selectOption({ label: '1 day' });
  await form.getByLabel('Justification').fill('new editor');
  await form.getByRole('button', { name: 'Grant access' }).click();
  const row = page.getByRole('row', { name: new RegExp(WIKI) });
  await expect(row.getByText('GRANTED')).toBeVisible();

  const grants = (await apiGet(request, `/api/v1/grants?userId=${made.userId}`)).list;
  expect(grants).toHaveLength(1);
  const before = grants[0].grant;
  expect(before).toMatchObject({ state: 'GRANTED', justification: 'new editor' });

  await row.getByRole('button', { name: 'Extend' }).click();
  const extend = page.getByRole('dialog', { name: `Extend ${WIKI}?` });
  await extend.getByLabel('Ends in').selectOption({ label: '7 days' });
  await assertAccessible(page, 'Access: the Extend dialog');
  await extend.getByRole('button', { name: 'Confirm' }).click();
  await expect(extend).toBeHidden();
  const extended = (await apiGet(request, `/api/v1/grants/${before.id}`)).grant;
  expect(Date.parse(extended.expiresAt) - Date.parse(before.expiresAt)).toBeGreaterThan(5 * 86_400_000);

  await row.getByRole('link', { name: WIKI }).click();
  await expect(page.getByRole('heading', { level: 1, name: `${WIKI} for ${made.userName}` })).toBeVisible();
  const timeline = page.getByRole('list', { name: 'Provisioning timeline' });
  await expect(timeline.getByText('provision')).toBeVisible();
  await expect(timeline.getByText('DONE')).toBeVisible();
  await assertAccessible(page, 'Access: a grant');

  await page.getByRole('button', { name: 'Revoke' }).click();
  const revoke = page.getByRole('dialog', { name: `Revoke ${WIKI}?` });
  await revoke.getByLabel('Reason').fill('left the team');
  await revoke.getByRole('button', { name: 'Confirm' }).click();
  await expect(page.getByText('REVOKED', { exact: true })).toBeVisible();
  const revoked = (await apiGet(request, `/api/v1/grants/${before.id}`)).grant;
  expect(revoked).toMatchObject({ state: 'REVOKED', revokeReason: 'left the team' });
});

test('Tasks: an open provisioning task, completed with the keyboard alone; the grant is then GRANTED', async ({
  page,
  request,
}) => {
  await signIn(page);
  await openAccessOf(page);
  const form = page.getByRole('form', { name: 'Grant access' });
  await form.getByLabel('Entitlement').selectOption({ label: BADGE });
  await form.getByRole('button', { name: 'Grant access' }).click();
  await expect(page.getByRole('row', { name: new RegExp(BADGE) }).getByText('PROVISIONING')).toBeVisible();

  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Tasks', exact: true }).click();
  await expect(page.getByRole('heading', { level: 1, name: 'Tasks' })).toBeVisible();
  const card = page.getByRole('region', { name: /^Provision task/ });
  await expect(card.getByText('Print the badge and hand it over')).toBeVisible();
  await assertAccessible(page, 'Tasks');

  // Keyboard only: Tab to the card's Complete, Enter opens the dialog, Tab to Confirm, Enter.
  const complete = card.getByRole('button', { name: 'Complete' });
  for (let i = 0; i < 40 && !(await complete.evaluate((el) => el === document.activeElement)); i++) {
    await page.keyboard.press('Tab');
  }
  await expect(complete).toBeFocused();
  await page.keyboard.press('Enter');
  const dialog = page.getByRole('dialog', { name: 'Complete this task?' });
  await expect(dialog).toBeVisible();
  await page.keyboard.type('handed over');
  const confirm = dialog.getByRole('button', { name: 'Confirm' });
  for (let i = 0; i < 5 && !(await confirm.evaluate((el) => el === document.activeElement)); i++) {
    await page.keyboard.press('Tab');
  }
  await expect(confirm).toBeFocused();
  await page.keyboard.press('Enter');
  await expect(page.getByText('No open tasks.')).toBeVisible();

  const grants = (await apiGet(request, `/api/v1/grants?userId=${made.userId}&state=GRANTED`)).list;
  expect(grants.map((g: Json) => g.grant.provisioning[0].policy)).toEqual(['manual']);
  const tasks = (await apiGet(request, `/api/v1/provisioning_tasks?grantId=${grants[0].grant.id}`)).list;
  expect(tasks[0].provisioningTask).toMatchObject({ state: 'DONE', comment: 'handed over' });
});

test('Tasks: a failed deprovision is listed with Retry, which makes a new attempt', async ({ page, request }) => {
  const ledger = (await apiGet(request, `/api/v1/apps/${made.appId}/entitlements?page_size=100`)).list.find(
    (e: Json) => e.appEntitlement.displayName === LEDGER,
  ).appEntitlement;
  const grant = (
    await apiPost(request, '/api/v1/grants', { userId: made.userId, appId: made.appId, appEntitlementId: ledger.id })
  ).grant;
  await apiPost(request, `/api/v1/grants/${grant.id}/revoke`, { reason: 'leaver' });
  const attempts = async () =>
    ((await apiGet(request, `/api/v1/grants/${grant.id}`)).grant.provisioning as Json[]).find(
      (e) => e.phase === 'deprovision' && e.state === 'FAILED',
    )?.attempts ?? 0;
  await expect.poll(attempts).toBe(1);

  await signIn(page);
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Tasks', exact: true }).click();
  const card = page.getByRole('region', { name: new RegExp(`^Grant ${grant.id.slice(0, 8)}`) });
  await expect(card.getByText('provisioning by externalTicket needs a connector')).toBeVisible();
  await card.getByRole('button', { name: 'Retry' }).click();
  await page.getByRole('dialog', { name: 'Retry the deprovision?' }).getByRole('button', { name: 'Confirm' }).click();
  await expect.poll(attempts).toBe(2);
  await assertAccessible(page, 'Tasks: a failed deprovision');
});
