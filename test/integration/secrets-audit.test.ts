/**
 * Secrets stay secret: HMAC signing secrets are sealed at rest, client secrets hashed, and no
 * secret, token or signature reaches the logs of a full run. Changes leave an audit trail.
 */
import { Writable } from 'node:stream';
import request from 'supertest';
import { createLogger } from '../../src/logger';
import { listAuditEvents } from '../../src/store/audit';
import { startStack, hmacEvent, deliver, listenerPath, type Stack } from '../helpers/stack';
import { sealContext } from '../../src/crypto/secret-box';

describe('secrets and audit trail', () => {
  let stack: Stack;
  const logLines: string[] = [];

  beforeAll(async () => {
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        logLines.push(chunk.toString());
        done();
      },
    });
    stack = await startStack({ logger: createLogger('trace', sink) });
  });
  afterAll(async () => stack.close());

  it('keeps every secret of a full run out of the logs, seals signing secrets, and audits changes', async () => {
    const server = stack.service.server;
    const secrets: string[] = [];

    // An API client, its secret and a token obtained with it.
    const client = await request(server)
      .post('/api/v1/iam/clients')
      .set('Authorization', `Bearer ${stack.adminToken}`)
      .send({ displayName: 'ops', roles: ['super_admin'] });
    expect(client.status).toBe(200);
    secrets.push(client.body.clientSecret);
    const token = await request(server).post('/auth/v1/token').type('form').send({
      grant_type: 'client_credentials',
      client_id: client.body.client.clientId,
      client_secret: client.body.clientSecret,
    });
    expect(token.status).toBe(200);
    const bearer = token.body.access_token as string;
    secrets.push(bearer);
    const failedLogin = await request(server).post('/auth/v1/token').type('form').send({
      grant_type: 'client_credentials',
      client_id: client.body.client.clientId,
      client_secret: 'guess-guess-guess',
    });
    expect(failedLogin.status).toBe(401);
    secrets.push('guess-guess-guess');

    // An automation, its secret, a rotation, deliveries good and bad.
    const created = await request(server)
      .post('/api/v1/automations')
      .set('Authorization', `Bearer ${bearer}`)
      .send({
        displayName: 'audited',
        trigger: { incomingWebhook: { authMethod: 'HMAC' } },
        steps: [{ id: 'v', setVariables: { x: 'ctx.trigger.x' } }],
      });
    expect(created.status).toBe(200);
    const id: string = created.body.automation.id;
    secrets.push(created.body.signingSecret);
    await request(server)
      .post(`/api/v1/automations/${id}/publish`)
      .set('Authorization', `Bearer ${bearer}`)
      .expect(200);
    const rotated = await request(server)
      .post(`/api/v1/automations/${id}/trigger/rotate-secret`)
      .set('Authorization', `Bearer ${bearer}`)
      .send({ gracePeriod: '0s' });
    secrets.push(rotated.body.signingSecret);

    const path = listenerPath(created.body.automation);
    const good = hmacEvent(rotated.body.signingSecret, { x: 'payload-marker-7f3a' });
    secrets.push(good.headers['Webhook-Signature']!);
    expect((await deliver(stack, path, good)).status).toBe(200);
    const bad = hmacEvent(created.body.signingSecret, { x: 'payload-marker-7f3a' });
    secrets.push(bad.headers['Webhook-Signature']!);
    expect((await deliver(stack, path, bad)).status).toBe(401);

    // Sealed at rest: the stored value is not the secret, and opens to it.
    const rows = await stack.service.deps.db.query<{ signing_secret: string }>(
      'SELECT signing_secret FROM automations WHERE id = $1',
      [id],
    );
    const stored = rows[0]!.signing_secret;
    expect(stored.startsWith('v2.')).toBe(true);
    expect(stored).not.toContain(rotated.body.signingSecret);
    expect(stack.service.deps.secretBox.open(stored, sealContext('automation_signing_secret', id))).toBe(
      rotated.body.signingSecret,
    );

    // Ownership changes through the API, audited too.
    const user = await request(server)
      .post('/api/v1/users')
      .set('Authorization', `Bearer ${bearer}`)
      .send({ displayName: 'svc', email: 's@example.com', type: 'USER_TYPE_SERVICE' });
    const app = await request(server)
      .post('/api/v1/apps')
      .set('Authorization', `Bearer ${bearer}`)
      .send({ displayName: 'app' });
    const ent = await request(server)
      .post(`/api/v1/apps/${app.body.app.id}/entitlements`)
      .set('Authorization', `Bearer ${bearer}`)
      .send({ displayName: 'admin', slug: 'admin' });
    const ownerPath = `/api/v2/users/${user.body.user.id}/owners/entitlements/owner/${app.body.app.id}/${ent.body.appEntitlement.id}`;
    expect((await request(server).post(ownerPath).set('Authorization', `Bearer ${bearer}`).send({})).status).toBe(200);
    expect((await request(server).post(ownerPath).set('Authorization', `Bearer ${bearer}`).send({})).status).toBe(200);
    expect((await request(server).delete(ownerPath).set('Authorization', `Bearer ${bearer}`)).status).toBe(200);

    const actor = `client:${client.body.client.clientId}`;
    const automationAudit = await listAuditEvents(stack.service.deps.db, 'automation', id);
    expect(automationAudit.map((e) => [e.actor, e.action])).toEqual([
      [actor, 'automation.create'],
      [actor, 'automation.publish'],
      [actor, 'automation.rotate_secret'],
    ]);
    const ownershipAudit = await listAuditEvents(stack.service.deps.db, 'app_entitlement', ent.body.appEntitlement.id);
    expect(ownershipAudit.map((e) => e.action)).toEqual(['entitlement_owner.create', 'entitlement_owner.delete']);
    expect(ownershipAudit[0]!.details).toEqual({
      userId: user.body.user.id,
      roleSlug: 'owner',
      appId: app.body.app.id,
    });
    expect(Date.parse(ownershipAudit[0]!.at)).not.toBeNaN();

    // The logs saw the whole run, and none of it leaked.
    const logs = logLines.join('');
    expect(logs).toContain('webhook accepted');
    expect(logs).toContain('webhook refused');
    for (const secret of secrets) {
      expect(secret.length).toBeGreaterThan(8);
      expect(logs.includes(secret)).toBe(false);
    }
    expect(logs).not.toContain('payload-marker-7f3a');
  });
});
