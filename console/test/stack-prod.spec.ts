/**
 * The console in the browser through the whole production shape, signed in through the real
 * OpenID provider. Started once for this file (every port free, nothing on 8080 or 8233):
 *   - a PostgreSQL server of its own (initdb in a temporary folder, test/drills/postgres.ts), on
 *     which `startProdStack()` of scripts/stack-prod.ts makes the databases and roles as
 *     `npm run stack:prod` does, then the Temporal cluster (four processes, mutual TLS), its Web
 *     UI server, two APIs, two workers and nginx as the single entry;
 *   - a TLS terminator in front of nginx (test/helpers/tls-terminator.ts), whose https address is
 *     the stack's BASE_URL, as when a load balancer ends TLS: the console's cookies are `__Host-`,
 *     `Secure`;
 *   - the test OpenID provider (console/test/oidc-provider.ts) with the https callback as its
 *     redirect URI; the stack hands OIDC_* to both APIs (PASSED_THROUGH).
 * In the browser: a person of no mapped group is refused; a person of the approvers' group signs
 * in with SSO while only API 1 runs, then works on while only API 2 runs (the session is in
 * PostgreSQL); a signed webhook through nginx starts a run that appears on the Runs page without a
 * reload; its page shows the timeline and links to the run in the stack's Web UI; the person
 * approves it from the Approvals page, a worker of the stack completes it on the cluster, and the
 * audit (page and API) names `person:<issuer>#<subject>`. axe on every page visited.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { expect, test, type APIRequestContext, type Page } from '@playwright/test';
import { freeLowPort, startProdStack, type ProdStack } from '../../scripts/stack-prod';
import { OwnPostgres } from '../../test/drills/postgres';
import { hmacEvent } from '../../test/helpers/signing';
import { startTlsTerminator, type TlsTerminator } from '../../test/helpers/tls-terminator';
import { until } from '../../test/helpers/wait';
import { BOOTSTRAP } from '../playwright.config';
import { APPROVERS_GROUP, OIDC_CLIENT, OIDC_PEOPLE } from './oidc-people';
import { assertAccessible, signIn as signInLocally } from './session';

const ROOT = path.resolve(__dirname, '../..');
const AUTOMATION = 'Behind the production shape';

test.describe.configure({ mode: 'serial' });
// The terminator's certificate is self-signed: the browser and the request fixture accept it (only it).
test.use({ ignoreHTTPSErrors: true });

let work: string | undefined;
let pg: OwnPostgres | undefined;
let stack: ProdStack | undefined;
let terminator: TlsTerminator | undefined;
let provider: { child: ChildProcess; exited: Promise<void> } | undefined;
let connection: Connection | undefined;
/** The https address people open (the terminator), and the provider's issuer. */
let entry: string;
let issuer: string;
const timings: Record<string, number> = {};
const specStarted = Date.now();

const person = (): string => `person:${issuer}#${OIDC_PEOPLE.approver.sub}`;

test.beforeAll(async () => {
  test.setTimeout(900_000);
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'console-stack-prod-'));
  const nginxPort = await freeLowPort();
  terminator = await startTlsTerminator(nginxPort, work);
  entry = terminator.url;

  // The provider first: the APIs read its discovery document when a person signs in.
  const providerPort = await freeLowPort();
  issuer = `http://127.0.0.1:${providerPort}`;
  const child = spawn(
    process.execPath,
    [
      'node_modules/tsx/dist/cli.mjs',
      'console/test/oidc-provider.ts',
      `${entry}/console/auth/callback`,
      String(providerPort),
    ],
    {
      cwd: ROOT,
      detached: true,
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  let tail = '';
  child.stderr!.on('data', (chunk: Buffer) => (tail = (tail + chunk.toString()).slice(-3000)));
  provider = { child, exited: new Promise((resolve) => child.once('exit', () => resolve())) };
  await until(
    async () => {
      if (child.exitCode !== null) throw new Error(`the OpenID provider exited (${child.exitCode}): ${tail}`);
      return (await fetch(`${issuer}/.well-known/openid-configuration`).catch(() => undefined))?.status === 200;
    },
    'the OpenID provider',
    { timeoutMs: 120_000, intervalMs: 250 },
  );

  pg = await OwnPostgres.create();
  const started = Date.now();
  // A failure names the process that exited or was not ready, with the end of its log.
  stack = await startProdStack({
    adminUrl: pg.adminUrl,
    stateDir: path.join(work, 'stack'),
    port: nginxPort,
    baseUrl: entry,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      BOOTSTRAP_CLIENT_ID: BOOTSTRAP.clientId,
      BOOTSTRAP_CLIENT_SECRET: BOOTSTRAP.clientSecret,
      LOG_LEVEL: 'warn',
      OIDC_ISSUER: issuer,
      OIDC_CLIENT_ID: OIDC_CLIENT.clientId,
      OIDC_CLIENT_SECRET: OIDC_CLIENT.clientSecret,
      OIDC_ALLOW_INSECURE: 'true',
      OIDC_ROLE_MAP: JSON.stringify({ [APPROVERS_GROUP]: 'admin' }),
      // The Audit page is super_admin's: the bootstrap client opens it with local sign-in.
      CONSOLE_LOCAL_SIGNIN: 'true',
    },
    log: (line) => console.log(`[stack] ${line}`),
  });
  timings.stackStartSeconds = Math.round((Date.now() - started) / 1000);
  connection = await Connection.connect(stack.temporalConnectionOptions('api'));
});

