/**
 * What every console spec does the same way: sign in with the bootstrap client, axe on the page as
 * drawn, and the screenshots of docs/console.md#tests (with CONSOLE_SCREENSHOTS=<dir>: `npm run docs:console`).
 */
import AxeBuilder from '@axe-core/playwright';
import { expect, type APIRequestContext, type Locator, type Page } from '@playwright/test';
import { BOOTSTRAP } from '../playwright.config';

/** Local sign-in with the bootstrap client; done once the main navigation is drawn. */
export async function signIn(page: Page): Promise<void> {
  await page.goto('/console');
  await page.getByLabel('Client ID').fill(BOOTSTRAP.clientId);
  await page.getByLabel('Client secret').fill(BOOTSTRAP.clientSecret);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await expect(page.getByRole('navigation', { name: 'Main' })).toBeVisible();
}

/** axe on the page as it is drawn now: fails on any serious or critical violation; answers the whole result. */
export async function assertAccessible(
  page: Page,
  where: string,
): Promise<{ violations: number; serious: number; passes: number }> {
  const results = await new AxeBuilder({ page }).analyze();
  const bad = results.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
  expect(bad, `axe on ${where}`).toEqual([]);
  return { violations: results.violations.length, serious: bad.length, passes: results.passes.length };
}

/**
 * With CONSOLE_SCREENSHOTS=<dir>, writes <dir>/<name>.png: the whole page, or only `of` (a region)
 * where the whole page would mostly repeat another screenshot. A secret shown once (a signing or
 * client secret) is masked: the docs show where it appears, never a value.
 */
export async function screenshot(page: Page, name: string, of?: Locator): Promise<void> {
  const dir = process.env.CONSOLE_SCREENSHOTS;
  if (!dir) return;
  const options = { path: `${dir}/${name}.png`, mask: [page.locator('.secret-value')] };
  await (of ? of.screenshot(options) : page.screenshot({ ...options, fullPage: true }));
}

/** A bearer token of the bootstrap client, as the API's Authorization header. */
export async function bearer(request: APIRequestContext): Promise<Record<string, string>> {
  const res = await request.post('/auth/v1/token', {
    form: { grant_type: 'client_credentials', client_id: BOOTSTRAP.clientId, client_secret: BOOTSTRAP.clientSecret },
  });
  expect(res.status()).toBe(200);
  return { Authorization: `Bearer ${((await res.json()) as { access_token: string }).access_token}` };
}

/** A published HMAC webhook automation of `steps`: its id, signing secret and listener URL. */
export async function createAutomation(
  request: APIRequestContext,
  name: string,
  steps: unknown[],
): Promise<{ id: string; secret: string; url: string }> {
  const headers = await bearer(request);
  const created = await request.post('/api/v1/automations', {
    headers,
    data: { displayName: name, trigger: { incomingWebhook: { authMethod: 'HMAC' } }, steps },
  });
  expect(created.status()).toBe(200);
  const body = (await created.json()) as {
    automation: { id: string; trigger: { incomingWebhook: { url: string } } };
    signingSecret: string;
  };
  expect((await request.post(`/api/v1/automations/${body.automation.id}/publish`, { headers })).status()).toBe(200);
  return { id: body.automation.id, secret: body.signingSecret, url: body.automation.trigger.incomingWebhook.url };
}
