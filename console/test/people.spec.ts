/**
 * The console as people use it beyond one local sign-in: through the organisation's OpenID
 * provider (a real oidc-provider, started by playwright.config.ts) with "Sign in with SSO" — a
 * person in a mapped group works in the console as themselves, a person in no mapped group gets
 * the page saying why — and two people editing one automation at once, where the second Save is
 * refused (412, If-Match) and the page says what the first one changed.
 */
import { expect, test, type APIRequestContext, type Browser, type Page } from '@playwright/test';
import { BOOTSTRAP, OIDC_ISSUER } from '../playwright.config';
import { assertAccessible as expectAccessible, signIn as signInLocally } from './session';
import { OIDC_PEOPLE } from './oidc-people';

/** At the provider's (development) login and consent pages, as the person would. */
async function atProvider(page: Page, sub: string): Promise<void> {
  await expect(page).toHaveURL(new RegExp(`^${OIDC_ISSUER}/`));
  await page.locator('input[name="login"]').fill(sub);
  await page.locator('input[name="password"]').fill('any password');
  await page.getByRole('button', { name: 'Sign-in' }).click();
  await page.getByRole('button', { name: 'Continue' }).click();
}

async function signInWithSso(page: Page, sub: string): Promise<void> {
  await page.goto('/console');
  await page.getByRole('link', { name: 'Sign in with SSO' }).click();
  await atProvider(page, sub);
}

async function bearer(request: APIRequestContext): Promise<string> {
  const res = await request.post('/auth/v1/token', {
    form: { grant_type: 'client_credentials', client_id: BOOTSTRAP.clientId, client_secret: BOOTSTRAP.clientSecret },
  });
  expect(res.status()).toBe(200);
  return ((await res.json()) as { access_token: string }).access_token;
}

/** An automation made through the API with the bootstrap client; answers its id. */
async function createAutomation(request: APIRequestContext, displayName: string): Promise<string> {
  const created = await request.post('/api/v1/automations', {
    headers: { Authorization: `Bearer ${await bearer(request)}` },
    data: {
      displayName,
      trigger: { incomingWebhook: { authMethod: 'HMAC' } },
      steps: [{ id: 'hello', log: { message: "'hi'" } }],
    },
  });
  expect(created.status()).toBe(200);
  return ((await created.json()) as { automation: { id: string } }).automation.id;
}

test('Sign in with SSO: a person of a mapped group works in the console as themselves', async ({ page, request }) => {
  const id = await createAutomation(request, 'Read by an approver');
  await signInWithSso(page, OIDC_PEOPLE.approver.sub);
  const nav = page.getByRole('navigation', { name: 'Main' });
  await expect(nav).toBeVisible();
  await expect(page.getByText(OIDC_PEOPLE.approver.name, { exact: true })).toHaveAttribute(
    'title',
    `person:${OIDC_ISSUER}#${OIDC_PEOPLE.approver.sub}`,
  );
  // The approvers' group maps to admin, who reads automations (and their runs) through the session.
  await nav.getByRole('link', { name: 'Automations', exact: true }).click();
  await page.getByRole('link', { name: 'Read by an approver' }).click();
  await expect(page.getByRole('heading', { level: 1, name: 'Read by an approver' })).toBeVisible();
  expect(decodeURIComponent(new URL(page.url()).pathname)).toBe(`/console/automations/${id}`);
  await nav.getByRole('link', { name: 'Runs', exact: true }).click();
  await expect(page.getByRole('heading', { level: 1, name: 'Runs' })).toBeVisible();
  await expectAccessible(page, 'runs, signed in with SSO');
  // The provider's tokens stay in the server-side session.
  expect(await page.evaluate(() => [localStorage.length, sessionStorage.length])).toEqual([0, 0]);
  const ours = (await page.context().cookies()).filter((c) => c.domain === 'localhost');
  expect(ours.map((c) => [c.name, c.httpOnly])).toEqual([['console_session', true]]);

  await page.getByRole('button', { name: 'Sign out' }).click();
  await expect(page.getByRole('link', { name: 'Sign in with SSO' })).toBeVisible();
});

test('Sign in with SSO: a person of no mapped group gets the page saying why, and no session', async ({ page }) => {
  await signInWithSso(page, OIDC_PEOPLE.outsider.sub);
  await expect(page.getByRole('heading', { level: 1, name: 'Sign-in refused' })).toBeVisible();
  const why = page.getByRole('alert');
  await expect(why).toContainText(OIDC_PEOPLE.outsider.name);
  await expect(why).toContainText('none of their groups');
  await expect(why).toContainText('OIDC_ROLE_MAP');
  await expectAccessible(page, 'sign-in refused');
  await page.getByRole('link', { name: 'Back to the console' }).click();
  await expect(page.getByRole('link', { name: 'Sign in with SSO' })).toBeVisible();
  await expect(page.getByRole('navigation', { name: 'Main' })).toHaveCount(0);
});

async function openAutomation(browser: Browser, id: string): Promise<Page> {
  const page = await (await browser.newContext()).newPage();
  await signInLocally(page);
  await page.goto(`/console/automations/${encodeURIComponent(id)}`);
  await expect(page.getByLabel('Display name')).toHaveValue('Shared by two');
  return page;
}

test('two people edit one automation: the second Save gets 412 and the page shows what changed', async ({
  browser,
  request,
}) => {
  const id = await createAutomation(request, 'Shared by two');
  const first = await openAutomation(browser, id);
  const second = await openAutomation(browser, id);

  await first.getByLabel('Display name').fill('Renamed by the first');
  await first.getByRole('button', { name: 'Save' }).click();
  await expect(first.getByRole('status').filter({ hasText: 'Saved.' })).toBeVisible();

  await second.getByLabel('Description').fill('described by the second');
  await second.getByRole('button', { name: 'Save' }).click();
  const conflict = second.getByRole('alert').filter({ hasText: 'Someone else changed this automation' });
  await expect(conflict).toContainText('these changed: Display name.');
  await expect(second.getByRole('status').filter({ hasText: 'Saved.' })).toHaveCount(0);
  await expectAccessible(second, 'automation changed by someone else');
  // Nothing of the second's was written.
  const now = await request.get(`/api/v1/automations/${encodeURIComponent(id)}`, {
    headers: { Authorization: `Bearer ${await bearer(request)}` },
  });
  const stored = ((await now.json()) as { automation: { displayName: string; description?: string } }).automation;
  expect([stored.displayName, stored.description]).not.toContain('described by the second');
  expect(stored.displayName).toBe('Renamed by the first');

  // Keeping their own edits over the new version, the second person saves.
  await conflict.getByRole('button', { name: 'Keep my edits' }).click();
  await second.getByRole('button', { name: 'Save' }).click();
  await expect(second.getByRole('status').filter({ hasText: 'Saved.' })).toBeVisible();
  // …and now the first one is behind: Load their version shows the second's description.
  await first.getByLabel('Display name').fill('Renamed again');
  await first.getByRole('button', { name: 'Save' }).click();
  const back = first.getByRole('alert').filter({ hasText: 'Someone else changed this automation' });
  await expect(back).toContainText('Description');
  await back.getByRole('button', { name: 'Load their version' }).click();
  await expect(first.getByLabel('Description')).toHaveValue('described by the second');
  await expect(first.getByLabel('Display name')).toHaveValue('Shared by two');
});