test.afterAll(async () => {
  timings.specSeconds = Math.round((Date.now() - specStarted) / 1000);
  console.log(`stack-prod.spec: ${JSON.stringify(timings)}`);
  await connection?.close().catch(() => undefined);
  await stack?.stop();
  await terminator?.close();
  if (provider?.child.pid && provider.child.exitCode === null) process.kill(-provider.child.pid, 'SIGTERM');
  await provider?.exited;
  pg?.destroy();
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

async function bearer(request: APIRequestContext): Promise<Record<string, string>> {
  const res = await request.post(`${entry}/auth/v1/token`, {
    form: { grant_type: 'client_credentials', client_id: BOOTSTRAP.clientId, client_secret: BOOTSTRAP.clientSecret },
  });
  expect(res.status()).toBe(200);
  return { Authorization: `Bearer ${((await res.json()) as { access_token: string }).access_token}` };
}

/** "Sign in with SSO" at the entry, through the provider's (development) login and consent pages. */
async function signInWithSso(page: Page, sub: string): Promise<void> {
  await page.goto(`${entry}/console`);
  await expect(page.getByRole('link', { name: 'Sign in with SSO' })).toBeVisible();
  await assertAccessible(page, 'sign-in behind the production shape');
  await page.getByRole('link', { name: 'Sign in with SSO' }).click();
  await expect(page).toHaveURL(new RegExp(`^${issuer}/`));
  await page.locator('input[name="login"]').fill(sub);
  await page.locator('input[name="password"]').fill('any password');
  await page.getByRole('button', { name: 'Sign-in' }).click();
  await page.getByRole('button', { name: 'Continue' }).click();
}

/** Stops one API process of the stack (a stop the supervisor does not undo) or starts it again. */
async function stopApi(name: 'api-1' | 'api-2'): Promise<void> {
  await stack!.processes.get(name)!.kill('SIGTERM');
  expect(stack!.processes.get(name)!.running).toBe(false);
}
async function startApi(name: 'api-1' | 'api-2'): Promise<void> {
  stack!.processes.get(name)!.start();
  await stack!.waitReady(name);
}

test('a person of no mapped group is refused: the page says why, no session, and the audit records it', async ({
  page,
  request,
}) => {
  await signInWithSso(page, OIDC_PEOPLE.outsider.sub);
  await expect(page.getByRole('heading', { level: 1, name: 'Sign-in refused' })).toBeVisible();
  const why = page.getByRole('alert');
  await expect(why).toContainText(OIDC_PEOPLE.outsider.name);
  await expect(why).toContainText('OIDC_ROLE_MAP');
  await assertAccessible(page, 'sign-in refused behind the production shape');
  expect((await page.context().cookies(entry)).map((c) => c.name)).toEqual([]);
  await page.getByRole('link', { name: 'Back to the console' }).click();
  await expect(page.getByRole('navigation', { name: 'Main' })).toHaveCount(0);

  const audit = await request.get(`${entry}/api/v1/audit?action=console.sign_in_denied`, {
    headers: await bearer(request),
  });
  expect(audit.status()).toBe(200);
  const actors = ((await audit.json()) as { list: Array<{ auditEvent: { actor: string } }> }).list.map(
    (r) => r.auditEvent.actor,
  );
  expect(actors).toEqual([`person:${issuer}#${OIDC_PEOPLE.outsider.sub}`]);
});

test('an approver signs in with SSO, sees a webhook run live, approves it on the cluster, and the audit names them', async ({
  page,
  request,
  browser,
}) => {
  test.setTimeout(600_000);
  const headers = await bearer(request);

  // Sign-in while API 2 is stopped: API 1 serves the SSO round trip and makes the session.
  await stopApi('api-2');
  await signInWithSso(page, OIDC_PEOPLE.approver.sub);
  await expect(page.getByText(OIDC_PEOPLE.approver.name, { exact: true })).toHaveAttribute('title', person());
  expect(new URL(page.url()).origin).toBe(entry);
  // The session cookie as the contract gives it on https, and nothing in the browser's storage.
  const cookies = (await page.context().cookies(entry)).map((c) => [c.name, c.secure, c.httpOnly]);
  expect(cookies).toEqual([['__Host-console_session', true, true]]);
  expect(await page.evaluate(() => [localStorage.length, sessionStorage.length])).toEqual([0, 0]);

  // From here on only API 2 runs: the session made by API 1 is read from PostgreSQL.
  await startApi('api-2');
  await stopApi('api-1');
  // nginx keeps an API that refused a connection out of its rotation for 10 s (max_fails 1,
  // fail_timeout 10s): API 2 refused some while it was stopped, so until then the entry answers
  // 503 with Retry-After, as a person reloading would see. The page is read once it serves again.
  await until(
    async () => (await request.get(`${entry}/console/`)).status() === 200,
    'the entry to serve through API 2',
    {
      timeoutMs: 60_000,
      intervalMs: 500,
    },
  );
  await page.reload();
  await expect(page.getByText(OIDC_PEOPLE.approver.name, { exact: true })).toHaveAttribute('title', person());

  // The Runs page is open when the webhook arrives; the run appears without a reload.
  const nav = page.getByRole('navigation', { name: 'Main' });
  await nav.getByRole('link', { name: 'Runs', exact: true }).click();
  await expect(page.getByRole('heading', { level: 1, name: 'Runs' })).toBeVisible();
  await page.evaluate(() => Object.assign(window, { sameDocument: true }));

  const created = await request.post(`${entry}/api/v1/automations`, {
    headers,
    data: {
      displayName: AUTOMATION,
      trigger: { incomingWebhook: { authMethod: 'HMAC' } },
      steps: [
        { id: 'greet', log: { message: "'hello ' + ctx.trigger.name" } },
        { id: 'approval', waitForApproval: {} },
      ],
    },
  });
  expect(created.status()).toBe(200);
  const { automation, signingSecret } = (await created.json()) as {
    automation: { id: string; trigger: { incomingWebhook: { url: string } } };
    signingSecret: string;
  };
  expect(automation.trigger.incomingWebhook.url.startsWith(`${entry}/`)).toBe(true);
  expect(
    (
      await request.post(`${entry}/api/v1/automations/${encodeURIComponent(automation.id)}/publish`, { headers })
    ).status(),
  ).toBe(200);
  const event = hmacEvent(signingSecret, { name: 'Ada' });
  const delivered = await request.post(automation.trigger.incomingWebhook.url, {
    headers: event.headers,
    data: event.body,
  });
  expect(delivered.status()).toBe(200);
  const executionId = ((await delivered.json()) as { executionId: string }).executionId;
  const short = executionId.split(':').pop()!;

  const row = page.getByRole('row').filter({ has: page.getByRole('link', { name: `Run ${short}` }) });
  await expect(row).toContainText('waiting for approval (approval)');
  expect(await page.evaluate(() => (window as unknown as { sameDocument?: boolean }).sameDocument)).toBe(true);
  await assertAccessible(page, 'runs behind the production shape');

  // The run's page: the timeline, and "Open in Temporal" at this run in the stack's Web UI.
  await row.getByRole('link', { name: `Run ${short}` }).click();
  const steps = page.getByRole('list', { name: 'Steps' });
  await expect(steps.getByRole('listitem').filter({ hasText: 'greet' })).toContainText('DONE');
  await expect(steps.getByRole('listitem').filter({ hasText: 'waitForApproval' })).toContainText(
    'WAITING_FOR_APPROVAL',
  );
  const inTemporal = `${stack!.uiUrl}/namespaces/default/workflows/${encodeURIComponent(executionId)}`;
  await expect(page.getByRole('link', { name: 'Open in Temporal' })).toHaveAttribute('href', inTemporal);
  expect((await fetch(inTemporal)).status).toBe(200);
  await assertAccessible(page, 'run behind the production shape');

  // Approve from the inbox: an unsafe request with the CSRF token and Origin, through the proxy.
  await nav.getByRole('link', { name: 'Approvals', exact: true }).click();
  const card = page.getByRole('region', { name: `${AUTOMATION}, run ${short}` });
  await card.getByLabel('Comment').fill('approved behind the production shape');
  await assertAccessible(page, 'approvals behind the production shape');
  await card.getByRole('button', { name: 'Approve' }).click();
  await expect(card).toHaveCount(0);

  // Completed on the cluster, by the stack's workers, and read there by its Web UI server.
  const run = `${entry}/api/v1/automation_executions/${encodeURIComponent(executionId)}`;
  await expect
    .poll(
      async () =>
        ((await (await request.get(run, { headers })).json()) as { execution: { status: string } }).execution.status,
    )
    .toBe('COMPLETED');
  const history = await connection!.workflowService.getWorkflowExecutionHistory({
    namespace: 'default',
    execution: { workflowId: executionId },
  });
  const events = history.history?.events ?? [];
  expect(events.at(-1)?.eventType).toBe(temporal.api.enums.v1.EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED);
  const workers = ['worker-1', 'worker-2'].map((name) => `${stack!.processes.get(name)!.pid}@`);
  const identities = events.flatMap((e) =>
    e.workflowTaskCompletedEventAttributes ? [e.workflowTaskCompletedEventAttributes.identity ?? ''] : [],
  );
  expect(identities.length).toBeGreaterThan(0);
  expect(identities.filter((identity) => !workers.some((w) => identity.startsWith(w)))).toEqual([]);
  const described = await fetch(
    `${stack!.uiUrl}/api/v1/namespaces/default/workflows/${encodeURIComponent(executionId)}`,
  );
  expect(described.status).toBe(200);
  expect(
    ((await described.json()) as { workflowExecutionInfo?: { status?: string } }).workflowExecutionInfo?.status,
  ).toBe('WORKFLOW_EXECUTION_STATUS_COMPLETED');

  // The run's page follows it to the end; the decision is the person's.
  // A whole load of the page (not only the console's API calls) is served by API 2 for the session too.
  await page.goto(`${entry}/console/runs/${encodeURIComponent(executionId)}`);
  const approval = page
    .getByRole('list', { name: 'Steps' })
    .getByRole('listitem')
    .filter({ hasText: 'waitForApproval' });
  await expect(approval).toContainText('DONE');
  await approval.getByText('Output of approval').click();
  await expect(approval).toContainText(`"by": "${person()}"`);

  // The audit names the person, not a client: through the API, and on the Audit page (super_admin's,
  // opened by the bootstrap client with local sign-in in a browser context of its own).
  const audit = await request.get(`${entry}/api/v1/audit?action=automation_execution.approve`, { headers });
  expect(audit.status()).toBe(200);
  const records = (
    (await audit.json()) as { list: Array<{ auditEvent: { actor: string; subject: string } }> }
  ).list.map((r) => r.auditEvent);
  expect(records.filter((r) => r.subject.includes(executionId)).map((r) => r.actor)).toEqual([person()]);

  const admin = await browser.newContext({ baseURL: entry, ignoreHTTPSErrors: true });
  try {
    const auditPage = await admin.newPage();
    await signInLocally(auditPage);
    await auditPage.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Audit', exact: true }).click();
    await auditPage.getByLabel('Action').fill('automation_execution.approve');
    await auditPage.getByRole('button', { name: 'Filter' }).click();
    const record = auditPage.getByRole('row').filter({ hasText: executionId });
    await expect(record).toContainText(person());
    await assertAccessible(auditPage, 'audit behind the production shape');
  } finally {
    await admin.close();
  }
});
