/**
 * Outbound calls are safe to retry and verifiable, end to end: the real HTTP app and store, the real
 * Temporal dev server, a real worker, a real local receiver that verifies with the `standardwebhooks`
 * npm package (a receiver's own code). Every attempt of a step in a run carries one key
 * (`Idempotency-Key` = `webhook-id`); another run, and a rerun, carry other keys; a retry from the
 * failed step carries the original's; signed calls verify over the exact bytes received, a changed
 * body does not; during a rotation's grace period both signatures are sent; the signing secret's
 * value is nowhere but in the signature.
 */
import { randomBytes } from 'node:crypto';
import request from 'supertest';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import { deliver, hmacEvent, listenerPath, startStack, type AutomationView, type Stack } from '../helpers/stack';
import { expectRunFailure, historyText as historyTextOf } from '../helpers/temporal';
import { poll } from '../helpers/wait';
import { startReceiver, type Receiver, type ReceivedRequest } from '../helpers/receiver';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const whsec = (): string => `whsec_${randomBytes(24).toString('base64')}`;

describe('outbound calls: one key per call, Standard Webhooks signatures', () => {
  let stack: Stack;
  let receiver: Receiver;
  let origin: string;
  let received: ReceivedRequest[];
  /** `/flaky`: the first attempt of each key gets 500. `/gate`: answers `gateStatus`. */
  const seenKeys = new Set<string>();
  let gateStatus = 400;

  beforeAll(async () => {
    receiver = await startReceiver(({ path, headers }) => {
      if (path.startsWith('/flaky')) {
        const key = headers['idempotency-key'] ?? '';
        const status = seenKeys.has(key) ? 200 : 500;
        seenKeys.add(key);
        return { status };
      }
      return { status: path.startsWith('/gate') ? gateStatus : 200 };
    });
    ({ origin, received } = receiver);
    stack = await startStack();
  });
  afterAll(async () => {
    await stack?.close();
    await receiver?.close();
  });

  const api = () => request(stack.service.server);
  const auth = (req: request.Test) => req.set('Authorization', `Bearer ${stack.adminToken}`);
  const at = (path: string): ReceivedRequest[] => received.filter((r) => r.path.startsWith(path));

  async function run(automation: AutomationView, secret: string, payload: unknown): Promise<string> {
    const res = await deliver(stack, listenerPath(automation), hmacEvent(secret, payload));
    expect(res.status).toBe(200);
    return res.body.executionId as string;
  }

  async function execution(
    id: string,
  ): Promise<{ status: string; steps: Array<{ id: string; status: string; idempotencyKey?: string }> }> {
    const res = await auth(api().get(`/api/v1/automation_executions/${encodeURIComponent(id)}`));
    expect(res.status).toBe(200);
    return res.body.execution;
  }

  const historyText = (executionId: string): Promise<string> => historyTextOf(stack.client, executionId);

  const hook = (path: string, extra: Record<string, unknown> = {}) => ({
    url: `'${origin}${path}?who=' + ctx.trigger.who`,
    body: { who: 'ctx.trigger.who', note: "'café ☕'" },
    ...extra,
  });

  it('a 500 then a 200: both attempts carry one key and verify with standardwebhooks; a changed body does not; another run and a rerun get other keys', async () => {
    const secret = whsec();
    await auth(api().post('/api/v1/secrets'))
      .send({ name: 'hook_signing', value: secret, allowedOrigins: [origin] })
      .expect(200);
    const { automation, signingSecret } = await stack.createAutomation({
      displayName: 'signed flaky',
      trigger: { incomingWebhook: { authMethod: 'HMAC' } },
      steps: [
        {
          id: 'notify',
          retry: { maximumAttempts: 3, initialInterval: '0.1s' },
          callWebhook: hook('/flaky', { signature: { secret: 'hook_signing' } }),
        },
      ],
    });

    const run1 = await run(automation, signingSecret!, { who: 'ada' });
    await stack.client.workflow.getHandle(run1).result();
    const pair = at('/flaky?who=ada');
    expect(pair).toHaveLength(2);
    const key = pair[0]!.headers['idempotency-key']!;
    expect(key).toMatch(UUID);
    const receiverSide = new Webhook(secret);
    for (const attempt of pair) {
      expect(attempt.headers['idempotency-key']).toBe(key);
      expect(attempt.headers['webhook-id']).toBe(key);
      expect(attempt.headers['webhook-timestamp']).toMatch(/^\d{10}$/);
      expect(attempt.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
      // The receiver verifies the exact bytes it received (UTF-8 body, as sent).
      expect(receiverSide.verify(attempt.body.toString('utf8'), attempt.headers)).toEqual({
        who: 'ada',
        note: 'café ☕',
      });
      // One byte changed, or another secret: no match.
      const changed = attempt.body.toString('utf8').replace('ada', 'adb');
      expect(() => receiverSide.verify(changed, attempt.headers)).toThrow(WebhookVerificationError);
      expect(() => new Webhook(whsec()).verify(attempt.body.toString('utf8'), attempt.headers)).toThrow(
        WebhookVerificationError,
      );
    }
    // The executions view shows the key the receiver logged.
    expect((await execution(run1)).steps[0]).toMatchObject({ id: 'notify', status: 'DONE', idempotencyKey: key });

    // Another run of the same automation: another key.
    const run2 = await run(automation, signingSecret!, { who: 'bob' });
    await stack.client.workflow.getHandle(run2).result();
    const other = at('/flaky?who=bob');
    expect(other).toHaveLength(2);
    expect(other[0]!.headers['idempotency-key']).toBe(other[1]!.headers['idempotency-key']);
    expect(other[0]!.headers['idempotency-key']).not.toBe(key);

    // A rerun is a new run: a new key.
    const rerun = await auth(api().post(`/api/v1/automation_executions/${encodeURIComponent(run1)}/rerun`)).send({});
    expect(rerun.status).toBe(200);
    await stack.client.workflow.getHandle(rerun.body.execution.id).result();
    const again = at('/flaky?who=ada');
    expect(again).toHaveLength(4);
    const rerunKey = again[2]!.headers['idempotency-key'];
    expect(rerunKey).toMatch(UUID);
    expect(rerunKey).not.toBe(key);
    expect(again[3]!.headers['idempotency-key']).toBe(rerunKey);
    expect((await execution(rerun.body.execution.id)).steps[0]?.idempotencyKey).toBe(rerunKey);

    // The signing secret's value is in no history, execution view or output.
    for (const id of [run1, run2, rerun.body.execution.id]) {
      expect(await historyText(id)).not.toContain(secret.slice('whsec_'.length));
      expect(JSON.stringify(await execution(id))).not.toContain(secret.slice('whsec_'.length));
    }

    // The dry run shows placeholders, never a key or a signature.
    const dry = await auth(api().post(`/api/v1/automations/${automation.id}/test`)).send({ payload: { who: 'ada' } });
    expect(dry.status).toBe(200);
    expect(dry.body.steps[0].output.headers).toEqual({
      'Idempotency-Key': '[per run]',
      'webhook-id': '[per run]',
      'webhook-timestamp': '[at send]',
      'webhook-signature': '[signed with hook_signing]',
    });
  });

  it('an unsigned call carries the key too; a retry from the failed step carries the original run’s key, a rerun a new one', async () => {
    const { automation, signingSecret } = await stack.createAutomation({
      displayName: 'gate',
      trigger: { incomingWebhook: { authMethod: 'HMAC' } },
      steps: [
        { id: 'first', callWebhook: hook('/first') },
        { id: 'gate', retry: { maximumAttempts: 1 }, callWebhook: hook('/gate') },
      ],
    });
    gateStatus = 400;
    const original = await run(automation, signingSecret!, { who: 'eve' });
    await expectRunFailure(stack.client.workflow.getHandle(original));
    const failed = at('/gate?who=eve');
    expect(failed).toHaveLength(1);
    const key = failed[0]!.headers['idempotency-key']!;
    expect(key).toMatch(UUID);
    expect(failed[0]!.headers['webhook-id']).toBe(key);
    expect(failed[0]!.headers['webhook-signature']).toBeUndefined();
    expect((await execution(original)).steps.map((s) => [s.id, s.status, s.idempotencyKey])).toEqual([
      ['first', 'DONE', at('/first?who=eve')[0]!.headers['idempotency-key']],
      ['gate', 'FAILED', key],
    ]);

    // The failed call may have reached its target: the retry repeats it with the same key.
    gateStatus = 200;
    const retry = await auth(api().post(`/api/v1/automation_executions/${encodeURIComponent(original)}/rerun`)).send({
      fromFailedStep: true,
    });
    expect(retry.status).toBe(200);
    await stack.client.workflow.getHandle(retry.body.execution.id).result();
    expect(at('/first?who=eve')).toHaveLength(1); // reused, not called again
    expect(at('/gate?who=eve').map((r) => r.headers['idempotency-key'])).toEqual([key, key]);
    const retried = await poll(
      () => execution(retry.body.execution.id),
      (e) => e.status === 'COMPLETED',
    );
    expect(retried.steps[1]).toMatchObject({ id: 'gate', status: 'DONE', idempotencyKey: key });

    // A rerun of the original is a new run: new keys.
    const rerun = await auth(api().post(`/api/v1/automation_executions/${encodeURIComponent(original)}/rerun`)).send(
      {},
    );
    expect(rerun.status).toBe(200);
    await stack.client.workflow.getHandle(rerun.body.execution.id).result();
    const third = at('/gate?who=eve')[2]!.headers['idempotency-key'];
    expect(third).toMatch(UUID);
    expect(third).not.toBe(key);
  });

  it('rotation: during the grace period both signatures are sent (old and new secrets verify), "0s" drops the old one; raw values sign as their bytes', async () => {
    const first = whsec();
    const second = whsec();
    const third = `plain-${randomBytes(12).toString('hex')}`;
    await auth(api().post('/api/v1/secrets'))
      .send({ name: 'rotating', value: first, allowedOrigins: [origin] })
      .expect(200);
    const { automation, signingSecret } = await stack.createAutomation({
      displayName: 'rotating',
      trigger: { incomingWebhook: { authMethod: 'HMAC' } },
      steps: [{ id: 'notify', callWebhook: hook('/rotating', { signature: { secret: 'rotating' } }) }],
    });
    const call = async (who: string): Promise<ReceivedRequest> => {
      await stack.client.workflow.getHandle(await run(automation, signingSecret!, { who })).result();
      return at(`/rotating?who=${who}`)[0]!;
    };
    const verifies = (value: string, got: ReceivedRequest, raw = false): boolean => {
      try {
        new Webhook(value, raw ? { format: 'raw' } : undefined).verify(got.body.toString('utf8'), got.headers);
        return true;
      } catch (err) {
        if (err instanceof WebhookVerificationError) return false;
        throw err;
      }
    };

    const before = await call('one');
    expect(before.headers['webhook-signature']!.split(' ')).toHaveLength(1);
    expect(verifies(first, before)).toBe(true);

    const rotated = await auth(api().put('/api/v1/secrets/rotating')).send({ value: second });
    expect(rotated.status).toBe(200);
    expect(rotated.body).toEqual({
      secret: expect.objectContaining({ name: 'rotating' }),
      previousValueExpiresAt: expect.any(String),
    });
    const graceMs = Date.parse(rotated.body.previousValueExpiresAt) - Date.now();
    expect(graceMs).toBeGreaterThan(23 * 3600_000);
    expect(graceMs).toBeLessThanOrEqual(24 * 3600_000);
    const during = await call('two');
    expect(during.headers['webhook-signature']!.split(' ')).toHaveLength(2);
    expect([verifies(second, during), verifies(first, during)]).toEqual([true, true]);

    const revoked = await auth(api().put('/api/v1/secrets/rotating')).send({ value: third, gracePeriod: '0s' });
    expect(revoked.status).toBe(200);
    expect(revoked.body.previousValueExpiresAt).toBeNull();
    const after = await call('three');
    expect(after.headers['webhook-signature']!.split(' ')).toHaveLength(1);
    expect([verifies(third, after, true), verifies(second, after)]).toEqual([true, false]);

    for (const [gracePeriod, status] of [
      ['604801s', 400],
      ['1d', 400],
      [86400, 400],
      ['604800s', 200],
    ] as const) {
      const res = await auth(api().put('/api/v1/secrets/rotating')).send({ value: third, gracePeriod });
      expect([gracePeriod, res.status]).toEqual([gracePeriod, status]);
      if (status === 400) expect(JSON.stringify(res.body.details)).toContain('gracePeriod');
    }
  });

  it('refuses on save: a signing secret that does not exist, a malformed signature, a step setting the service’s headers, a whsec_ value that is not base64', async () => {
    const save = (callWebhook: Record<string, unknown>) =>
      auth(api().post('/api/v1/automations')).send({
        displayName: 'bad',
        trigger: { incomingWebhook: { authMethod: 'HMAC' } },
        steps: [{ id: 'h', callWebhook }],
      });
    const violation = async (callWebhook: Record<string, unknown>, field: string, text: string): Promise<void> => {
      const res = await save(callWebhook);
      expect(res.status).toBe(400);
      expect(res.body.details).toEqual(
        expect.arrayContaining([
          expect.objectContaining({
            fieldViolations: expect.arrayContaining([
              expect.objectContaining({ field, description: expect.stringContaining(text) }),
            ]),
          }),
        ]),
      );
    };
    await violation(
      hook('/x', { signature: { secret: 'no_such_secret' } }),
      'steps[0].callWebhook.signature.secret',
      'secret "no_such_secret" does not exist',
    );
    await violation(
      hook('/x', { signature: { secret: 'Bad-Name' } }),
      'steps[0].callWebhook.signature.secret',
      'must name a secret',
    );
    await violation(
      hook('/x', { signature: 'hook_signing' }),
      'steps[0].callWebhook.signature',
      '{"secret": "<name>"}',
    );
    await violation(
      hook('/x', { signature: { secret: 'hook_signing', algorithm: 'md5' } }),
      'steps[0].callWebhook.signature',
      '{"secret": "<name>"}',
    );
    for (const header of ['Idempotency-Key', 'webhook-id', 'Webhook-Timestamp', 'webhook-signature']) {
      await violation(
        hook('/x', { headers: { [header]: "'mine'" } }),
        `steps[0].callWebhook.headers.${header}`,
        'the service sets this header itself',
      );
    }
    for (const value of ['whsec_', 'whsec_not base64!', 'whsec_abc']) {
      const res = await auth(api().post('/api/v1/secrets')).send({
        name: 'bad_whsec',
        value,
        allowedOrigins: [origin],
      });
      expect([value, res.status]).toEqual([value, 400]);
      expect(JSON.stringify(res.body)).toContain('whsec_ value must be base64');
    }
  });
});
