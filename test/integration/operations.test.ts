/** Operations endpoints and webhook load shedding, on the real stack. */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { startStack, hmacEvent, deliver, listenerPath, type Stack } from '../helpers/stack';
import { startTestService } from '../helpers/test-service';
import { DATABASES, itOn } from '../helpers/databases';
import { testCodec } from '../helpers/temporal';
import { openStoreWithOutage } from '../helpers/store-outage';
import { createLazyClient } from '../../src/temporal/connection';
import { poll, sleep } from '../helpers/wait';

const STEPS = [{ id: 'vars', setVariables: { who: 'ctx.trigger.employee_id' } }];

describe('health, readiness and metrics', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(async () => stack.close());

  it('/health answers while the process is up', async () => {
    const res = await request(stack.service.server).get('/health');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'ok' });
  });

  it('/ready is 200 when the store and Temporal answer', async () => {
    const res = await request(stack.service.server).get('/ready');
    expect(res.body).toEqual({ status: 'ready', checks: { store: true, temporal: true } });
    expect(res.status).toBe(200);
  });

  it('/ready is 503 naming Temporal when it cannot be reached', async () => {
    // The production client, pointed at a port nothing listens on (1: privileged, never bound here).
    const { client, connection } = createLazyClient({ address: '127.0.0.1:1', embedded: true }, 'default', testCodec());
    const service = await startTestService({ temporal: { client, taskQueue: 'nowhere', startTimeoutMs: 1500 } });
    try {
      const res = await request(service.server).get('/ready');
      expect(res.status).toBe(503);
      expect(res.body).toEqual({ status: 'not_ready', checks: { store: true, temporal: false } });
    } finally {
      await service.close();
      await connection.close().catch(() => undefined);
    }
  });

  for (const target of DATABASES) {
    itOn(target)(`/ready is 503 naming the store when it is down (${target.label})`, async () => {
      const store = await openStoreWithOutage(target);
      const service = await startTestService({ db: store.db, engine: stack.service.deps.engine });
      try {
        expect((await request(service.server).get('/ready')).body).toEqual({
          status: 'ready',
          checks: { store: true, temporal: true },
        });
        await store.takeDown();
        // /ready reuses its verdict for a moment (READINESS_CACHE_MS): poll until it is re-checked.
        const res = await poll(
          () => request(service.server).get('/ready'),
          (r) => r.status !== 200,
          60_000,
        );
        expect(res.status).toBe(503);
        expect(res.body).toEqual({ status: 'not_ready', checks: { store: false, temporal: true } });
      } finally {
        await service.close();
        await store.close();
      }
    });
  }

  it('/metrics counts webhook outcomes by status and reason', async () => {
    const created = await stack.createAutomation({
      displayName: 'metrics',
      trigger: { incomingWebhook: { authMethod: 'HMAC' } },
      steps: STEPS,
    });
    const path = listenerPath(created.automation);
    expect((await deliver(stack, path, hmacEvent(created.signingSecret!, { employee_id: '1' }))).status).toBe(200);
    expect((await deliver(stack, path, hmacEvent('wrong-secret', { employee_id: '1' }))).status).toBe(401);
    const res = await request(stack.service.server).get('/metrics');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/text\/plain/);
    expect(res.text).toMatch(/webhook_requests_total\{status="200",reason="accepted"\} [1-9]/);
    expect(res.text).toMatch(/webhook_requests_total\{status="401",reason="signature_mismatch"\} [1-9]/);
    expect(res.text).toMatch(/webhook_request_duration_seconds_bucket\{le="0.005",status="200"\}/);
    expect(res.text).not.toContain(created.signingSecret!);
  });
});

describe('webhook backpressure', () => {
  it('answers 429 with Retry-After beyond the in-flight bound, and recovers after', async () => {
    const stack = await startStack({ config: { webhookMaxInFlight: 1 } });
    try {
      const created = await stack.createAutomation({
        displayName: 'bounded',
        trigger: { incomingWebhook: { authMethod: 'HMAC' } },
        steps: STEPS,
      });
      const path = listenerPath(created.automation);
      const event = hmacEvent(created.signingSecret!, { employee_id: '1' });
      // A slow sender holds the only slot: headers sent, body still arriving.
      const { port } = stack.service.server.address() as AddressInfo;
      const slow = http.request({
        host: '127.0.0.1',
        port,
        path,
        method: 'POST',
        headers: { ...event.headers, 'Content-Length': String(Buffer.byteLength(event.body)) },
      });
      const slowResponse = new Promise<number>((resolve) => slow.on('response', (res) => resolve(res.statusCode ?? 0)));
      slow.on('error', () => undefined);
      slow.write(event.body.slice(0, 5));
      // Poll until the slow request holds the slot (it must reach the handler first).
      let shed = 0;
      const deadline = Date.now() + 120_000;
      while (shed === 0 && Date.now() < deadline) {
        const res = await deliver(stack, path, hmacEvent(created.signingSecret!, { employee_id: '2' }));
        if (res.status === 429) {
          shed += 1;
          expect(res.headers['retry-after']).toBe('1');
          expect(res.body.code).toBe(8);
        } else {
          await sleep(50);
        }
      }
      expect(shed).toBe(1);
      slow.end(event.body.slice(5));
      expect(await slowResponse).toBe(200);
      expect((await deliver(stack, path, hmacEvent(created.signingSecret!, { employee_id: '3' }))).status).toBe(200);
    } finally {
      await stack.close();
    }
  });
});
