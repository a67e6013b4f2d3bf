/**
 * Slow bodies must not exhaust the receiver: in-flight caps per listener and per source address
 * under the global cap (slow bodies on one listener leave another answering), a header pre-check
 * that answers before the body what the check order would answer anyway (and nothing else), and a
 * minimum body data rate. Real HTTP from distinct loopback source addresses (127.0.x.y), the real
 * store and the real Temporal dev server.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { startStack, hmacEvent, listenerPath, type Stack, type SignedEvent } from '../helpers/stack';
import { poll } from '../helpers/wait';

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
}

interface SlowRequest {
  answer: Promise<Answer>;
  /** Sends the rest of the body. */
  finish(): void;
  abort(): void;
}

/**
 * A delivery from `source` whose headers (with `Content-Length` of the whole body, unless
 * `chunked`) are sent at once, but only the first `sentBytes` bytes of the body.
 */
function slowDelivery(
  stack: Stack,
  path: string,
  event: SignedEvent,
  source: string,
  sentBytes = 5,
  chunked = false,
): SlowRequest {
  const { port } = stack.service.server.address() as AddressInfo;
  const headers: Record<string, string> = { ...event.headers };
  if (!chunked) headers['Content-Length'] = String(Buffer.byteLength(event.body));
  const req = http.request({
    host: '127.0.0.1',
    port,
    path,
    method: 'POST',
    headers,
    localAddress: source,
    agent: false,
  });
  const answer = new Promise<Answer>((resolve, reject) => {
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          body: text ? (JSON.parse(text) as Record<string, unknown>) : {},
        });
      });
    });
    req.on('error', reject);
  });
  answer.catch(() => undefined);
  if (sentBytes > 0) req.write(event.body.slice(0, sentBytes));
  else req.flushHeaders();
  let finished = false;
  return {
    answer,
    finish: () => {
      if (finished) return;
      finished = true;
      req.end(event.body.slice(sentBytes));
    },
    abort: () => req.destroy(),
  };
}

/** A whole delivery from `source`, at once. */
function deliverFrom(stack: Stack, path: string, event: SignedEvent, source: string): Promise<Answer> {
  const request = slowDelivery(stack, path, event, source, 0);
  request.finish();
  return request.answer;
}

async function inFlight(stack: Stack): Promise<number> {
  const metric = await stack.service.deps.metrics.webhooksInFlight.get();
  return metric.values[0]?.value ?? 0;
}

/**
 * Completes `held` and waits until the gauge is back at `baseline`: each test lets go of its own
 * slow deliveries, so that none outlives it (the server would answer 408 when its 10 s body
 * deadline passes, and the next test's baseline would move under it).
 */
async function release(stack: Stack, held: SlowRequest[], baseline: number): Promise<void> {
  for (const request of held) request.finish();
  await Promise.all(held.map((request) => request.answer.catch(() => undefined)));
  expect(
    await poll(
      () => inFlight(stack),
      (n) => n === baseline,
      30_000,
    ),
  ).toBe(baseline);
}

const STEPS = [{ id: 'vars', setVariables: { a: '1' } }];
const PAYLOAD = { employee_id: '1', padding: 'x'.repeat(200) };

