/**
 * Every page fits the window at a phone's 390 × 844 and a desktop's 1280 × 800: no page scrolls
 * sideways (the document is no wider than the window), with content on it (runs, deliveries, audit
 * records, a run page with its payload and outputs), and axe finds no serious or critical violation.
 */
import { expect, test, type APIRequestContext, type Page } from '@playwright/test';
import { hmacEvent } from '../../test/helpers/signing';
import { BOOTSTRAP } from '../playwright.config';
import { assertAccessible, signIn } from './session';

test.describe.configure({ mode: 'serial' });

async function bearer(request: APIRequestContext): Promise<Record<string, string>> {
  const res = await request.post('/auth/v1/token', {
    form: { grant_type: 'client_credentials', client_id: BOOTSTRAP.clientId, client_secret: BOOTSTRAP.clientSecret },
  });
  expect(res.status()).toBe(200);
  return { Authorization: `Bearer ${((await res.json()) as { access_token: string }).access_token}` };
}

const SIZES = [
  { width: 390, height: 844 },
  { width: 1280, height: 800 },
];
const NAV = ['Automations', 'Runs', 'Approvals', 'Access', 'Tasks', 'Deliveries', 'Secrets', 'API clients', 'Audit'];

/** How much wider than the window the page is (0: it fits). */
async function overflow(page: Page): Promise<number> {
  return page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
}

test('no page is wider than the window at 390 and 1280 px', async ({ page, request }) => {
  const headers = await bearer(request);
  const created = await request.post('/api/v1/automations', {
    headers,
    data: {
      displayName: 'Layout flow with a rather long display name for a narrow phone screen',
      trigger: { incomingWebhook: { authMethod: 'HMAC' } },
      steps: [
        {
          id: 'note',
          setVariables: { who: "'a-very-long-identifier-' + ctx.trigger.user + '-without-any-space-at-all'" },
        },
        { id: 'approve_the_access_of_this_person', waitForApproval: {} },
      ],
    },
  });
  expect(created.status()).toBe(200);
  const flow = (await created.json()) as {
    automation: { id: string; trigger: { incomingWebhook: { url: string } } };
    signingSecret: string;
  };
  expect((await request.post(`/api/v1/automations/${flow.automation.id}/publish`, { headers })).status()).toBe(200);
  const path = new URL(flow.automation.trigger.incomingWebhook.url).pathname;
  const event = hmacEvent(flow.signingSecret, { user: 'u'.repeat(80) });
  const sent = await request.post(path, { headers: event.headers, data: event.body });
  expect(sent.status()).toBe(200);
  const runId = ((await sent.json()) as { executionId: string }).executionId;
  const forged = hmacEvent('not-the-secret', { user: 'x' });
  expect((await request.post(path, { headers: forged.headers, data: forged.body })).status()).toBe(401);

  await signIn(page);
  const wide: string[] = [];
  for (const size of SIZES) {
    await page.setViewportSize(size);
    const pages = [
      ...NAV.map((name) => ({ name, open: () => page.getByRole('link', { name, exact: true }).click() })),
      { name: 'Deliveries of the flow', open: () => page.goto(`/console/deliveries?automation=${flow.automation.id}`) },
      { name: 'Run', open: () => page.goto(`/console/runs/${encodeURIComponent(runId)}`) },
      { name: 'Automation', open: () => page.goto(`/console/automations/${encodeURIComponent(flow.automation.id)}`) },
    ];
    for (const { name, open } of pages) {
      if (NAV.includes(name)) await page.goto('/console/');
      await open();
      await expect(page.getByRole('heading', { level: 1 })).toBeVisible();
      if (name === 'Runs' || name === 'Run')
        await expect(page.getByText('approve_the_access_of_this_person').first()).toBeVisible();
      if (name === 'Deliveries of the flow')
        await expect(page.getByRole('cell', { name: 'signature_mismatch' }).first()).toBeVisible();
      const extra = await overflow(page);
      if (extra > 0) wide.push(`${name} at ${size.width} px: ${extra} px too wide`);
      await assertAccessible(page, `${name} at ${size.width} px`);
    }
  }
  expect(wide).toEqual([]);
});
