/**
 * A flood of token requests must not starve the rest of the service: scrypt verifications (of
 * operator-chosen secrets, and the one every refusal costs, unknown ids included) are capped (503
 * beyond the cap), so the libuv thread pool stays free for DNS lookups and the JWKS fetch. While hundreds of token requests are
 * in progress, a JWT webhook whose JWKS host is a name (resolved on that pool) is verified and
 * accepted, and the API still accepts bearer tokens. Real HTTP, real store, real Temporal, a real
 * JWKS server (test/fixtures/jwks-server.ts).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { startStack, deliver, listenerPath, type Stack } from '../helpers/stack';
import {
  startJwksServer,
  makeSigningKey,
  signWebhookJwt,
  type JwksServer,
  type SigningKey,
} from '../fixtures/jwks-server';
import { createClient } from '../../src/auth/clients';
import { resolveNameThroughThreadPool } from '../helpers/resolver';

const FLOOD = 600;
/** The source of the flood's i-th attempt: one address each, in 198.18.0.0/15 (benchmarking). */
const sourceOf = (i: number): string => `198.18.${i >> 8}.${i & 255}`;
/** The JWKS server's host name (answered by the test's resolver, through the thread pool). */
const JWKS_HOST = 'jwks.flood.test';

/** A token request; `from` (through X-Forwarded-For, TRUST_PROXY=1) is its source, else the socket's. */
function tokenAttempt(
  port: number,
  clientId: string,
  clientSecret: string,
  from?: string,
): Promise<{ status: number; retryAfter: string | undefined }> {
  const body = new URLSearchParams({
    grant_type: 'client_credentials',
    client_id: clientId,
    client_secret: clientSecret,
  }).toString();
  const headers: Record<string, string> = {
    'Content-Type': 'application/x-www-form-urlencoded',
    ...(from ? { 'X-Forwarded-For': from } : {}),
  };
  return new Promise((resolve) => {
    const req = http.request(
      { host: '127.0.0.1', port, path: '/auth/v1/token', method: 'POST', agent: false, headers },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, retryAfter: res.headers['retry-after'] }));
      },
    );
    req.on('error', () => resolve({ status: 0, retryAfter: undefined }));
    req.end(body);
  });
}

describe('token flood', () => {
  let stack: Stack;
  let jwks: JwksServer;
  let key: SigningKey;
  let resolver: ReturnType<typeof resolveNameThroughThreadPool>;
  beforeAll(async () => {
    resolver = resolveNameThroughThreadPool(JWKS_HOST, '127.0.0.1');
    key = await makeSigningKey('ES256', 'kid-flood');
    jwks = await startJwksServer([key.publicJwk]);
    // The per-source limit is lifted here, and every attempt comes from a source of its own (so no
    // failure backoff of one (client, source) applies either): the point is the cap.
    stack = await startStack({ worker: false, env: { TOKEN_RATE_LIMIT_PER_MINUTE: '1000000', TRUST_PROXY: '1' } });
  });
  afterAll(async () => {
    resolver.restore();
    await stack.close();
    await jwks.close();
  });

  it('leaves webhooks, their JWT verification and the API working', async () => {
    const db = stack.service.deps.db;
    const box = stack.service.deps.secretBox;
    // An operator-chosen secret (scrypt) is the expensive target; an unknown id is the decoy path.
    await createClient(db, box, {
      displayName: 'bootstrap',
      roles: ['super_admin'],
      clientId: 'boot',
      clientSecret: 'operator-chosen-bootstrap-secret-0123456789',
    });
    // A name, so that its lookup runs on the thread pool; answered by the test (through the pool),
    // not by the machine's resolver.
    const jwksUrl = jwks.url.replace('127.0.0.1', JWKS_HOST);
    const created = await stack.createAutomation({
      displayName: 'jwt under flood',
      trigger: { incomingWebhook: { authMethod: 'JWT', jwksUrl } },
      steps: [{ id: 'vars', setVariables: { a: '1' } }],
    });
    const path = listenerPath(created.automation);
    const { port } = stack.service.server.address() as AddressInfo;

    const flood = Promise.all(
      Array.from({ length: FLOOD }, (_, i) =>
        i % 3 === 2
          ? tokenAttempt(port, `cli_unknown_${i}`, 'guess', sourceOf(i))
          : tokenAttempt(port, 'boot', `guess-${i}`, sourceOf(i)),
      ),
    );

    const eventId = randomUUID();
    const body = JSON.stringify({ employee_id: '1' });
    const timestamp = String(Math.floor(Date.now() / 1000));
    const token = signWebhookJwt({
      key,
      baseUrl: stack.service.baseUrl,
      audience: created.automation.trigger.incomingWebhook.url,
      eventId,
      body,
    });
    const webhook = await deliver(stack, path, {
      headers: {
        'Content-Type': 'application/json',
        'Webhook-Timestamp': timestamp,
        'Webhook-Event-Id': eventId,
        Authorization: `Bearer ${token}`,
      },
      body,
    });
    const api = await request(stack.service.server)
      .get('/api/v1/apps')
      .set('Authorization', `Bearer ${stack.adminToken}`);

    const attempts = await flood;
    expect([webhook.status, webhook.body]).toEqual([200, { eventId, executionId: expect.any(String) }]);
    expect(jwks.fetchCount()).toBeGreaterThan(0);
    expect(resolver).toHaveBeenCalledWith(JWKS_HOST, expect.anything(), expect.any(Function)); // the name was looked up
    expect(api.status).toBe(200);
    // Every attempt was refused, as invalid (401) or as over the cap (503 with Retry-After).
    const statuses = new Set(attempts.map((a) => a.status));
    expect([...statuses].filter((s) => s !== 401 && s !== 503)).toEqual([]);
    for (const attempt of attempts.filter((a) => a.status === 503)) expect(attempt.retryAfter).toMatch(/^[1-9][0-9]*$/);
    // The right secret still works once the flood is over.
    const ok = await tokenAttempt(port, 'boot', 'operator-chosen-bootstrap-secret-0123456789');
    expect(ok.status).toBe(200);
  });
});
