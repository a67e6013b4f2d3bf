/**
 * Provisioning by webhook, end to end (docs/api.md#provisioning-webhooks): real HTTP, the real
 * store (PGlite, and PostgreSQL with DATABASE_URL), the real Temporal dev server and worker, and a
 * real receiver. A receiver that answers 500 is retried with one Idempotency-Key per grant, phase
 * and step, every attempt signed (Standard Webhooks, verified by the `standardwebhooks` library);
 * a 202 waits for the single-use callback (a bad body leaves it usable, a second use is 404); a
 * 4xx fails the grant naming the status and origin only; a failed deprovision stays
 * DEPROVISIONING (counted) until a revoke retries it with a new key. The resource's own rules:
 * roles, the outbound URL rules, the signing secret's origins, 409 while a policy names it.
 */
import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { DATABASES, describeOn } from '../helpers/databases';
import { startStack, type Stack } from '../helpers/stack';
import { callerFor, createEntitlement, createGovernanceApp, violatedFields, type Caller } from '../helpers/governance';
import { startReceiver, type Answer, type Receiver, type ReceivedRequest } from '../helpers/receiver';
import { poll, until } from '../helpers/wait';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const whsec = (): string => `whsec_${randomBytes(24).toString('base64')}`;

for (const target of DATABASES) {
  describeOn(target)(`provisioning webhooks (${target.label})`, () => {
    let stack: Stack;
    let admin: Caller;
    let superAdmin: Caller;
    let anonymous: Caller;
    let receiver: Receiver;
    /** What the receiver answers, by path: the n-th call (0-based) of that path. */
    const answers = new Map<string, (n: number, request: ReceivedRequest) => Answer>();
    const calls = (path: string) => receiver.received.filter((r) => r.path === path);

    beforeAll(async () => {
      receiver = await startReceiver((request) => {
        const answer = answers.get(request.path);
        return answer ? answer(calls(request.path).length - 1, request) : { status: 200 };
      });
      stack = await startStack({ target });
      admin = callerFor(stack.service, await stack.service.tokenFor('admin'));
      superAdmin = callerFor(stack.service, await stack.service.tokenFor('super_admin'));
      anonymous = callerFor(stack.service, undefined);
    });
    afterAll(async () => {
      await stack?.close();
      await receiver?.close();
    });

    async function hook(path: string, signingSecret?: string): Promise<string> {
      const res = await superAdmin.post('/api/v1/provisioning_webhooks', {
        displayName: path,
        url: `${receiver.origin}${path}`,
        ...(signingSecret ? { signingSecret } : {}),
      });
      expect(res.status).toBe(200);
      return res.body.provisioningWebhook.id;
    }

    async function grantOn(webhookId: string, deprovisionId?: string): Promise<{ grant: Json; entitlement: Json }> {
      const app = await createGovernanceApp(admin);
      const entitlement = await createEntitlement(admin, app.id, {
        provisionerPolicy: { webhook: { webhookId } },
        ...(deprovisionId ? { deprovisionerPolicy: { webhook: { webhookId: deprovisionId } } } : {}),
      });
      const user = await admin.post('/api/v1/users', {
        displayName: 'Joiner',
        email: 'joiner@acme.example',
        type: 'USER_TYPE_HUMAN',
      });
      const made = await admin.post('/api/v1/grants', {
        userId: user.body.user.id,
        appId: app.id,
        appEntitlementId: entitlement.id,
      });
      expect(made.status).toBe(200);
      return { grant: made.body.grant, entitlement };
    }

    const grantOf = async (id: string): Promise<Json> => (await admin.get(`/api/v1/grants/${id}`)).body.grant;
    const untilState = (id: string, state: string) =>
      poll(
        () => grantOf(id),
        (g) => g.state === state,
        { what: `grant ${id} ${state}` },
      );
    const countOf = async (e: Json): Promise<string> =>
      (await admin.get(`/api/v1/apps/${e.appId}/entitlements/${e.id}`)).body.appEntitlement.grantCount;

    it('500, 500, 200: GRANTED once; every attempt carries one key and a signature that verifies; deprovision has its own key', async () => {
      const secret = whsec();
      expect(
        (
          await superAdmin.post('/api/v1/secrets', {
            name: 'prov_signing',
            value: secret,
            allowedOrigins: [receiver.origin],
          })
        ).status,
      ).toBe(200);
      answers.set('/flaky', (n) => ({ status: n < 2 ? 500 : 200 }));
      const id = await hook('/flaky', 'prov_signing');
      const { grant, entitlement } = await grantOn(id, id);
      expect(grant.state).toBe('PROVISIONING');
      const granted = await untilState(grant.id, 'GRANTED');
      expect(granted.provisioning).toEqual([
        expect.objectContaining({ phase: 'provision', policy: 'webhook', step: '', state: 'DONE', attempts: 3 }),
      ]);
      expect(await countOf(entitlement)).toBe('1');
      const attempts = calls('/flaky');
      expect(attempts).toHaveLength(3);
      const keys = new Set(attempts.map((a) => a.headers['idempotency-key']));
      expect(keys.size).toBe(1);
      expect(attempts.map((a) => a.headers['webhook-id'])).toEqual([...keys, ...keys, ...keys]);
      const receiverSide = new Webhook(secret);
      for (const attempt of attempts) {
        const body = receiverSide.verify(attempt.body.toString('utf8'), attempt.headers) as Json;
        expect(body).toMatchObject({
          type: 'grant.provision',
          grant: { id: grant.id, state: 'PROVISIONING' },
          user: { id: grant.userId },
          appEntitlement: { id: entitlement.id },
          callbackUrl: expect.stringMatching(/\/api\/v1\/provisioning\/callbacks\/[A-Za-z0-9_-]{40,}$/),
        });
      }

      const revoked = await admin.post(`/api/v1/grants/${grant.id}/revoke`, { reason: 'leaver' });
      expect(revoked.body.grant.state).toBe('DEPROVISIONING');
      const ended = await untilState(grant.id, 'REVOKED');
      expect(ended.provisioning.map((e: Json) => [e.phase, e.state])).toEqual([
        ['provision', 'DONE'],
        ['deprovision', 'DONE'],
      ]);
      const deprovision = calls('/flaky').slice(3);
      expect(deprovision).toHaveLength(1);
      expect(JSON.parse(deprovision[0]!.body.toString()).type).toBe('grant.deprovision');
      expect(keys.has(deprovision[0]!.headers['idempotency-key']!)).toBe(false);
      expect(await countOf(entitlement)).toBe('0');
    });

    it('202 then the callback: a bad body is 400 and leaves it usable; done grants; a second use is 404', async () => {
      answers.set('/later', () => ({ status: 202 }));
      const { grant } = await grantOn(await hook('/later'));
      await until(() => calls('/later').length >= 1, 'the receiver to be called', { timeoutMs: 90_000 });
      const callbackUrl = new URL(JSON.parse(calls('/later')[0]!.body.toString()).callbackUrl as string);
      expect((await grantOf(grant.id)).state).toBe('PROVISIONING');
      const bad = await anonymous.post(callbackUrl.pathname, { status: 'maybe' });
      expect([bad.status, violatedFields(bad.body)]).toEqual([400, ['status']]);
      expect((await anonymous.post(callbackUrl.pathname, { status: 'done' })).status).toBe(200);
      await untilState(grant.id, 'GRANTED');
      expect((await anonymous.post(callbackUrl.pathname, { status: 'failed' })).status).toBe(404);
      expect((await anonymous.post('/api/v1/provisioning/callbacks/unknown-token', { status: 'done' })).status).toBe(
        404,
      );
      expect((await grantOf(grant.id)).state).toBe('GRANTED');
    });

    it('a callback that says failed, and a 4xx answer, fail the grant (message; status and origin, never the body)', async () => {
      answers.set('/refuses', () => ({ status: 202 }));
      const { grant } = await grantOn(await hook('/refuses'));
      await until(() => calls('/refuses').length >= 1, 'the receiver to be called', { timeoutMs: 90_000 });
      const callbackUrl = new URL(JSON.parse(calls('/refuses')[0]!.body.toString()).callbackUrl as string);
      await anonymous.post(callbackUrl.pathname, { status: 'failed', message: 'no seat left' }).expect(200);
      expect(await untilState(grant.id, 'FAILED')).toMatchObject({ error: 'no seat left' });

      answers.set('/bad', () => ({ status: 400, body: { secret: 'do-not-echo' } }));
      const { grant: other, entitlement } = await grantOn(await hook('/bad'));
      const failed = await untilState(other.id, 'FAILED');
      expect(failed.error).toBe(`provisioning webhook ${receiver.origin} answered HTTP 400`);
      expect(JSON.stringify(failed)).not.toContain('do-not-echo');
      expect(calls('/bad')).toHaveLength(1);
      expect(await countOf(entitlement)).toBe('0');
    });

    it('a failed deprovision stays DEPROVISIONING and counted; a revoke retries it with a new key', async () => {
      let refuse = true;
      answers.set('/unprovision', (_n, request) => {
        const type = JSON.parse(request.body.toString()).type;
        return { status: type === 'grant.deprovision' && refuse ? 400 : 200 };
      });
      const id = await hook('/unprovision');
      const { grant, entitlement } = await grantOn(id, id);
      await untilState(grant.id, 'GRANTED');
      await admin.post(`/api/v1/grants/${grant.id}/revoke`, { reason: 'leaver' }).expect(200);
      const stuck = await poll(
        () => grantOf(grant.id),
        (g) => g.provisioning.some((e: Json) => e.phase === 'deprovision' && e.state === 'FAILED'),
      );
      expect(stuck.state).toBe('DEPROVISIONING');
      expect(await countOf(entitlement)).toBe('1');
      refuse = false;
      await admin.post(`/api/v1/grants/${grant.id}/revoke`, { reason: 'again' }).expect(200);
      await untilState(grant.id, 'REVOKED');
      const deprovisions = calls('/unprovision').filter(
        (r) => JSON.parse(r.body.toString()).type === 'grant.deprovision',
      );
      expect(deprovisions).toHaveLength(2);
      expect(deprovisions[0]!.headers['idempotency-key']).not.toBe(deprovisions[1]!.headers['idempotency-key']);
      expect(await countOf(entitlement)).toBe('0');
    });

    it('the resource: super_admin writes, admin reads; URL and signing secret rules; 409 while a policy names it', async () => {
      const made = await hook('/resource');
      expect((await admin.get(`/api/v1/provisioning_webhooks/${made}`)).body.provisioningWebhook).toMatchObject({
        id: made,
        url: `${receiver.origin}/resource`,
        signingSecret: null,
      });
      expect((await admin.get('/api/v1/provisioning_webhooks')).status).toBe(200);
      expect(
        (await admin.post('/api/v1/provisioning_webhooks', { displayName: 'x', url: receiver.origin })).status,
      ).toBe(403);
      const ftp = await superAdmin.post('/api/v1/provisioning_webhooks', {
        displayName: 'x',
        url: 'ftp://example.com/',
      });
      expect([ftp.status, violatedFields(ftp.body)]).toEqual([400, ['url']]);
      const unknown = await superAdmin.post('/api/v1/provisioning_webhooks', {
        displayName: 'x',
        url: `${receiver.origin}/x`,
        signingSecret: 'nope',
      });
      expect([unknown.status, violatedFields(unknown.body)]).toEqual([400, ['signingSecret']]);
      await superAdmin
        .post('/api/v1/secrets', { name: 'elsewhere', value: whsec(), allowedOrigins: ['https://elsewhere.example'] })
        .expect(200);
      const wrongOrigin = await superAdmin.post('/api/v1/provisioning_webhooks', {
        displayName: 'x',
        url: `${receiver.origin}/x`,
        signingSecret: 'elsewhere',
      });
      expect([wrongOrigin.status, violatedFields(wrongOrigin.body)]).toEqual([400, ['signingSecret']]);

      const app = await createGovernanceApp(admin);
      const entitlement = await createEntitlement(admin, app.id, {
        deprovisionerPolicy: { multiStep: { provisionSteps: [{ webhook: { webhookId: made } }] } },
      });
      expect((await superAdmin.delete(`/api/v1/provisioning_webhooks/${made}`)).status).toBe(409);
      await admin.delete(`/api/v1/apps/${app.id}/entitlements/${entitlement.id}`).expect(200);
      expect((await superAdmin.delete(`/api/v1/provisioning_webhooks/${made}`)).status).toBe(200);
      expect((await admin.get(`/api/v1/provisioning_webhooks/${made}`)).status).toBe(404);
    });
  });
}
