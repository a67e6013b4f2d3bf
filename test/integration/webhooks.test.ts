/**
 * The webhook receiver end to end: real HTTP server, real store, real Temporal dev server and a
 * real worker. Every status code of docs/api.md#check-order, for HMAC and for JWT (RS256, ES256, EdDSA).
 */
import { randomUUID } from 'node:crypto';
import request from 'supertest';
import type { RunState } from '../../src/contract/run';
import { startStack, hmacEvent, deliver, listenerPath, type Stack, type AutomationView } from '../helpers/stack';
import {
  startJwksServer,
  makeSigningKey,
  signWebhookJwt,
  type JwksServer,
  type SigningKey,
} from '../fixtures/jwks-server';
import { AutomationIdKey } from '../../src/temporal/search-attributes';
import { poll } from '../helpers/wait';

const STEPS = [
  { id: 'vars', setVariables: { employee: 'ctx.trigger.employee_id', status: 'ctx.trigger["status"]' } },
  {
    id: 'derived',
    when: 'ctx.steps.vars.status == "terminated"',
    setVariables: { message: '"offboard " + ctx.steps.vars.employee' },
  },
];
const PAYLOAD = { employee_id: '12345', status: 'terminated' };

describe('inbound webhook, HMAC', () => {
  let stack: Stack;
  let automation: AutomationView;
  let secret: string;
  let path: string;

  beforeAll(async () => {
    stack = await startStack();
    const created = await stack.createAutomation({
      displayName: 'Offboard contractor',
      trigger: { incomingWebhook: { authMethod: 'HMAC', enabled: true } },
      steps: STEPS,
    });
    automation = created.automation;
    secret = created.signingSecret!;
    path = listenerPath(automation);
  });
  afterAll(async () => stack.close());

  it('gives a 256-bit base64url secret without padding, shown only on create', async () => {
    expect(secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const got = await request(stack.service.server)
      .get(`/api/v1/automations/${automation.id}`)
      .set('Authorization', `Bearer ${stack.adminToken}`);
    expect(JSON.stringify(got.body)).not.toContain(secret);
    const list = await request(stack.service.server)
      .get('/api/v1/automations')
      .set('Authorization', `Bearer ${stack.adminToken}`);
    expect(JSON.stringify(list.body)).not.toContain(secret);
  });

  it('200: accepts a signed event and runs the automation with the payload', async () => {
    const event = hmacEvent(secret, PAYLOAD);
    const res = await deliver(stack, path, event);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      eventId: event.eventId,
      executionId: `webhook:${automation.trigger.incomingWebhook.listenerId}:${event.eventId}`,
    });

    const state: RunState = await stack.client.workflow.getHandle(res.body.executionId).result();
    expect(state.status).toBe('COMPLETED');
    expect(state.steps.map((s) => [s.id, s.status])).toEqual([
      ['vars', 'DONE'],
      ['derived', 'DONE'],
    ]);
    expect(state.steps[0]!.output).toEqual({ employee: '12345', status: 'terminated' });
    expect(state.steps[1]!.output).toEqual({ message: 'offboard 12345' });

    const description = await stack.client.workflow.getHandle(res.body.executionId).describe();
    expect(description.typedSearchAttributes.get(AutomationIdKey)).toBe(automation.id);
  });

  it('409: the same event id again, after the run finished, does not run again', async () => {
    const event = hmacEvent(secret, PAYLOAD);
    const first = await deliver(stack, path, event);
    expect(first.status).toBe(200);
    await stack.client.workflow.getHandle(first.body.executionId).result();
    const again = await deliver(stack, path, hmacEvent(secret, PAYLOAD, { eventId: event.eventId.toUpperCase() }));
    expect(again.status).toBe(409);
    expect(again.body.code).toBe(6);
    expect(JSON.stringify(again.body.details)).toContain(first.body.executionId);
    const runs = stack.client.workflow.list({ query: `WorkflowId = "${first.body.executionId}"` });
    let count = 0;
    for await (const _ of runs) count += 1;
    expect(count).toBe(1);
  });

  it('finds runs by AutomationId in Temporal visibility', async () => {
    const res = await deliver(stack, path, hmacEvent(secret, PAYLOAD));
    expect(res.status).toBe(200);
    // Visibility lags behind the start: poll until the run shows (90 s bound), then assert it did.
    const listed = async (): Promise<string[]> => {
      const ids: string[] = [];
      for await (const run of stack.client.workflow.list({ query: `AutomationId = "${automation.id}"` }))
        ids.push(run.workflowId);
      return ids;
    };
    expect(await poll(listed, (ids) => ids.includes(res.body.executionId))).toContain(res.body.executionId);
  });

  it('401: a wrong signature', async () => {
    const event = hmacEvent(secret, PAYLOAD);
    const res = await deliver(stack, path, {
      ...event,
      headers: {
        ...event.headers,
        'Webhook-Signature': hmacEvent('other-secret', PAYLOAD).headers['Webhook-Signature']!,
      },
    });
    expect(res.status).toBe(401);
    expect(res.body.code).toBe(16);
  });

  it('401: a signature made for another event id', async () => {
    const event = hmacEvent(secret, PAYLOAD);
    const res = await deliver(stack, path, {
      ...event,
      headers: { ...event.headers, 'Webhook-Event-Id': randomUUID() },
    });
    expect(res.status).toBe(401);
  });

  it('401: every wrong signature gets the same whole answer (made once, then reused); the refusals around it keep their own', async () => {
    const wrong = (): ReturnType<typeof hmacEvent> => {
      const event = hmacEvent(secret, PAYLOAD);
      return {
        ...event,
        headers: {
          ...event.headers,
          'Webhook-Signature': hmacEvent('other-secret', PAYLOAD).headers['Webhook-Signature']!,
        },
      };
    };
    const answer = (res: Awaited<ReturnType<typeof deliver>>) => ({
      status: res.status,
      body: res.body,
      headers: {
        contentType: res.headers['content-type'],
        contentLength: res.headers['content-length'],
        wwwAuthenticate: res.headers['www-authenticate'],
        cacheControl: res.headers['cache-control'],
        noSniff: res.headers['x-content-type-options'],
        retryAfter: res.headers['retry-after'],
      },
    });
    const mismatch = {
      status: 401,
      body: {
        code: 16,
        message: 'invalid webhook signature',
        details: [
          { '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'SIGNATURE_MISMATCH', domain: 'webhooks' },
        ],
      },
      headers: {
        contentType: 'application/json; charset=utf-8',
        contentLength: '164',
        wwwAuthenticate: 'Bearer',
        cacheControl: 'no-store',
        noSniff: 'nosniff',
        retryAfter: undefined,
      },
    };
    const stale = hmacEvent(secret, PAYLOAD, { timestamp: String(Math.floor(Date.now() / 1000) - 301) });
    // The fast path (canonical) and the Koa route (trailing slash), each more than once, with other refusals between.
    expect(answer(await deliver(stack, path, wrong()))).toEqual(mismatch);
    const late = answer(await deliver(stack, path, stale));
    expect([late.status, late.body.details, late.headers.wwwAuthenticate]).toEqual([
      400,
      [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'TIMESTAMP_OUT_OF_WINDOW', domain: 'webhooks' }],
      undefined,
    ]);
    expect(answer(await deliver(stack, path, wrong()))).toEqual(mismatch);
    expect(answer(await deliver(stack, `${path}/`, wrong()))).toEqual(mismatch);
    expect(answer(await deliver(stack, `${path}/`, wrong()))).toEqual(mismatch);
    const otherEvent = hmacEvent(secret, PAYLOAD);
    const forAnotherEvent = answer(
      await deliver(stack, path, {
        ...otherEvent,
        headers: { ...otherEvent.headers, 'Webhook-Event-Id': randomUUID() },
      }),
    );
    expect(forAnotherEvent).toEqual(mismatch);
    expect(answer(await deliver(stack, path, stale)).body).toEqual(late.body);
  });

  it('every spelling of the path Koa accepts answers as the canonical one (fast path and Koa route)', async () => {
    const listenerId = automation.trigger.incomingWebhook.listenerId;
    const prefix = path.slice(0, -listenerId.length);
    const hex = listenerId.charCodeAt(0).toString(16).toUpperCase();
    const spellings = {
      canonical: path,
      query: `${path}?source=crm`,
      trailingSlash: `${path}/`,
      upperCase: `${prefix.toUpperCase()}${listenerId}`,
      percentEncoded: `${prefix}%${hex}${listenerId.slice(1)}`,
    };
    const metrics = stack.service.deps.metrics;
    const routeCount = async (status: string): Promise<number> =>
      (await metrics.httpRequests.get()).values.find(
        (v) =>
          v.labels.route === '/api/v1/webhooks/incoming/:listenerId' &&
          v.labels.status === status &&
          v.labels.method === 'POST',
      )?.value ?? 0;
    for (const [name, spelled] of Object.entries(spellings)) {
      const before = { accepted: await routeCount('200'), refused: await routeCount('401') };
      const event = hmacEvent(secret, PAYLOAD);
      const accepted = await deliver(stack, spelled, event);
      expect([name, accepted.status, accepted.body]).toEqual([
        name,
        200,
        { eventId: event.eventId, executionId: `webhook:${listenerId}:${event.eventId}` },
      ]);
      const bad = hmacEvent(secret, PAYLOAD);
      const refused = await deliver(stack, spelled, {
        ...bad,
        headers: {
          ...bad.headers,
          'Webhook-Signature': hmacEvent('other-secret', PAYLOAD).headers['Webhook-Signature']!,
        },
      });
      expect([name, refused.status, refused.body.code, refused.headers['www-authenticate']]).toEqual([
        name,
        401,
        16,
        'Bearer',
      ]);
      for (const res of [accepted, refused]) {
        expect([
          name,
          res.headers['cache-control'],
          res.headers['x-content-type-options'],
          res.headers['content-type'],
        ]).toEqual([name, 'no-store', 'nosniff', 'application/json; charset=utf-8']);
      }
      // Both ways of serving record the same route label in the HTTP metrics.
      expect([name, await routeCount('200'), await routeCount('401')]).toEqual([
        name,
        before.accepted + 1,
        before.refused + 1,
      ]);
    }
    // Only POST is served: another method on the path is Koa's 405 with Allow, in the one error shape.
    const get = await request(stack.service.server).get(path);
    expect([get.status, get.headers.allow, get.body.code]).toEqual([405, 'POST', 12]);
  });

  it('400: each required header missing', async () => {
    for (const header of ['Content-Type', 'Webhook-Timestamp', 'Webhook-Event-Id', 'Webhook-Signature']) {
      const event = hmacEvent(secret, PAYLOAD);
      const headers = { ...event.headers };
      delete headers[header];
      const res = await deliver(stack, path, { headers, body: event.body });
      expect([header, res.status]).toEqual([header, 400]);
      expect(res.body.code).toBe(3);
    }
  });

  it('400: timestamp outside the 5-minute window, event id not a UUID v4, wrong content type', async () => {
    const stale = hmacEvent(secret, PAYLOAD, { timestamp: String(Math.floor(Date.now() / 1000) - 301) });
    expect((await deliver(stack, path, stale)).status).toBe(400);
    const v1 = hmacEvent(secret, PAYLOAD, { eventId: 'c232ab00-9414-11ec-b3c8-9f6bdeced846' });
    expect((await deliver(stack, path, v1)).status).toBe(400);
    const text = hmacEvent(secret, PAYLOAD);
    expect(
      (await deliver(stack, path, { ...text, headers: { ...text.headers, 'Content-Type': 'text/plain' } })).status,
    ).toBe(400);
  });

  it('400: a correctly signed body that is not JSON', async () => {
    const res = await deliver(stack, path, hmacEvent(secret, null, { body: '{"employee_id": ' }));
    expect(res.status).toBe(400);
    expect(res.body.message).toMatch(/JSON/);
  });

  it('413: a body over 65,536 bytes, even when signed', async () => {
    const big = JSON.stringify({ pad: 'x'.repeat(65_536) });
    const res = await deliver(stack, path, hmacEvent(secret, null, { body: big }));
    expect(res.status).toBe(413);
    expect(res.body.code).toBe(8);
    const exact = JSON.stringify({ pad: 'x'.repeat(65_536 - 10) });
    expect(Buffer.byteLength(exact)).toBe(65_536);
    expect((await deliver(stack, path, hmacEvent(secret, null, { body: exact }))).status).toBe(200);
  });

  it('404: unknown listener, unpublished automation, disabled trigger', async () => {
    expect((await deliver(stack, '/api/v1/webhooks/incoming/nope', hmacEvent(secret, PAYLOAD))).status).toBe(404);

    const draft = await stack.createAutomation(
      { displayName: 'draft', trigger: { incomingWebhook: { authMethod: 'HMAC' } }, steps: STEPS },
      false,
    );
    const draftRes = await deliver(stack, listenerPath(draft.automation), hmacEvent(draft.signingSecret!, PAYLOAD));
    expect(draftRes.status).toBe(404);

    const disabled = await stack.createAutomation({
      displayName: 'off',
      trigger: { incomingWebhook: { authMethod: 'HMAC', enabled: false } },
      steps: STEPS,
    });
    expect(
      (await deliver(stack, listenerPath(disabled.automation), hmacEvent(disabled.signingSecret!, PAYLOAD))).status,
    ).toBe(404);
  });

  it('403: source address outside allowedCidrs; 200 once the range includes it', async () => {
    const limited = await stack.createAutomation({
      displayName: 'limited',
      trigger: { incomingWebhook: { authMethod: 'HMAC', allowedCidrs: ['203.0.113.0/24'] } },
      steps: STEPS,
    });
    const res = await deliver(stack, listenerPath(limited.automation), hmacEvent(limited.signingSecret!, PAYLOAD));
    expect(res.status).toBe(403);
    expect(res.body.code).toBe(7);
    const updated = await request(stack.service.server)
      .post(`/api/v1/automations/${limited.automation.id}`)
      .set('Authorization', `Bearer ${stack.adminToken}`)
      .send({
        automation: {
          trigger: { incomingWebhook: { authMethod: 'HMAC', allowedCidrs: ['203.0.113.0/24', '127.0.0.0/8'] } },
        },
        updateMask: 'trigger',
      });
    expect(updated.status).toBe(200);
    expect(
      (await deliver(stack, listenerPath(limited.automation), hmacEvent(limited.signingSecret!, PAYLOAD))).status,
    ).toBe(200);
  });

  it('rotating the secret with no grace period makes the old one fail and the new one work', async () => {
    const rotated = await request(stack.service.server)
      .post(`/api/v1/automations/${automation.id}/trigger/rotate-secret`)
      .set('Authorization', `Bearer ${stack.adminToken}`)
      .send({ gracePeriod: '0s' });
    expect(rotated.status).toBe(200);
    expect(rotated.body.signingSecret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect((await deliver(stack, path, hmacEvent(secret, PAYLOAD))).status).toBe(401);
    secret = rotated.body.signingSecret;
    expect((await deliver(stack, path, hmacEvent(secret, PAYLOAD))).status).toBe(200);
  });
});

