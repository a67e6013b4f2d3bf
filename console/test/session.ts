/**
 * What every console spec does the same way: sign in with the bootstrap client, axe on the page as
 * drawn, and the screenshots of docs/console.md#tests (with CONSOLE_SCREENSHOTS=<dir>: `npm run docs:console`).
 */
import AxeBuilder from '@axe-core/playwright';
import { expect, type Locator, type Page } from '@playwright/test';
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
