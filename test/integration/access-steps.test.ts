/**
 * The steps that change access, end to end: real runs on the Temporal dev server and a real worker,
 * the real store (PGlite, and PostgreSQL with DATABASE_URL), a real provisioning receiver.
 * `grantEntitlements` grants each entitlement once per run, step and entitlement (a repeated
 * activity call finds its grant), keeps a user's live grant (`created: false`), waits for
 * provisioning by default (the step is WAITING until the receiver's callback), fails after trying
 * all when one cannot be granted, naming it; `revokeEntitlements` takes back a list (reporting the
 * ones not held) or all of a user's access (of one app), idempotently. The joiner
 * (docs/access.md#joiner), mover and leaver run as written. Save-time rules name the field.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { deliver, hmacEvent, listenerPath, startStack, type AutomationView, type Stack } from '../helpers/stack';
import { expectRunFailure } from '../helpers/temporal';
import { callerFor, createEntitlement, createGovernanceApp, violatedFields, type Caller } from '../helpers/governance';
import { startReceiver, type Receiver } from '../helpers/receiver';
import { poll, until } from '../helpers/wait';
import { createAccessActivities, stepGrantId } from '../../activities/access';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;
type Ref = { appId: string; entitlementId: string };

describe('grantEntitlements and revokeEntitlements in real runs', () => {
  let stack: Stack;
  let admin: Caller;
  let superAdmin: Caller;
  let anonymous: Caller;
  let receiver: Receiver;
  /** Paths the receiver answers otherwise than 202 (then a callback). */
  const refusing = new Map<string, () => { status: number }>();
  beforeAll(async () => {
    receiver = await startReceiver((r) => refusing.get(r.path)?.() ?? { status: 202 });
    stack = await startStack();
    admin = callerFor(stack.service, stack.adminToken);
    superAdmin = callerFor(stack.service, await stack.service.tokenFor('super_admin'));
    anonymous = callerFor(stack.service, undefined);
  });
  afterAll(async () => {
    await stack?.close();
    await receiver?.close();
  });

  const unique = () => randomBytes(4).toString('hex');
  async function entitlement(fields: Record<string, unknown> = {}): Promise<Ref> {
    const app = await createGovernanceApp(admin);
    const made = await createEntitlement(admin, app.id, { displayName: `e ${unique()}`, ...fields });
    return { appId: app.id, entitlementId: made.id };
  }
  async function user(): Promise<string> {
    const res = await admin.post('/api/v1/users', {
      displayName: 'Joiner',
      email: `joiner.${unique()}@acme.example`,
      type: 'USER_TYPE_HUMAN',
    });
    expect(res.status).toBe(200);
    return res.body.user.id;
  }
  const countOf = async (e: Ref): Promise<string> =>
    (await admin.get(`/api/v1/apps/${e.appId}/entitlements/${e.entitlementId}`)).body.appEntitlement.grantCount;
  const grantsOf = async (userId: string): Promise<Json[]> =>
    (await admin.get(`/api/v1/grants?userId=${userId}&page_size=100`)).body.list.map((item: Json) => item.grant);

  /** An automation whose one step is `step` (its id `access`), fields from the event. */
  const automation = (step: Record<string, unknown>) =>
    stack.createAutomation({
      displayName: `access ${unique()}`,
      trigger: { incomingWebhook: { authMethod: 'HMAC' } },
      steps: [{ id: 'access', ...step }],
    });
  const grantStep = (extra: Record<string, unknown> = {}) =>
    automation({
      grantEntitlements: {
        userId: 'ctx.trigger.userId',
        entitlements: 'ctx.trigger.entitlements',
        justification: "'joiner: ' + ctx.trigger.department",
        ...extra,
      },
    });
  async function run(created: { automation: AutomationView; signingSecret?: string }, payload: unknown) {
    const res = await deliver(stack, listenerPath(created.automation), hmacEvent(created.signingSecret!, payload));
    expect(res.status).toBe(200);
    return res.body.executionId as string;
  }
  const execution = async (executionId: string): Promise<Json> =>
    (await admin.get(`/api/v1/automation_executions/${encodeURIComponent(executionId)}`)).body.execution;
  async function stepOf(executionId: string): Promise<Json> {
    await stack.client.workflow.getHandle(executionId).result();
    return (await execution(executionId)).steps[0];
  }

  it('grants each entitlement once with the duration and justification; a user keeps a live grant; grantCount counts', async () => {
    const [a, b] = [await entitlement(), await entitlement()];
    const userId = await user();
    const created = await grantStep({ duration: '3600s' });
    const payload = { userId, entitlements: [a, b], department: 'finance' };
    const first = await stepOf(await run(created, payload));
    expect(first.status).toBe('DONE');
    expect(first.output.grants).toEqual([
      expect.objectContaining({ ...a, state: 'GRANTED', created: true, grantId: expect.any(String) }),
      expect.objectContaining({ ...b, state: 'GRANTED', created: true, grantId: expect.any(String) }),
    ]);
    const held = await grantsOf(userId);
    expect(held).toHaveLength(2);
    // Each grant lasts the step's duration from the moment it was granted; the output says when it ends.
    for (const grant of held) {
      expect(Date.parse(grant.expiresAt) - Date.parse(grant.grantedAt)).toBe(3600_000);
      expect(first.output.grants.find((g: Json) => g.grantId === grant.id).expiresAt).toBe(grant.expiresAt);
    }
    expect(held[0]).toMatchObject({
      justification: 'joiner: finance',
      requestedBy: expect.stringMatching(/^automation:/),
    });
    expect([await countOf(a), await countOf(b)]).toEqual(['1', '1']);

    // Another run for the same user: the live grants are kept, not doubled.
    const again = await stepOf(await run(created, payload));
    expect(again.output.grants.map((g: Json) => [g.grantId, g.created])).toEqual(
      first.output.grants.map((g: Json) => [g.grantId, false]),
    );
    expect(await grantsOf(userId)).toHaveLength(2);
    expect(await countOf(a)).toBe('1');
  });

  it('a repeated activity call (a retry, a lost answer) finds the grant it made: one grant per run, step and entitlement', async () => {
    const e = await entitlement();
    const userId = await user();
    const activities = createAccessActivities({ db: stack.service.deps.db, engine: stack.service.deps.engine! });
    const scope = { workflowId: `wf-${unique()}`, runId: '0190a0b0-c0d0-7e00-8000-000000000000' };
    const call = () =>
      activities.grantEntitlements({
        stepId: 'access',
        actor: 'automation:test:1',
        keysOf: scope,
        expressions: { userId: 'ctx.trigger.userId', entitlements: 'ctx.trigger.entitlements' },
        ctx: { trigger: { userId, entitlements: [e] }, steps: {} },
      } as Json);
    const [one, two] = await Promise.all([call(), call()]);
    const three = await call();
    const id = stepGrantId(scope, 'access', e);
    for (const answer of [one, two, three]) expect(answer.grants[0]).toMatchObject({ grantId: id, created: true });
    expect(await grantsOf(userId)).toHaveLength(1);
    // Another step of the same run is another grant id (it would be another grant, were the first not live).
    expect(stepGrantId(scope, 'other', e)).not.toBe(id);
  });

  it('waits for provisioning: WAITING until the receiver calls back, then DONE with the grant GRANTED', async () => {
    const hook = await superAdmin.post('/api/v1/provisioning_webhooks', {
      displayName: 'later',
      url: `${receiver.origin}/later-${unique()}`,
    });
    expect(hook.status).toBe(200);
    const path = new URL(hook.body.provisioningWebhook.url).pathname;
    const e = await entitlement({ provisionerPolicy: { webhook: { webhookId: hook.body.provisioningWebhook.id } } });
    const executionId = await run(await grantStep(), { userId: await user(), entitlements: [e], department: 'ops' });
    const calls = () => receiver.received.filter((r) => r.path === path);
    await until(() => calls().length >= 1, 'the receiver to be called', { timeoutMs: 90_000 });
    const waiting = await poll(
      () => execution(executionId),
      (x) => x.steps[0]?.status === 'WAITING',
      { what: 'the step WAITING' },
    );
    expect(waiting.status).toBe('RUNNING');
    const callback = new URL(JSON.parse(calls()[0]!.body.toString()).callbackUrl as string);
    expect((await anonymous.post(callback.pathname, { status: 'done' })).status).toBe(200);
    const step = await stepOf(executionId);
    expect(step).toMatchObject({ status: 'DONE', output: { grants: [expect.objectContaining({ state: 'GRANTED' })] } });
    expect(await countOf(e)).toBe('1');
  });

  it('without waiting, reports PROVISIONING and goes on', async () => {
    const hook = await superAdmin.post('/api/v1/provisioning_webhooks', {
      displayName: 'later',
      url: `${receiver.origin}/nowait-${unique()}`,
    });
    const e = await entitlement({ provisionerPolicy: { webhook: { webhookId: hook.body.provisioningWebhook.id } } });
    const step = await stepOf(
      await run(await grantStep({ waitForProvisioning: false }), {
        userId: await user(),
        entitlements: [e],
        department: 'ops',
      }),
    );
    expect(step).toMatchObject({
      status: 'DONE',
      output: { grants: [expect.objectContaining({ state: 'PROVISIONING' })] },
    });
  });

  it('fails after trying all when one cannot be granted, naming it; the others are granted; an unknown user grants nothing', async () => {
    const good = await entitlement();
    const missing = { appId: good.appId, entitlementId: 'no-such-entitlement' };
    const userId = await user();
    const created = await grantStep();
    const failure = await expectRunFailure(
      stack.client.workflow.getHandle(await run(created, { userId, entitlements: [missing, good], department: 'x' })),
    );
    expect(failure.message).toContain('grantEntitlements: 1 of 2 grants failed');
    expect(failure.message).toContain('no-such-entitlement');
    expect((await grantsOf(userId)).map((g) => g.appEntitlementId)).toEqual([good.entitlementId]);

    const nobody = await expectRunFailure(
      stack.client.workflow.getHandle(
        await run(created, { userId: 'no-such-user', entitlements: [good], department: 'x' }),
      ),
    );
    expect(nobody.message).toContain('grantEntitlements.userId: user no-such-user not found');
    expect(await countOf(good)).toBe('1');

    const shape = await expectRunFailure(
      stack.client.workflow.getHandle(await run(created, { userId, entitlements: 'admin', department: 'x' })),
    );
    expect(shape.message).toContain('grantEntitlements.entitlements');
  });

  it('revokes a list (reporting what the user did not hold), then all of one app, then all; a repeat changes nothing', async () => {
    const app = await createGovernanceApp(admin);
    const e1 = { appId: app.id, entitlementId: (await createEntitlement(admin, app.id, { displayName: 'one' })).id };
    const e2 = { appId: app.id, entitlementId: (await createEntitlement(admin, app.id, { displayName: 'two' })).id };
    const e3 = await entitlement();
    const userId = await user();
    await stepOf(await run(await grantStep(), { userId, entitlements: [e1, e3], department: 'x' }));

    const listed = await automation({
      revokeEntitlements: { userId: 'ctx.trigger.userId', entitlements: 'ctx.trigger.entitlements', reason: "'mover'" },
    });
    const byList = await stepOf(await run(listed, { userId, entitlements: [e1, e2] }));
    expect(byList.status).toBe('DONE');
    expect(byList.output).toEqual({
      revoked: [expect.objectContaining({ ...e1, state: 'REVOKED', grantId: expect.any(String) })],
      notGranted: [e2],
    });
    const revoked = (await grantsOf(userId)).find((g) => g.appEntitlementId === e1.entitlementId);
    expect(revoked).toMatchObject({ state: 'REVOKED', revokeReason: 'mover' });
    expect(await countOf(e1)).toBe('0');
    expect(await countOf(e3)).toBe('1');

    const leaver = await automation({
      revokeEntitlements: { userId: 'ctx.trigger.userId', all: true, reason: "'leaver'" },
    });
    const all = await stepOf(await run(leaver, { userId }));
    expect(all.output).toEqual({
      revoked: [expect.objectContaining({ ...e3, state: 'REVOKED' })],
      notGranted: [],
    });
    expect(await countOf(e3)).toBe('0');
    const nothing = await stepOf(await run(leaver, { userId }));
    expect(nothing.output).toEqual({ revoked: [], notGranted: [] });
    expect((await grantsOf(userId)).every((g) => g.state === 'REVOKED')).toBe(true);
  });

  it('revoke all of one app leaves the other apps', async () => {
    const [a, b] = [await entitlement(), await entitlement()];
    const userId = await user();
    await stepOf(await run(await grantStep(), { userId, entitlements: [a, b], department: 'x' }));
    const oneApp = await automation({
      revokeEntitlements: { userId: 'ctx.trigger.userId', all: true, appId: 'ctx.trigger.appId', reason: "'moved'" },
    });
    const step = await stepOf(await run(oneApp, { userId, appId: a.appId }));
    expect(step.output.revoked).toEqual([expect.objectContaining({ ...a, state: 'REVOKED' })]);
    expect([await countOf(a), await countOf(b)]).toEqual(['0', '1']);
  });

  it('the joiner, mover and leaver of docs/access.md, saved and run as written', async () => {
    const doc = readFileSync(path.join(__dirname, '../../docs/access.md'), 'utf8');
    const example = (name: string): Record<string, unknown> => {
      const found = new RegExp(`<!-- example: ${name} -->\\s*\`\`\`json\\n([\\s\\S]*?)\`\`\``).exec(doc);
      expect(found).not.toBeNull();
      return JSON.parse(found![1]!);
    };
    const [a, b, c] = [await entitlement(), await entitlement(), await entitlement()];
    const email = `joiner.${unique()}@acme.example`;
    const joiner = await stack.createAutomation(example('joiner'));
    const joined = await stepOf(await run(joiner, { email, name: 'Grace Hopper', entitlements: [a, b] }));
    expect(joined).toMatchObject({ status: 'DONE', output: { created: true } });
    const [made] = await stack.service.deps.db.query<{ id: string }>('SELECT id FROM users WHERE email = $1', [email]);
    const userId = made!.id;
    const held = () =>
      grantsOf(userId).then((gs) =>
        gs
          .filter((g) => g.state === 'GRANTED')
          .map((g) => g.appEntitlementId)
          .sort(),
      );
    expect(await held()).toEqual([a.entitlementId, b.entitlementId].sort());
    expect((await grantsOf(userId))[0].justification).toBe(`joiner: ${email}`);

    const mover = await stack.createAutomation(example('mover'));
    await stepOf(await run(mover, { userId, oldAppId: a.appId, entitlements: [c] }));
    expect(await held()).toEqual([b.entitlementId, c.entitlementId].sort());

    expect(
      (
        await superAdmin.post('/api/v1/secrets', {
          name: 'it_channel',
          value: `${receiver.origin}/it-channel`,
          allowedOrigins: [receiver.origin],
        })
      ).status,
    ).toBe(200);
    const leaver = await stack.createAutomation(example('leaver'));
    await stepOf(await run(leaver, { userId }));
    expect(await held()).toEqual([]);
    const told = receiver.received.filter((r) => r.path === '/it-channel');
    expect(told.map((r) => JSON.parse(r.body.toString()))).toEqual([{ text: `Leaver ${userId}: 2 grants revoked` }]);
    expect((await grantsOf(userId)).map((g) => [g.state, g.revokeReason]).sort()).toEqual(
      [
        ['REVOKED', 'leaver'],
        ['REVOKED', 'leaver'],
        ['REVOKED', 'moved department'],
      ].sort(),
    );
  });

  it('a failed deprovision keeps the revoke step waiting; revoking the grant again retries it and the step goes on', async () => {
    let refuse = true;
    const path = `/unprovision-${unique()}`;
    refusing.set(path, () => ({ status: refuse ? 400 : 200 }));
    const hook = await superAdmin.post('/api/v1/provisioning_webhooks', {
      displayName: 'unprovision',
      url: `${receiver.origin}${path}`,
    });
    const e = await entitlement({ deprovisionerPolicy: { webhook: { webhookId: hook.body.provisioningWebhook.id } } });
    const userId = await user();
    await stepOf(await run(await grantStep(), { userId, entitlements: [e], department: 'x' }));
    const leaver = await automation({
      revokeEntitlements: { userId: 'ctx.trigger.userId', all: true, reason: "'leaver'" },
    });
    const executionId = await run(leaver, { userId });
    const [grant] = await grantsOf(userId);
    const stuck = await poll(
      async () => (await admin.get(`/api/v1/grants/${grant.id}`)).body.grant,
      (g) => g.provisioning.some((x: Json) => x.phase === 'deprovision' && x.state === 'FAILED'),
      { what: 'the deprovision FAILED' },
    );
    expect(stuck).toMatchObject({ state: 'DEPROVISIONING', revokeReason: 'leaver' });
    const waiting = await poll(
      () => execution(executionId),
      (x) => x.steps[0]?.status === 'WAITING',
      { what: 'the step WAITING' },
    );
    expect(waiting.status).toBe('RUNNING');
    expect(await countOf(e)).toBe('1');
    refuse = false;
    expect((await admin.post(`/api/v1/grants/${grant.id}/revoke`, { reason: 'again' })).status).toBe(200);
    const step = await stepOf(executionId);
    expect(step).toMatchObject({
      status: 'DONE',
      output: { revoked: [expect.objectContaining({ grantId: grant.id, state: 'REVOKED' })] },
    });
    expect(await countOf(e)).toBe('0');
  });

  it('refuses on save a revoke with both or neither of entitlements and all, and a grant without entitlements', async () => {
    const save = (step: Record<string, unknown>) =>
      admin.post('/api/v1/automations', {
        displayName: 'bad access',
        trigger: { incomingWebhook: { authMethod: 'HMAC' } },
        steps: [{ id: 'access', ...step }],
      });
    const both = await save({
      revokeEntitlements: { userId: 'ctx.trigger.u', entitlements: 'ctx.trigger.e', all: true, reason: "'x'" },
    });
    expect(both.status).toBe(400);
    expect(JSON.stringify(both.body)).toContain('exactly one of entitlements and all');
    const neither = await save({ revokeEntitlements: { userId: 'ctx.trigger.u', reason: "'x'" } });
    expect(neither.status).toBe(400);
    expect(JSON.stringify(neither.body)).toContain('exactly one of entitlements and all');
    const noReason = await save({ revokeEntitlements: { userId: 'ctx.trigger.u', all: true } });
    expect(violatedFields(noReason.body)).toContain('steps[0].revokeEntitlements.reason');
    const noList = await save({ grantEntitlements: { userId: 'ctx.trigger.u' } });
    expect(violatedFields(noList.body)).toContain('steps[0].grantEntitlements.entitlements');
    const tooLong = await save({
      grantEntitlements: { userId: 'ctx.trigger.u', entitlements: 'ctx.trigger.e', duration: '999999999s' },
    });
    expect(violatedFields(tooLong.body)).toContain('steps[0].grantEntitlements.duration');
  });
});
