/**
 * The console behind the production shape's entry, in the browser, signed in through the real
 * OpenID provider. What runs, all started by this spec (on CONSOLE_TEST_PORT + 10 … + 15):
 *   - a TLS terminator (node:tls with a self-signed certificate for localhost) at the https
 *     address people open, passing the bytes on to
 *   - the stack's nginx, as `npm run stack:prod` renders and starts it (nginxSetup of
 *     scripts/stack-prod.ts: deploy/nginx/api.conf.template), in front of
 *   - a second `npm start` (scripts/start.js: its own embedded Temporal dev server and store) whose
 *     BASE_URL is that https address, with TRUST_PROXY=1 and OIDC against
 *   - the test OpenID provider (console/test/oidc-provider.ts), whose client's redirect URI is the
 *     https callback.
 * The rest of stack:prod (PostgreSQL, the Temporal cluster with mTLS, two APIs, a worker) is not
 * started: its nginx and the API's behaviour behind it are what the browser sees. A person of the
 * approvers' group signs in with SSO, approves a waiting run from the Approvals page, and the
 * audit names them `person:<issuer>#<subject>`.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { expect, test, type APIRequestContext } from '@playwright/test';
import { nginxSetup } from '../../scripts/stack-prod';
import { hmacEvent } from '../../test/helpers/signing';
import { until } from '../../test/helpers/wait';
import { BASE_URL, BOOTSTRAP } from '../playwright.config';
import { APPROVERS_GROUP, OIDC_CLIENT, OIDC_PEOPLE } from './oidc-people';
import { assertAccessible } from './session';

const ROOT = path.resolve(__dirname, '../..');
const FIRST = Number(new URL(BASE_URL).port) + 10;
const PORTS = { entry: FIRST, nginx: FIRST + 1, api: FIRST + 2, temporal: FIRST + 3, temporalUi: FIRST + 4, provider: FIRST + 5 };
/** The address people open: https, through the TLS terminator and nginx. */
const ENTRY = `https://localhost:${PORTS.entry}`;
const ISSUER = `http://127.0.0.1:${PORTS.provider}`;

test.describe.configure({ mode: 'serial' });
// The certificate is self-signed: the browser and the request fixture accept it (only it).
test.use({ baseURL: ENTRY, ignoreHTTPSErrors: true });

const started: Array<{ child: ChildProcess; exited: Promise<void> }> = [];
let terminator: tls.Server | undefined;
let work: string;
let nginxTemp: string | undefined;

/** Starts a process group of its own (stopped as a whole in afterAll); its stderr's end is kept for errors. */
function start(command: string, args: string[], env: NodeJS.ProcessEnv = process.env): { child: ChildProcess; tail: () => string } {
  const child = spawn(command, args, { cwd: ROOT, env, detached: true, stdio: ['ignore', 'ignore', 'pipe'] });
  let tail = '';
  child.stderr!.on('data', (chunk: Buffer) => (tail = (tail + chunk.toString()).slice(-3000)));
  started.push({ child, exited: new Promise((resolve) => child.once('exit', () => resolve())) });
  return { child, tail: () => tail };
}

async function answers(url: string, ok: (status: number) => boolean, what: string, proc: { child: ChildProcess; tail: () => string }): Promise<void> {
  await until(
    async () => {
      if (proc.child.exitCode !== null) throw new Error(`${what} exited (${proc.child.exitCode}): ${proc.tail()}`);
      const status = (await fetch(url).catch(() => undefined))?.status;
      return status !== undefined && ok(status);
    },
    what,
    { timeoutMs: 300_000, intervalMs: 500 },
  );
}

test.beforeAll(async () => {
  test.setTimeout(360_000);
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'console-prod-entry-'));

  // The provider first: the service reads its discovery document when a person signs in.
  const provider = start(process.execPath, [
    'node_modules/tsx/dist/cli.mjs',
    'console/test/oidc-provider.ts',
    `${ENTRY}/console/auth/callback`,
    String(PORTS.provider),
  ]);
  await answers(`${ISSUER}/.well-known/openid-configuration`, (s) => s === 200, 'the OpenID provider', provider);

  const api = start(process.execPath, ['scripts/start.js'], {
    ...process.env,
    PORT: String(PORTS.api),
    TEMPORAL_PORT: String(PORTS.temporal),
    TEMPORAL_UI_PORT: String(PORTS.temporalUi),
    DATA_DIR: path.join(work, 'data'),
    BASE_URL: ENTRY,
    TRUST_PROXY: '1',
    BOOTSTRAP_CLIENT_ID: BOOTSTRAP.clientId,
    BOOTSTRAP_CLIENT_SECRET: BOOTSTRAP.clientSecret,
    LOG_LEVEL: 'warn',
    OIDC_ISSUER: ISSUER,
    OIDC_CLIENT_ID: OIDC_CLIENT.clientId,
    OIDC_CLIENT_SECRET: OIDC_CLIENT.clientSecret,
    OIDC_ALLOW_INSECURE: 'true',
    OIDC_ROLE_MAP: JSON.stringify({ [APPROVERS_GROUP]: 'admin' }),
  });
  await answers(`http://127.0.0.1:${PORTS.api}/ready`, (s) => s === 200, 'npm start behind the entry', api);

  const setup = nginxSetup({ dir: path.join(work, 'nginx'), logDir: work, apiPorts: [PORTS.api], listen: `127.0.0.1:${PORTS.nginx}` });
  nginxTemp = setup.tempDir;
  const nginx = start(setup.bin, setup.args);
  await answers(`http://127.0.0.1:${PORTS.nginx}/health`, (s) => s === 200, 'nginx', nginx);

  // TLS ends here, in front of nginx, as a load balancer ends it in production.
  const made = spawnSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-days',
      '1',
      '-subj',
      '/CN=localhost',
      '-addext',
      'subjectAltName=DNS:localhost',
      '-keyout',
      path.join(work, 'tls.key'),
      '-out',
      path.join(work, 'tls.pem'),
    ],
    { encoding: 'utf8' },
  );
  if (made.status !== 0) throw new Error(`openssl could not make the test certificate: ${made.stderr}`);
  const server = tls.createServer({ key: fs.readFileSync(path.join(work, 'tls.key')), cert: fs.readFileSync(path.join(work, 'tls.pem')) }, (socket) => {
    const upstream = net.connect(PORTS.nginx, '127.0.0.1');
    socket.pipe(upstream).pipe(socket);
    socket.on('error', () => upstream.destroy());
    upstream.on('error', () => socket.destroy());
  });
  terminator = server;
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(PORTS.entry, '127.0.0.1', resolve));
});

