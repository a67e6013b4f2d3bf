/**
 * What a person signed in through OIDC does is theirs: an approval, a circuit breaker's resume and
 * cancel, and a bulk action are recorded as `person:<issuer>#<subject>` in the audit trail and on
 * the objects (the step's decision `by`, the bulk action's `by`), never as a client. Real OpenID
 * provider (oidc-provider, in this process), real Temporal and worker, the console's own API.
 */
import request from 'supertest';
import { startStack, type Stack } from '../helpers/stack';
import { runCalls } from '../helpers/run-calls';
import { ProviderAgent, startOidcProvider, type TestProvider } from '../fixtures/oidc-provider';
import { poll } from '../helpers/wait';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const BASE_URL = 'http://console.test';
const REDIRECT_URI = `${BASE_URL}/console/auth/callback`;

function cookieOf(res: request.Response, name: string): string {
  const lines = (res.headers['set-cookie'] as unknown as string[] | undefined) ?? [];
  const line = lines.find((l) => l.startsWith(`${name}=`) && !l.startsWith(`${name}=;`));
  if (!line) throw new Error(`no ${name} cookie in the answer (${res.status})`);
  return line.split(';')[0]!;
}

/** A person's console session: its cookie and CSRF token, and their unsafe calls through /console/api. */
interface Person {
  actor: string;
  post(path: string, body?: unknown): request.Test;
}

let provider: TestProvider;
let stack: Stack;
const calls = runCalls(() => stack, { displayName: 'attribution', steps: [] });
const HOLD = [{ id: 'hold', waitForApproval: { timeout: '86400s' } }];

async function signIn(sub: string): Promise<Person> {
  const login = await request(stack.service.server).get('/console/auth/login');
  expect(login.status).toBe(303);
  const callbackUrl = await new ProviderAgent().signIn(login.headers.location!, sub, REDIRECT_URI);
  const done = await request(stack.service.server)
    .get(`${callbackUrl.pathname}${callbackUrl.search}`)
    .set('Cookie', cookieOf(login, 'console_login'));
  expect(done.status).toBe(303);
  const session = cookieOf(done, 'console_session');
  const me = await request(stack.service.server).get('/console/auth/me').set('Cookie', session);
  expect(me.status).toBe(200);
  return {
    actor: me.body.person.id as string,
    post: (path, body = {}) =>
      request(stack.service.server)
        .post(`/console${path}`)
        .set('Cookie', session)
        .set('X-CSRF-Token', me.body.csrfToken as string)
        .set('Origin', BASE_URL)
        .send(body as object),
  };
}

/** The audit records of an action on a subject, by actor. */
async function auditActors(action: string, resourceId: string): Promise<string[]> {
  const rows = await stack.service.deps.db.query<{ actor: string }>(
    'SELECT actor FROM audit_events WHERE action = $1 AND resource_id = $2 ORDER BY at',
    [action, resourceId],
  );
  return rows.map((row) => row.actor);
}

let admin: Person;
let superAdmin: Person;

beforeAll(async () => {
  provider = await startOidcProvider(REDIRECT_URI);
  provider.accounts.set('approver', {
    sub: 'approver',
    name: 'Ada Approver',
    email: 'ada@example.com',
    groups: ['ops'],
  });
  provider.accounts.set('platform', {
    sub: 'platform',
    name: 'Pat Platform',
    email: 'pat@example.com',
    groups: ['root'],
  });
  stack = await startStack({
    env: {
      BASE_URL,
      OIDC_ISSUER: provider.issuer,
      OIDC_CLIENT_ID: provider.clientId,
      OIDC_CLIENT_SECRET: provider.clientSecret,
      OIDC_ALLOW_INSECURE: 'true',
      OIDC_ROLE_MAP: JSON.stringify({ ops: 'admin', root: 'super_admin' }),
    },
  });
  admin = await signIn('approver');
  superAdmin = await signIn('platform');
  expect(admin.actor).toBe(`person:${provider.issuer}#approver`);
  expect(superAdmin.actor).toBe(`person:${provider.issuer}#platform`);
});

afterAll(async () => {
  await stack?.close();
  await provider?.close();
});

it("an approval by a person is the person's: the step's decision and the audit record", async () => {
  const target = await calls.automation({}, HOLD);
  const run = await calls.accepted(target, { n: 1 });
  await calls.untilRun(run, calls.holding);
  const approved = await admin.post(`${calls.runPath(run)}/steps/hold/approve`, { comment: 'looks right' });
  expect(approved.status).toBe(200);
  const step = (approved.body.execution as Json).steps.find((s: Json) => s.id === 'hold');
  expect(step.output).toMatchObject({ decision: 'approved', by: admin.actor, comment: 'looks right' });
  expect(await auditActors('automation_execution.approve', run)).toEqual([admin.actor]);
  expect((approved.body.execution as Json).unaudited).toEqual([]);
});

it("a circuit breaker's resume and cancel by a person are the person's", async () => {
  const target = await calls.automation({}, HOLD);
  const set = await calls
    .api()
    .put(`/api/v1/automations/${target.id}/circuit-breaker`, { maxRuns: 1, period: '3600s' });
  expect(set.status).toBe(200);
  const first = await calls.accepted(target, { n: 1 });
  const paused = await calls.accepted(target, { n: 2 });
  await calls.untilRun(paused, (e) => e.status === 'PAUSED');
  const resumed = await admin.post(`/api/v1/automations/${target.id}/breaker/resume`, { reason: 'checked' });
  expect([resumed.status, resumed.body.resumed]).toEqual([200, 1]);
  expect(await auditActors('automation.breaker.resume', target.id)).toEqual([admin.actor]);

  const another = await calls.accepted(target, { n: 3 });
  const held = await calls.accepted(target, { n: 4 });
  await calls.untilRun(held, (e) => e.status === 'PAUSED');
  const canceled = await admin.post(`/api/v1/automations/${target.id}/breaker/cancel`, { reason: 'bad sync' });
  expect([canceled.status, canceled.body.canceled]).toEqual([200, 1]);
  expect(await auditActors('automation.breaker.cancel', target.id)).toEqual([admin.actor]);
  for (const id of [first, paused, another]) await stack.client.workflow.getHandle(id).cancel();
});

it("a bulk action by a person is the person's: its `by` and its audit record", async () => {
  const target = await calls.automation({}, HOLD);
  const runs = [await calls.accepted(target, { n: 1 }), await calls.accepted(target, { n: 2 })];
  for (const id of runs) await calls.untilRun(id, calls.holding);
  const acted = await superAdmin.post('/api/v1/automation_executions/bulk', {
    action: 'cancel',
    reason: 'by a person',
    filter: { automationId: target.id, status: ['RUNNING'] },
  });
  expect(acted.status).toBe(202);
  expect(acted.body.bulkAction.by).toBe(superAdmin.actor);
  const done = await poll(
    async () => (await calls.api().get(`/api/v1/bulk_actions/${acted.body.bulkAction.id}`)).body.bulkAction,
    (action: Json) => action.state === 'COMPLETED',
    { what: 'the bulk action to complete' },
  );
  expect(done).toMatchObject({ by: superAdmin.actor, matched: 2, succeeded: 2 });
  expect(await auditActors('bulk_action.create', acted.body.bulkAction.id)).toEqual([superAdmin.actor]);
});
