/**
 * Zero-downtime rotation of an HMAC signing secret: during the grace period a delivery signed with
 * either secret is accepted, afterwards only the new one; "0s" revokes at once; a rotation during
 * a grace period drops the oldest secret; both are sealed at rest; the audit says who and how long.
 * Real HTTP, real store, real Temporal.
 */
import request from 'supertest';
import { listAuditEvents } from '../../src/store/audit';
import { startStack, hmacEvent, deliver, listenerPath, type Stack, type AutomationView } from '../helpers/stack';
import { sealContext } from '../../src/crypto/secret-box';
import { sleep } from '../helpers/wait';

const PAYLOAD = { employee_id: '1' };
const STEPS = [{ id: 'v', setVariables: { x: 'ctx.trigger.employee_id' } }];

describe('signing-secret rotation with a grace period', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(async () => stack?.close());

  const rotate = (id: string, body?: Record<string, unknown>) => {
    const req = request(stack.service.server)
      .post(`/api/v1/automations/${id}/trigger/rotate-secret`)
      .set('Authorization', `Bearer ${stack.adminToken}`);
    return body === undefined ? req : req.send(body);
  };
  const status = async (automation: AutomationView, secret: string): Promise<number> =>
    (await deliver(stack, listenerPath(automation), hmacEvent(secret, PAYLOAD))).status;

  async function hmacAutomation(): Promise<{ automation: AutomationView; secret: string }> {
    const created = await stack.createAutomation({
      displayName: 'rotation',
      trigger: { incomingWebhook: { authMethod: 'HMAC' } },
      steps: STEPS,
    });
    return { automation: created.automation, secret: created.signingSecret! };
  }

  it('by default keeps the old secret valid for 24 h next to the new one, and audits who and how long', async () => {
    const { automation, secret: first } = await hmacAutomation();
    const before = Date.now();
    const res = await rotate(automation.id);
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(['previousSecretExpiresAt', 'signingSecret']);
    const second: string = res.body.signingSecret;
    expect(second).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const expires = Date.parse(res.body.previousSecretExpiresAt);
    expect(expires).toBeGreaterThanOrEqual(before + 86_400_000);
    expect(expires).toBeLessThanOrEqual(Date.now() + 86_400_000);
    expect(res.body.previousSecretExpiresAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);

    expect(await status(automation, first)).toBe(200);
    expect(await status(automation, second)).toBe(200);
    expect(await status(automation, 'not-a-secret-of-this-listener')).toBe(401);

    // Both sealed at rest.
    const [row] = await stack.service.deps.db.query<{ signing_secret: string; previous_signing_secret: string }>(
      'SELECT signing_secret, previous_signing_secret FROM automations WHERE id = $1',
      [automation.id],
    );
    expect(row!.signing_secret.startsWith('v2.')).toBe(true);
    expect(row!.previous_signing_secret.startsWith('v2.')).toBe(true);
    expect(JSON.stringify(row)).not.toContain(first);
    expect(JSON.stringify(row)).not.toContain(second);
    expect(
      stack.service.deps.secretBox.open(
        row!.previous_signing_secret,
        sealContext('automation_signing_secret', automation.id),
      ),
    ).toBe(first);

    const audit = (await listAuditEvents(stack.service.deps.db, 'automation', automation.id)).filter(
      (e) => e.action === 'automation.rotate_secret',
    );
    expect(audit).toHaveLength(1);
    expect(audit[0]!.actor).toBe(`client:${(await stack.service.deps.tokens.verify(stack.adminToken))!.clientId}`);
    expect(audit[0]!.details).toEqual({
      gracePeriod: '86400s',
      previousSecretExpiresAt: res.body.previousSecretExpiresAt,
    });
    expect(JSON.stringify(audit)).not.toContain(second);
  });

  it('after the grace period only the new secret verifies', async () => {
    const { automation, secret: first } = await hmacAutomation();
    const res = await rotate(automation.id, { gracePeriod: '1.5s' });
    expect(res.status).toBe(200);
    const second: string = res.body.signingSecret;
    const expiresAt = Date.parse(res.body.previousSecretExpiresAt);
    // Wait for the expiry instant itself (a condition on the clock, not a guessed delay).
    while (Date.now() <= expiresAt) await sleep(expiresAt - Date.now() + 5);
    expect(await status(automation, first)).toBe(401);
    expect(await status(automation, second)).toBe(200);
  });

  it('"0s" revokes the old secret at once', async () => {
    const { automation, secret: first } = await hmacAutomation();
    const res = await rotate(automation.id, { gracePeriod: '0s' });
    expect(res.status).toBe(200);
    expect(res.body.previousSecretExpiresAt).toBeNull();
    expect(await status(automation, first)).toBe(401);
    expect(await status(automation, res.body.signingSecret)).toBe(200);
    const audit = (await listAuditEvents(stack.service.deps.db, 'automation', automation.id)).filter(
      (e) => e.action === 'automation.rotate_secret',
    );
    expect(audit[0]!.details).toEqual({ gracePeriod: '0s', previousSecretExpiresAt: null });
  });

  it('a second rotation during the grace period drops the oldest secret', async () => {
    const { automation, secret: first } = await hmacAutomation();
    const rotated = await rotate(automation.id, { gracePeriod: '3600s' });
    expect(rotated.status).toBe(200);
    const second = rotated.body.signingSecret as string;
    // During the grace period both the old and the new secret verify.
    expect(await status(automation, first)).toBe(200);
    expect(await status(automation, second)).toBe(200);
    const third = await rotate(automation.id, { gracePeriod: '3600s' });
    expect(third.status).toBe(200);
    expect(await status(automation, first)).toBe(401);
    expect(await status(automation, second)).toBe(200);
    expect(await status(automation, third.body.signingSecret)).toBe(200);
  });

  it('refuses a malformed or too long grace period with 400, and changes nothing', async () => {
    const { automation, secret } = await hmacAutomation();
    for (const gracePeriod of ['604801s', '8d', '-1s', 86400, '', '1e3s']) {
      const res = await rotate(automation.id, { gracePeriod });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({
        code: 3,
        message: expect.stringContaining('gracePeriod'),
        details: expect.any(Array),
      });
    }
    expect((await rotate(automation.id, { grace: '1s' })).status).toBe(400);
    expect(await status(automation, secret)).toBe(200);
    expect(
      (await listAuditEvents(stack.service.deps.db, 'automation', automation.id)).some(
        (e) => e.action === 'automation.rotate_secret',
      ),
    ).toBe(false);
    expect((await rotate(automation.id, { gracePeriod: '604800s' })).status).toBe(200);
  });

  it('switching the trigger to JWT and back forgets the previous secret', async () => {
    const { automation, secret: first } = await hmacAutomation();
    const rotated = await rotate(automation.id, { gracePeriod: '3600s' });
    expect(rotated.status).toBe(200);
    expect(Date.parse(rotated.body.previousSecretExpiresAt)).toBeGreaterThan(Date.now() + 3_500_000);
    expect(await status(automation, first)).toBe(200); // in its grace period, until the switch
    const server = stack.service.server;
    const toJwt = await request(server)
      .post(`/api/v1/automations/${automation.id}`)
      .set('Authorization', `Bearer ${stack.adminToken}`)
      .send({
        automation: { trigger: { incomingWebhook: { authMethod: 'JWT', jwksUrl: 'http://127.0.0.1:1/jwks.json' } } },
        updateMask: 'trigger',
      });
    expect(toJwt.status).toBe(200);
    const back = await request(server)
      .post(`/api/v1/automations/${automation.id}`)
      .set('Authorization', `Bearer ${stack.adminToken}`)
      .send({ automation: { trigger: { incomingWebhook: { authMethod: 'HMAC' } } }, updateMask: 'trigger' });
    expect(back.status).toBe(200);
    await request(server)
      .post(`/api/v1/automations/${automation.id}/publish`)
      .set('Authorization', `Bearer ${stack.adminToken}`)
      .expect(200);
    expect(await status(automation, first)).toBe(401);
    expect(await status(automation, back.body.signingSecret)).toBe(200);
  });
});