test.afterAll(async () => {
  await new Promise<void>((resolve) => (terminator ? terminator.close(() => resolve()) : resolve()));
  for (const { child } of started.reverse()) if (child.exitCode === null && child.pid) process.kill(-child.pid, 'SIGTERM');
  await Promise.all(started.map(({ exited }) => exited));
  if (nginxTemp) fs.rmSync(nginxTemp, { recursive: true, force: true });
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

async function bearer(request: APIRequestContext): Promise<Record<string, string>> {
  const res = await request.post('/auth/v1/token', {
    form: { grant_type: 'client_credentials', client_id: BOOTSTRAP.clientId, client_secret: BOOTSTRAP.clientSecret },
  });
  expect(res.status()).toBe(200);
  return { Authorization: `Bearer ${((await res.json()) as { access_token: string }).access_token}` };
}

test('through nginx with TLS in front: a person signs in with SSO, approves a run, and the audit names them', async ({ page, request }) => {
  // An automation waiting for a person, and one signed delivery to its listener: all through the entry.
  const headers = await bearer(request);
  const created = await request.post('/api/v1/automations', {
    headers,
    data: { displayName: 'Behind the entry', trigger: { incomingWebhook: { authMethod: 'HMAC' } }, steps: [{ id: 'approval', waitForApproval: {} }] },
  });
  expect(created.status()).toBe(200);
  const { automation, signingSecret } = (await created.json()) as {
    automation: { id: string; trigger: { incomingWebhook: { url: string } } };
    signingSecret: string;
  };
  expect(automation.trigger.incomingWebhook.url.startsWith(`${ENTRY}/`)).toBe(true);
  expect((await request.post(`/api/v1/automations/${encodeURIComponent(automation.id)}/publish`, { headers })).status()).toBe(200);
  const event = hmacEvent(signingSecret, { name: 'Ann' });
  const delivered = await request.post(automation.trigger.incomingWebhook.url, { headers: event.headers, data: event.body });
  expect(delivered.status()).toBe(200);
  const executionId = ((await delivered.json()) as { executionId: string }).executionId;
  const run = `/api/v1/automation_executions/${encodeURIComponent(executionId)}`;
  const statusOf = async (): Promise<string> => ((await (await request.get(run, { headers })).json()) as { execution: { status: string } }).execution.status;
  await expect.poll(statusOf).toBe('RUNNING');

  // Sign in with SSO at the https address: the round trip goes through the provider and back to the entry.
  await page.goto('/console');
  await page.getByRole('link', { name: 'Sign in with SSO' }).click();
  await expect(page).toHaveURL(new RegExp(`^${ISSUER}/`));
  await page.locator('input[name="login"]').fill(OIDC_PEOPLE.approver.sub);
  await page.locator('input[name="password"]').fill('any password');
  await page.getByRole('button', { name: 'Sign-in' }).click();
  await page.getByRole('button', { name: 'Continue' }).click();
  const person = `person:${ISSUER}#${OIDC_PEOPLE.approver.sub}`;
  await expect(page.getByText(OIDC_PEOPLE.approver.name, { exact: true })).toHaveAttribute('title', person);
  expect(new URL(page.url()).origin).toBe(ENTRY);
  // The session cookie as the contract gives it on https, and nothing in the browser's storage.
  const cookies = (await page.context().cookies(ENTRY)).map((c) => [c.name, c.secure, c.httpOnly]);
  expect(cookies).toEqual([['__Host-console_session', true, true]]);
  expect(await page.evaluate(() => [localStorage.length, sessionStorage.length])).toEqual([0, 0]);

  // Approve from the inbox (an unsafe request: CSRF token and Origin through the proxy).
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Approvals', exact: true }).click();
  const card = page.getByRole('region', { name: `Behind the entry, run ${executionId.split(':').pop()}` });
  await card.getByLabel('Comment').fill('approved behind nginx');
  await assertAccessible(page, 'approvals behind the production entry');
  await card.getByRole('button', { name: 'Approve' }).click();
  await expect(card).toHaveCount(0);
  await expect.poll(statusOf).toBe('COMPLETED');

  // The audit names the person, not a client.
  const audit = await request.get(`/api/v1/audit?action=automation_execution.approve`, { headers });
  expect(audit.status()).toBe(200);
  const records = ((await audit.json()) as { list: Array<{ auditEvent: { actor: string; subject: string } }> }).list.map((r) => r.auditEvent);
  expect(records.filter((r) => r.subject.includes(executionId)).map((r) => r.actor)).toEqual([person]);
});