describe('webhook admission: in-flight caps per listener and per source', () => {
  let stack: Stack;
  const open: SlowRequest[] = [];
  beforeAll(async () => {
    stack = await startStack({
      worker: false,
      config: {
        webhookMaxInFlight: 10,
        webhookAdmission: { perListener: 4, perSource: 2, minBytesPerSecond: 0, graceMs: 2000 },
      },
    });
  });
  afterAll(async () => {
    // The held deliveries are completed (not cut off), so the server sees well-formed requests.
    for (const request of open) request.finish();
    await Promise.all(open.map((request) => request.answer.catch(() => undefined)));
    await stack.close();
  });

  it('slow bodies on one listener leave another listener answering', async () => {
    const a = await stack.createAutomation({
      displayName: 'slow target',
      trigger: { incomingWebhook: { authMethod: 'HMAC' } },
      steps: STEPS,
    });
    const b = await stack.createAutomation({
      displayName: 'bystander',
      trigger: { incomingWebhook: { authMethod: 'HMAC' } },
      steps: STEPS,
    });
    const pathA = listenerPath(a.automation);
    const pathB = listenerPath(b.automation);

    // Deliveries other tests of this file hold open (they may run first).
    const before = await inFlight(stack);
    // As many slow senders as the global cap allows, each from its own address, all to listener A.
    const refused: Answer[] = [];
    const held: SlowRequest[] = [];
    for (let i = 1; i <= 10; i++) {
      const request = slowDelivery(stack, pathA, hmacEvent(a.signingSecret!, PAYLOAD), `127.0.1.${i}`);
      open.push(request);
      held.push(request);
      request.answer.then(
        (answer) => refused.push(answer),
        () => undefined,
      );
    }
    // Every sender is either held (admitted) or answered: the gauge also counts a request that is
    // being refused, so wait for the refusals themselves, then for the gauge to settle.
    expect(
      await poll(
        async () => refused.length,
        (n) => n >= 6,
        30_000,
      ),
    ).toBe(6);
    expect(
      await poll(
        () => inFlight(stack),
        (n) => n === before + 4,
        30_000,
      ),
    ).toBe(before + 4);
    expect(refused).toHaveLength(6);
    for (const answer of refused) {
      expect(answer.status).toBe(429);
      expect(answer.headers['retry-after']).toBe('1');
      expect(answer.body).toMatchObject({ code: 8, message: expect.stringContaining('for this listener') });
    }

    // Listener B still answers, from yet another address.
    const other = await deliverFrom(stack, pathB, hmacEvent(b.signingSecret!, PAYLOAD), '127.0.2.1');
    expect(other.status).toBe(200);
    await release(stack, held, before);
  });

  it('one source address cannot hold more than its share', async () => {
    const b = await stack.createAutomation({
      displayName: 'per source',
      trigger: { incomingWebhook: { authMethod: 'HMAC' } },
      steps: STEPS,
    });
    const pathB = listenerPath(b.automation);
    const before = await inFlight(stack);
    const held = [0, 1].map(() => slowDelivery(stack, pathB, hmacEvent(b.signingSecret!, PAYLOAD), '127.0.3.1'));
    open.push(...held);
    expect(
      await poll(
        () => inFlight(stack),
        (n) => n === before + 2,
        30_000,
      ),
    ).toBe(before + 2);

    const third = await deliverFrom(stack, pathB, hmacEvent(b.signingSecret!, PAYLOAD), '127.0.3.1');
    expect(third.status).toBe(429);
    expect(third.body.message).toContain('from this address');
    expect((await deliverFrom(stack, pathB, hmacEvent(b.signingSecret!, PAYLOAD), '127.0.3.2')).status).toBe(200);
    await release(stack, held, before);
  });
});