describe('inbound webhook, JWT', () => {
  let stack: Stack;
  let jwks: JwksServer;
  const keys: Partial<Record<'RS256' | 'ES256' | 'EdDSA', SigningKey>> = {};
  let automation: AutomationView;
  let path: string;

  beforeAll(async () => {
    for (const alg of ['RS256', 'ES256', 'EdDSA'] as const) keys[alg] = await makeSigningKey(alg, `kid-${alg}`);
    jwks = await startJwksServer(Object.values(keys).map((k) => k!.publicJwk));
    stack = await startStack();
    automation = (
      await stack.createAutomation({
        displayName: 'jwt automation',
        trigger: { incomingWebhook: { authMethod: 'JWT', jwksUrl: jwks.url } },
        steps: STEPS,
      })
    ).automation;
    path = listenerPath(automation);
  });
  afterAll(async () => {
    await stack.close();
    await jwks.close();
  });

  function jwtEvent(alg: 'RS256' | 'ES256' | 'EdDSA', claims?: Record<string, unknown>) {
    const eventId = randomUUID();
    const body = JSON.stringify(PAYLOAD);
    const token = signWebhookJwt({
      key: keys[alg]!,
      baseUrl: stack.service.baseUrl,
      audience: automation.trigger.incomingWebhook.url,
      eventId,
      body,
      ...(claims ? { claims } : {}),
    });
    return {
      eventId,
      body,
      headers: {
        'Content-Type': 'application/json',
        'Webhook-Timestamp': String(Math.floor(Date.now() / 1000)),
        'Webhook-Event-Id': eventId,
        Authorization: `Bearer ${token}`,
      },
    };
  }

  it.each(['RS256', 'ES256', 'EdDSA'] as const)(
    '200 for a valid %s token, and the run sees the payload',
    async (alg) => {
      const res = await deliver(stack, path, jwtEvent(alg));
      expect(res.status).toBe(200);
      const state: RunState = await stack.client.workflow.getHandle(res.body.executionId).result();
      expect(state.steps[0]!.output).toEqual({ employee: '12345', status: 'terminated' });
    },
  );

  it('401: missing Authorization, wrong aud, expired, jti not the event id, wrong body hash', async () => {
    const noAuth = jwtEvent('ES256');
    const headers: Record<string, string> = { ...noAuth.headers };
    delete headers.Authorization;
    expect((await deliver(stack, path, { headers, body: noAuth.body })).status).toBe(401);
    const now = Math.floor(Date.now() / 1000);
    for (const claims of [
      { aud: 'https://elsewhere.example/hook' },
      { exp: now - 10 },
      { jti: randomUUID() },
      { htb_s256: 'AAAA' },
      { sub: 'https://other-tenant.example' },
      { htm: 'GET' },
    ]) {
      const res = await deliver(stack, path, jwtEvent('ES256', claims));
      expect([claims, res.status]).toEqual([claims, 401]);
      expect(res.body.code).toBe(16);
    }
  });

  it('409 for a repeated event id under JWT too', async () => {
    const event = jwtEvent('EdDSA');
    expect((await deliver(stack, path, event)).status).toBe(200);
    expect((await deliver(stack, path, event)).status).toBe(409);
  });
});

describe('inbound webhook, workflow engine unreachable', () => {
  it('503 with Retry-After, never 200', async () => {
    const { createLazyClient } = await import('../../src/temporal/connection');
    const { testCodec } = await import('../helpers/temporal');
    const { client, connection } = createLazyClient({ address: '127.0.0.1:1', embedded: true }, 'default', testCodec());
    const stack = await startStack({ temporal: { client, taskQueue: 'nowhere', startTimeoutMs: 1500 }, worker: false });
    try {
      const created = await stack.createAutomation({
        displayName: 'down',
        trigger: { incomingWebhook: { authMethod: 'HMAC' } },
        steps: STEPS,
      });
      const res = await deliver(stack, listenerPath(created.automation), hmacEvent(created.signingSecret!, PAYLOAD));
      expect(res.status).toBe(503);
      expect(res.body).toEqual({
        code: 14,
        message: 'the workflow engine did not confirm the event; retry it later with the same Webhook-Event-Id',
        details: [],
      });
      expect(res.headers['retry-after']).toBe('5');
    } finally {
      await stack.close();
      await connection.close().catch(() => undefined);
    }
  });
});