describe('webhook admission: checks before the body, in the contract order', () => {
  let stack: Stack;
  let secret: string;
  let hmacPath: string;
  let jwtPath: string;
  const open: SlowRequest[] = [];
  beforeAll(async () => {
    stack = await startStack({ worker: false });
    const hmac = await stack.createAutomation({
      displayName: 'precheck',
      trigger: { incomingWebhook: { authMethod: 'HMAC' } },
      steps: STEPS,
    });
    secret = hmac.signingSecret!;
    hmacPath = listenerPath(hmac.automation);
    const jwt = await stack.createAutomation({
      displayName: 'precheck jwt',
      trigger: { incomingWebhook: { authMethod: 'JWT', jwksUrl: 'http://127.0.0.1:9/jwks.json' } },
      steps: STEPS,
    });
    jwtPath = listenerPath(jwt.automation);
  });
  afterAll(async () => {
    // The held deliveries are completed (not cut off), so the server sees well-formed requests.
    for (const request of open) request.finish();
    await Promise.all(open.map((request) => request.answer.catch(() => undefined)));
    await stack.close();
  });

  /** Sends the headers and part of the body, never the rest: the answer must come without it. */
  async function answerWithoutBody(path: string, event: SignedEvent): Promise<Answer> {
    const request = slowDelivery(stack, path, event, '127.0.0.1', 5);
    open.push(request);
    return request.answer;
  }

  it('refuses a bad event id, a stale timestamp, a wrong Content-Type and a missing signature without waiting for the body', async () => {
    const badId = hmacEvent(secret, PAYLOAD, { eventId: 'not-a-uuid' });
    expect((await answerWithoutBody(hmacPath, badId)).body.details[0].reason).toBe('BAD_EVENT_ID');

    const stale = hmacEvent(secret, PAYLOAD, { timestamp: String(Math.floor(Date.now() / 1000) - 400) });
    const staleAnswer = await answerWithoutBody(hmacPath, stale);
    expect([staleAnswer.status, staleAnswer.body.details[0].reason]).toEqual([400, 'TIMESTAMP_OUT_OF_WINDOW']);

    const text = hmacEvent(secret, PAYLOAD);
    text.headers['Content-Type'] = 'text/plain';
    expect((await answerWithoutBody(hmacPath, text)).body.details[0].reason).toBe('BAD_CONTENT_TYPE');

    const unsigned = hmacEvent(secret, PAYLOAD);
    delete unsigned.headers['Webhook-Signature'];
    const unsignedAnswer = await answerWithoutBody(hmacPath, unsigned);
    expect([unsignedAnswer.status, unsignedAnswer.body.code, unsignedAnswer.body.details[0].reason]).toEqual([
      400,
      3,
      'MISSING_HEADER',
    ]);
  });

  it('refuses a JWT delivery without Authorization (401) without waiting for the body', async () => {
    const eventId = randomUUID();
    const event: SignedEvent = {
      eventId,
      timestamp: String(Math.floor(Date.now() / 1000)),
      body: JSON.stringify(PAYLOAD),
      headers: {
        'Content-Type': 'application/json',
        'Webhook-Timestamp': String(Math.floor(Date.now() / 1000)),
        'Webhook-Event-Id': eventId,
      },
    };
    const answer = await answerWithoutBody(jwtPath, event);
    expect([answer.status, answer.body.details[0].reason]).toEqual([401, 'MISSING_AUTHORIZATION']);
  });

  it('keeps 413 first: an oversized chunked body with a missing header is 413, not 400', async () => {
    const big = hmacEvent(secret, { padding: 'x'.repeat(70_000) });
    delete big.headers['Webhook-Signature'];
    const request = slowDelivery(stack, hmacPath, big, '127.0.0.1', 0, true);
    request.finish();
    const answer = await request.answer;
    expect([answer.status, answer.body.code]).toEqual([413, 8]);
  });

  it('reads a chunked body before judging its headers (it might have been a 413)', async () => {
    const small = hmacEvent(secret, PAYLOAD, { eventId: 'not-a-uuid' });
    const request = slowDelivery(stack, hmacPath, small, '127.0.0.1', 5, true);
    request.finish();
    const answer = await request.answer;
    expect([answer.status, answer.body.details[0].reason]).toEqual([400, 'BAD_EVENT_ID']);
  });
});

describe('webhook admission: minimum body data rate', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({
      worker: false,
      config: { webhookAdmission: { perListener: 128, perSource: 64, minBytesPerSecond: 1000, graceMs: 500 } },
    });
  });
  afterAll(async () => stack.close());

  it('answers 408 and gives the slot back when a body trickles in slower than the minimum rate', async () => {
    const a = await stack.createAutomation({
      displayName: 'trickle',
      trigger: { incomingWebhook: { authMethod: 'HMAC' } },
      steps: STEPS,
    });
    const event = hmacEvent(a.signingSecret!, { padding: 'x'.repeat(5000) });
    const request = slowDelivery(stack, listenerPath(a.automation), event, '127.0.4.1', 5);
    const answer = await request.answer;
    request.abort();
    expect(answer.status).toBe(408);
    expect(answer.body.message).toBe('request body arrives slower than 1000 bytes per second');
    expect(
      await poll(
        () => inFlight(stack),
        (n) => n === 0,
        30_000,
      ),
    ).toBe(0);
  });
});
