/**
 * The webhook receiver against a catalogue of attacks, through real HTTP (and raw sockets where a
 * well-behaved client cannot misbehave enough), on the real store, Temporal and worker. Every case
 * must be refused with the status, google.rpc code and reason of the check order in docs/api.md#check-order; no refusal
 * may echo the signature, token, signing secret or payload; and nothing refused may run (the last
 * test compares the runs Temporal holds for the listeners with the few deliveries meant to pass).
 */
import { createHash, createHmac, createPublicKey, generateKeyPairSync, randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { exportJWK } from 'jose';
import {
  hmacEvent,
  deliver,
  listenerPath,
  type Stack,
  type AutomationView,
  type RawResponse,
  type SignedEvent,
} from '../helpers/stack';
import {
  startJwksServer,
  makeSigningKey,
  signWebhookJwt,
  signCompact,
  type JwksServer,
  type SigningKey,
} from '../fixtures/jwks-server';
import { rawExchange, requestHead, writeQuietly, type ParsedResponse } from '../helpers/raw-http';
import { signHmac } from '../../src/webhooks';
import { startPatientStack } from '../helpers/patient-stack';
import { poll } from '../helpers/wait';

const RPC_CODE: Record<number, number> = { 400: 3, 401: 16, 403: 7, 404: 5, 408: 4, 409: 6, 413: 8 };
const MARKER = `payload-marker-${randomUUID()}`;
const PAYLOAD = { employee_id: '12345', status: 'terminated', note: MARKER };
const STEPS = [{ id: 'vars', setVariables: { employee: 'ctx.trigger.employee_id' } }];

let stack: Stack;
let port: number;
let jwks: JwksServer;
let hmacAutomation: AutomationView;
let hmacPath: string;
let secret: string;
let otherSecret: string;
let otherAutomation: AutomationView;
let jwtAutomation: AutomationView;
let jwtPath: string;
let restrictedAutomation: AutomationView;
let restrictedPath: string;
let restrictedSecret: string;
const keys: Record<'RS256' | 'ES256' | 'EdDSA' | 'weak1024' | 'weak1536' | 'ed448' | 'attacker', SigningKey> =
  {} as never;
/** Execution ids of the deliveries meant to pass; nothing else may run. */
const accepted = new Set<string>();

beforeAll(async () => {
  keys.RS256 = await makeSigningKey('RS256', 'kid-RS256');
  keys.ES256 = await makeSigningKey('ES256', 'kid-ES256');
  keys.EdDSA = await makeSigningKey('EdDSA', 'kid-EdDSA');
  keys.weak1024 = await makeSigningKey('RS256', 'kid-weak-1024', { modulusLength: 1024 });
  keys.weak1536 = await makeSigningKey('RS256', 'kid-weak-1536', { modulusLength: 1536 });
  keys.attacker = await makeSigningKey('RS256', 'kid-attacker');
  const ed448 = generateKeyPairSync('ed448');
  keys.ed448 = {
    alg: 'EdDSA',
    kid: 'kid-ed448',
    privateKey: ed448.privateKey,
    publicJwk: { ...(await exportJWK(ed448.publicKey)), kid: 'kid-ed448', alg: 'EdDSA', use: 'sig' },
  };
  const published = [keys.RS256, keys.ES256, keys.EdDSA, keys.weak1024, keys.weak1536, keys.ed448];
  jwks = await startJwksServer(published.map((key) => key.publicJwk));

  // Starts may take up to 30 s on a loaded machine (a 503 would hide what is being tested).
  stack = await startPatientStack(30_000, { clock: receiverClock });
  port = (stack.service.server.address() as AddressInfo).port;
  const hmac = await stack.createAutomation({
    displayName: 'attack target (HMAC)',
    trigger: { incomingWebhook: { authMethod: 'HMAC' } },
    steps: STEPS,
  });
  hmacAutomation = hmac.automation;
  hmacPath = listenerPath(hmacAutomation);
  secret = hmac.signingSecret!;
  const other = await stack.createAutomation({
    displayName: 'another listener',
    trigger: { incomingWebhook: { authMethod: 'HMAC' } },
    steps: STEPS,
  });
  otherAutomation = other.automation;
  otherSecret = other.signingSecret!;
  const jwt = await stack.createAutomation({
    displayName: 'attack target (JWT)',
    trigger: { incomingWebhook: { authMethod: 'JWT', jwksUrl: jwks.url } },
    steps: STEPS,
  });
  jwtAutomation = jwt.automation;
  jwtPath = listenerPath(jwtAutomation);
  const restricted = await stack.createAutomation({
    displayName: 'attack target (CIDR)',
    trigger: { incomingWebhook: { authMethod: 'HMAC', allowedCidrs: ['203.0.113.0/24'] } },
    steps: STEPS,
  });
  restrictedAutomation = restricted.automation;
  restrictedPath = listenerPath(restricted.automation);
  restrictedSecret = restricted.signingSecret!;
});

// Nothing that was refused ran: the listeners hold exactly the accepted runs. Checked after every
// test of the file (in whatever order they ran), before the stack goes away.
afterAll(async () => {
  try {
    if (stack) await expectOnlyAcceptedRuns();
  } finally {
    await stack?.close();
    await jwks?.close();
  }
});

async function expectOnlyAcceptedRuns(): Promise<void> {
  const listeners = [hmacAutomation, jwtAutomation, otherAutomation, restrictedAutomation].map(
    (a) => `ListenerId = "${a.trigger.incomingWebhook.listenerId}"`,
  );
  const query = listeners.join(' OR ');
  const list = async (): Promise<string[]> => {
    const seen: string[] = [];
    for await (const run of stack.client.workflow.list({ query })) seen.push(run.workflowId);
    return seen;
  };
  // Visibility lags behind starts: wait until every accepted run shows.
  const seen = await poll(list, (ids) => [...accepted].every((id) => ids.includes(id)));
  expect(seen.sort()).toEqual([...accepted].sort());
}

// ---------------------------------------------------------------------------------------------
// helpers

type AnyResponse = Pick<RawResponse, 'status' | 'body'> & { headers: Record<string, unknown> };

/** The refusal has this status, its google.rpc code and (when given) this reason, and leaks nothing. */
function expectRefused(res: AnyResponse, status: number, reason: string | undefined, leaks: string[] = []): void {
  const detailReason = (res.body.details as Array<{ reason?: string }> | undefined)?.find((d) => d.reason)?.reason;
  expect({ status: res.status, code: res.body.code, ...(reason ? { reason: detailReason } : {}) }).toEqual({
    status,
    code: RPC_CODE[status],
    ...(reason ? { reason: reason.toUpperCase() } : {}),
  });
  expect(typeof res.body.message).toBe('string');
  expectNoLeak(JSON.stringify(res.body) + JSON.stringify(res.headers), leaks);
}

function expectNoLeak(text: string, leaks: string[]): void {
  for (const value of [secret, otherSecret, restrictedSecret, MARKER, JSON.stringify(PAYLOAD), ...leaks]) {
    if (value && value.length >= 8) expect(text).not.toContain(value);
  }
}

/** Same delivery with some headers changed (`undefined` removes one). */
function withHeaders(event: SignedEvent, changes: Record<string, string | undefined>): SignedEvent {
  const headers = { ...event.headers };
  for (const [name, value] of Object.entries(changes)) {
    if (value === undefined) delete headers[name];
    else headers[name] = value;
  }
  return { ...event, headers };
}

function signed(overrides: Partial<{ eventId: string; timestamp: string; body: string }> = {}): SignedEvent {
  return hmacEvent(secret, PAYLOAD, overrides);
}

function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}

/** The real time now, to pin the clock at: milliseconds and whole seconds. */
function pinnedNow(): { ms: number; seconds: number } {
  const ms = Date.now();
  return { ms, seconds: Math.floor(ms / 1000) };
}

/** The receiver's clock: the real one, or the instant a boundary case pinned. */
let pinnedMs: number | undefined;
const receiverClock = (): number => pinnedMs ?? Date.now();

/**
 * Runs `fn` with the receiver's clock (only that: nothing else in the process) pinned to `ms`, so
 * boundary cases do not depend on timing.
 */
async function atPinnedClock<T>(ms: number, fn: () => Promise<T>): Promise<T> {
  pinnedMs = ms;
  try {
    return await fn();
  } finally {
    pinnedMs = undefined;
  }
}

async function expectAccepted(res: RawResponse): Promise<void> {
  expect([res.status, res.body]).toEqual([200, expect.objectContaining({ executionId: expect.any(String) })]);
  accepted.add(res.body.executionId as string);
}

interface JwtDelivery {
  eventId: string;
  body: string;
  token: string;
  headers: Record<string, string>;
}

function jwtDelivery(
  options: {
    key?: SigningKey;
    claims?: Record<string, unknown>;
    header?: Record<string, unknown>;
    signWith?: Parameters<typeof signWebhookJwt>[0]['signWith'];
    now?: number;
    tokenEventId?: string;
    tokenBody?: string;
  } = {},
): JwtDelivery {
  const eventId = randomUUID();
  const body = JSON.stringify(PAYLOAD);
  const token = signWebhookJwt({
    key: options.key ?? keys.RS256,
    baseUrl: stack.service.baseUrl,
    audience: jwtAutomation.trigger.incomingWebhook.url,
    eventId: options.tokenEventId ?? eventId,
    body: options.tokenBody ?? body,
    ...(options.now !== undefined ? { nowSeconds: options.now } : {}),
    ...(options.claims ? { claims: options.claims } : {}),
    ...(options.header ? { header: options.header } : {}),
    ...(options.signWith ? { signWith: options.signWith } : {}),
  });
  return {
    eventId,
    body,
    token,
    headers: {
      'Content-Type': 'application/json',
      'Webhook-Timestamp': String(options.now ?? nowSeconds()),
      'Webhook-Event-Id': eventId,
      Authorization: `Bearer ${token}`,
    },
  };
}

function tokenLeaks(token: string): string[] {
  return [token, ...token.split('.')];
}

async function refusedJwt(delivery: JwtDelivery, reason: string, status = 401): Promise<void> {
  const res = await deliver(stack, jwtPath, delivery);
  expectRefused(res, status, reason, tokenLeaks(delivery.token));
}

// ---------------------------------------------------------------------------------------------

describe('HMAC signature attacks', () => {
  it('control: a correctly signed delivery is accepted', async () => {
    await expectAccepted(await deliver(stack, hmacPath, signed()));
  });

  it('400: no Webhook-Signature header at all', async () => {
    const res = await deliver(stack, hmacPath, withHeaders(signed(), { 'Webhook-Signature': undefined }));
    expectRefused(res, 400, 'missing_header');
  });

  it('400: an empty Webhook-Signature header', async () => {
    const res = await deliver(stack, hmacPath, withHeaders(signed(), { 'Webhook-Signature': '' }));
    expectRefused(res, 400, 'missing_header');
  });

  it('401: a well-formed but wrong signature', async () => {
    const event = signed();
    const forged = createHmac('sha256', 'guessed-secret').update('x').digest('base64url');
    expectRefused(
      await deliver(stack, hmacPath, withHeaders(event, { 'Webhook-Signature': forged })),
      401,
      'signature_mismatch',
      [forged],
    );
  });

  it("401: signed with another listener's secret", async () => {
    const event = hmacEvent(otherSecret, PAYLOAD);
    expectRefused(await deliver(stack, hmacPath, event), 401, 'signature_mismatch', [
      event.headers['Webhook-Signature']!,
    ]);
  });

  it('401: a signature over another timestamp', async () => {
    const event = signed();
    const other = signHmac(secret, String(Number(event.timestamp) - 1), event.eventId, event.body);
    expectRefused(
      await deliver(stack, hmacPath, withHeaders(event, { 'Webhook-Signature': other })),
      401,
      'signature_mismatch',
      [other],
    );
  });

  it('401: a signature taken from another event, replayed with a new event id', async () => {
    const original = signed();
    const replay = withHeaders(original, { 'Webhook-Event-Id': randomUUID() });
    expectRefused(await deliver(stack, hmacPath, replay), 401, 'signature_mismatch', [
      original.headers['Webhook-Signature']!,
    ]);
  });

  it('401: the event id re-cased under a signature over the original spelling', async () => {
    const event = signed();
    const recased = withHeaders(event, { 'Webhook-Event-Id': event.eventId.toUpperCase() });
    expectRefused(await deliver(stack, hmacPath, recased), 401, 'signature_mismatch');
  });

  it('401: the timestamp re-written with a leading zero under a signature over the original', async () => {
    const event = signed();
    expectRefused(
      await deliver(stack, hmacPath, withHeaders(event, { 'Webhook-Timestamp': `0${event.timestamp}` })),
      401,
      'signature_mismatch',
    );
  });

  it('401: the body re-serialised (same JSON, other bytes) under the original signature', async () => {
    const event = signed();
    const tampered = { ...event, body: JSON.stringify(PAYLOAD, null, 1) };
    expectRefused(await deliver(stack, hmacPath, tampered), 401, 'signature_mismatch');
  });

  it('401: a changed payload under the original signature', async () => {
    const event = signed();
    const tampered = { ...event, body: JSON.stringify({ ...PAYLOAD, status: 'hired' }) };
    expectRefused(await deliver(stack, hmacPath, tampered), 401, 'signature_mismatch');
  });

  it('401: the right signature with base64 padding', async () => {
    const event = signed();
    const padded = `${event.headers['Webhook-Signature']}=`;
    expectRefused(
      await deliver(stack, hmacPath, withHeaders(event, { 'Webhook-Signature': padded })),
      401,
      'signature_mismatch',
      [padded],
    );
  });

  it('401: the right signature in standard base64 (+ / and padding)', async () => {
    // Find an event whose signature has a character that differs between the two alphabets.
    let event = signed();
    while (!/[-_]/.test(event.headers['Webhook-Signature']!)) event = signed();
    const standard = Buffer.from(event.headers['Webhook-Signature']!, 'base64url').toString('base64');
    expect(standard).not.toBe(event.headers['Webhook-Signature']);
    expectRefused(
      await deliver(stack, hmacPath, withHeaders(event, { 'Webhook-Signature': standard })),
      401,
      'signature_mismatch',
      [standard],
    );
  });

  it('401: the right HMAC hex-encoded, or with a "sha256=" prefix', async () => {
    for (const spell of [(b: Buffer) => b.toString('hex'), (b: Buffer) => `sha256=${b.toString('base64url')}`]) {
      const event = signed();
      const value = spell(Buffer.from(event.headers['Webhook-Signature']!, 'base64url'));
      expectRefused(
        await deliver(stack, hmacPath, withHeaders(event, { 'Webhook-Signature': value })),
        401,
        'signature_mismatch',
        [value],
      );
    }
  });

  it('401: HMAC keyed with the base64url-decoded secret instead of the secret string', async () => {
    const event = signed();
    const decodedKey = Buffer.from(secret, 'base64url');
    const wrong = createHmac('sha256', decodedKey)
      .update(`${event.timestamp}.${event.eventId}.${event.body}`)
      .digest('base64url');
    expectRefused(
      await deliver(stack, hmacPath, withHeaders(event, { 'Webhook-Signature': wrong })),
      401,
      'signature_mismatch',
      [wrong],
    );
  });

  it('401: HMAC-SHA512 and HMAC-SHA1 over the right input', async () => {
    for (const algorithm of ['sha512', 'sha1']) {
      const event = signed();
      const wrong = createHmac(algorithm, secret)
        .update(`${event.timestamp}.${event.eventId}.${event.body}`)
        .digest('base64url');
      expectRefused(
        await deliver(stack, hmacPath, withHeaders(event, { 'Webhook-Signature': wrong })),
        401,
        'signature_mismatch',
        [wrong],
      );
    }
  });

  it('401: two Webhook-Signature headers, one of them right', async () => {
    const event = signed();
    const headers = { ...event.headers } as Record<string, string | string[]>;
    headers['Webhook-Signature'] = ['AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', event.headers['Webhook-Signature']!];
    const res = await deliver(stack, hmacPath, { headers: headers as Record<string, string>, body: event.body });
    expectRefused(res, 401, 'signature_mismatch', [event.headers['Webhook-Signature']!]);
  });

  it('400: a JWT bearer token on an HMAC listener instead of a signature', async () => {
    const event = withHeaders(signed(), {
      'Webhook-Signature': undefined,
      Authorization: `Bearer ${jwtDelivery().token}`,
    });
    expectRefused(await deliver(stack, hmacPath, event), 400, 'missing_header');
  });
});

describe('timestamp window (clock pinned for the boundaries)', () => {
  it.each([
    ['300 s in the past', -300],
    ['300 s in the future', 300],
  ])('200: a timestamp exactly %s', async (_label, offset) => {
    const { ms, seconds } = pinnedNow();
    const res = await atPinnedClock(ms, () =>
      deliver(stack, hmacPath, signed({ timestamp: String(seconds + offset) })),
    );
    await expectAccepted(res);
  });

  it.each([
    ['301 s in the past', -301],
    ['301 s in the future', 301],
    ['a day in the past', -86_400],
  ])('400: a timestamp %s', async (_label, offset) => {
    const { ms, seconds } = pinnedNow();
    const res = await atPinnedClock(ms, () =>
      deliver(stack, hmacPath, signed({ timestamp: String(seconds + offset) })),
    );
    expectRefused(res, 400, 'timestamp_out_of_window');
  });

  it.each([
    ['in milliseconds', () => String(Date.now())],
    ['with a fraction', () => `${nowSeconds()}.5`],
    ['negative', () => `-${nowSeconds()}`],
    ['with a plus sign', () => `+${nowSeconds()}`],
    ['in exponent notation', () => `${nowSeconds()}e0`],
    ['as an RFC 3339 date', () => new Date().toISOString()],
    ['in hex', () => `0x${nowSeconds().toString(16)}`],
  ])('400: a timestamp %s', async (_label, make) => {
    const res = await deliver(stack, hmacPath, signed({ timestamp: make() }));
    expectRefused(res, 400, 'bad_timestamp');
  });
});

describe('event id attacks', () => {
  it.each([
    ['UUID v1', 'c232ab00-9414-11ec-b3c8-9f6bdeced846'],
    ['UUID v3', '6fa459ea-ee8a-3ca4-894e-db77e160355e'],
    ['UUID v5', '886313e1-3b8a-5372-9b90-0c9aee199e5d'],
    ['UUID v7', '017f22e2-79b0-7cc3-98c4-dc0c0c07398f'],
    ['the nil UUID', '00000000-0000-0000-0000-000000000000'],
    ['a v4 with the wrong variant', '3d8e2d76-1c8f-4f3a-c3a1-7f1e5c2b9a10'],
    ['a v4 without hyphens', '3d8e2d761c8f4f3aa3a17f1e5c2b9a10'],
    ['a v4 in braces', '{3d8e2d76-1c8f-4f3a-a3a1-7f1e5c2b9a10}'],
    ['a v4 as a URN', 'urn:uuid:3d8e2d76-1c8f-4f3a-a3a1-7f1e5c2b9a10'],
    ['a v4 with a trailing character', '3d8e2d76-1c8f-4f3a-a3a1-7f1e5c2b9a10x'],
    ['a v4 with a non-hex digit', '3d8e2d76-1c8f-4f3a-a3a1-7f1e5c2b9a1g'],
    ['a path traversal', '../../3d8e2d76-1c8f-4f3a-a3a1-7f1e5c2b9a10'],
  ])('400: %s', async (_label, eventId) => {
    const res = await deliver(stack, hmacPath, signed({ eventId }));
    expectRefused(res, 400, 'bad_event_id');
  });

  it('400: two Webhook-Event-Id headers', async () => {
    const event = signed();
    const headers = { ...event.headers } as Record<string, string | string[]>;
    headers['Webhook-Event-Id'] = [event.eventId, randomUUID()];
    expectRefused(
      await deliver(stack, hmacPath, { headers: headers as Record<string, string>, body: event.body }),
      400,
      'bad_event_id',
    );
  });
});

describe('content type, source address and listener attacks', () => {
  it.each([
    'application/json; charset=iso-8859-1',
    'application/x-www-form-urlencoded',
    'application/jsonp',
    'multipart/form-data; boundary=x',
  ])('400: Content-Type %s', async (contentType) => {
    expectRefused(
      await deliver(stack, hmacPath, withHeaders(signed(), { 'Content-Type': contentType })),
      400,
      'bad_content_type',
    );
  });

  it('403: X-Forwarded-For / X-Real-IP claiming an allowed address do not count (TRUST_PROXY off)', async () => {
    const event = withHeaders(hmacEvent(restrictedSecret, PAYLOAD), {
      'X-Forwarded-For': '203.0.113.7',
      'X-Real-IP': '203.0.113.7',
      Forwarded: 'for=203.0.113.7',
    });
    expectRefused(await deliver(stack, restrictedPath, event), 403, 'source_not_allowed', [
      event.headers['Webhook-Signature']!,
    ]);
  });

  it('404: path tricks around the listener id', async () => {
    const id = hmacAutomation.trigger.incomingWebhook.listenerId;
    for (const path of [
      `/api/v1/webhooks/incoming/..%2F${id}`,
      `/api/v1/webhooks/incoming/${encodeURIComponent(`${id}/../${otherAutomation.trigger.incomingWebhook.listenerId}`)}`,
      `/api/v1/webhooks/incoming/${id}%00`,
      `/api/v1/webhooks/incoming/${id}%FF`,
      `/api/v1/webhooks/incoming/${id}%C3%28`,
      `/api/v1/webhooks/incoming/${id}${'A'.repeat(4000)}`,
      `/api/v1/webhooks/incoming/${id}'%20OR%20'1'='1`,
      `/api/v1/webhooks/incoming/${id.toUpperCase() === id ? id.toLowerCase() : id.toUpperCase()}`,
    ]) {
      const res = await deliver(stack, path, signed());
      expect([path, res.status, res.body.code]).toEqual([path, 404, 5]);
      expectNoLeak(JSON.stringify(res.body), []);
    }
  });
});

describe('body transport attacks (raw sockets)', () => {
  it('413: an oversized body sent chunked (no Content-Length), and the connection is closed', async () => {
    const event = signed();
    const headers = { ...event.headers, 'Transfer-Encoding': 'chunked' };
    const chunk = Buffer.alloc(16 * 1024, 'a');
    const exchange = await rawExchange(
      port,
      async (socket) => {
        await writeQuietly(socket, requestHead(hmacPath, headers));
        for (let i = 0; i < 6; i += 1)
          await writeQuietly(
            socket,
            Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from('\r\n')]),
          );
        await writeQuietly(socket, '0\r\n\r\n');
      },
      30_000,
    );
    expect(exchange.responses.map((r) => r.status)).toEqual([413]);
    expectRawRefused(exchange.responses[0]!, 413);
    expect(exchange.closedByServer).toBe(true);
  });

  it('413: a Content-Length over the limit is refused before the body is read', async () => {
    const event = signed();
    const exchange = await rawExchange(
      port,
      async (socket) => {
        await writeQuietly(
          socket,
          requestHead(hmacPath, { ...event.headers, 'Content-Length': String(10 * 1024 * 1024) }),
        );
        await writeQuietly(socket, event.body); // a few bytes of the announced 10 MB, then nothing
      },
      30_000,
    );
    expect(exchange.responses.map((r) => r.status)).toEqual([413]);
    expectRawRefused(exchange.responses[0]!, 413);
    expect(exchange.closedByServer).toBe(true);
  });

  it('a Content-Length smaller than the body: the truncated request is refused, the rest is not a request', async () => {
    const event = signed();
    const body = Buffer.from(event.body);
    // Whatever reaches stderr meanwhile (Node's or a framework's report of the parse error of the
    // trailing bytes) is captured, and must leak nothing either.
    const logged: string[] = [];
    const consoleError = jest.spyOn(console, 'error').mockImplementation((...args: unknown[]) => {
      logged.push(args.map(String).join(' '));
    });
    let exchange;
    try {
      exchange = await rawExchange(
        port,
        (socket) => {
          socket.write(
            Buffer.concat([
              Buffer.from(requestHead(hmacPath, { ...event.headers, 'Content-Length': String(body.length - 12) })),
              body,
            ]),
          );
        },
        10_000,
      );
    } finally {
      consoleError.mockRestore();
    }
    // The 12 trailing bytes are no request: Node's parser refuses them with a 400 and closes the
    // connection, as it reads them in the same packet, often before the truncated request (whose
    // body fails its signature: 401) is answered. Never a 200, never a second request.
    const statuses = exchange.responses.map((r) => r.status);
    expect(statuses).toContain(400);
    expect(statuses.every((status) => status === 400 || status === 401)).toBe(true);
    expect(exchange.closedByServer).toBe(true);
    for (const response of exchange.responses) expectNoLeak(response.body, [event.headers['Webhook-Signature']!]);
    expectNoLeak(logged.join('\n'), [event.headers['Webhook-Signature']!]);
  });

  it('408: a body that stalls half-way is timed out and the connection closed', async () => {
    const event = signed();
    const body = Buffer.from(event.body);
    const exchange = await rawExchange(
      port,
      async (socket) => {
        await writeQuietly(socket, requestHead(hmacPath, { ...event.headers, 'Content-Length': String(body.length) }));
        await writeQuietly(socket, body.subarray(0, Math.floor(body.length / 2)));
        // ...and never the rest.
      },
      45_000,
    );
    expect(exchange.closedByServer).toBe(true);
    expect(exchange.responses.map((r) => r.status)).toEqual([408]);
    expectRawRefused(exchange.responses[0]!, 408);
  }, 60_000);

  function expectRawRefused(response: ParsedResponse, status: number): void {
    const body = JSON.parse(response.body) as Record<string, unknown>;
    expectRefused({ status: response.status, body, headers: response.headers }, status, undefined);
  }
});

describe('JWT attacks', () => {
  it('control: a valid RS256 token is accepted', async () => {
    await expectAccepted(await deliver(stack, jwtPath, jwtDelivery()));
  });

  it.each(['none', 'None', 'NONE', 'HS256', 'HS512', 'RS512', 'PS256', 'ES384', 'ES256K'])(
    '401: alg %s',
    async (alg) => {
      const hmacAlg = alg.startsWith('HS');
      await refusedJwt(
        jwtDelivery({ header: { alg }, ...(hmacAlg ? { signWith: 'guessed-secret' } : {}) }),
        'jwt_alg_not_allowed',
      );
    },
  );

  it('401: HS256 signed with the RSA public key (algorithm confusion)', async () => {
    const publicPem = createPublicKey(keys.RS256.privateKey).export({ type: 'spki', format: 'pem' });
    await refusedJwt(
      jwtDelivery({ header: { alg: 'HS256' }, signWith: Buffer.from(publicPem) }),
      'jwt_alg_not_allowed',
    );
    const publicJwk = JSON.stringify(keys.RS256.publicJwk);
    await refusedJwt(jwtDelivery({ header: { alg: 'HS256' }, signWith: publicJwk }), 'jwt_alg_not_allowed');
  });

  it('401: an unknown kid', async () => {
    await refusedJwt(jwtDelivery({ key: keys.attacker }), 'unknown_kid');
  });

  it('401: no kid', async () => {
    await refusedJwt(jwtDelivery({ header: { kid: undefined } }), 'jwt_missing_kid');
  });

  it('401: a foreign key signing under a known kid', async () => {
    await refusedJwt(jwtDelivery({ key: keys.RS256, signWith: keys.attacker.privateKey }), 'jwt_signature_invalid');
  });

  it("401: an ES256 token under an RSA key's kid", async () => {
    await refusedJwt(jwtDelivery({ key: keys.ES256, header: { kid: keys.RS256.kid } }), 'unknown_kid');
  });

  it.each([
    ['jwk (the attacker key embedded)', () => ({ jwk: keys.attacker.publicJwk })],
    ['jku (an attacker JWKS URL)', () => ({ jku: `${jwks.url}?attacker` })],
    ['x5u (an attacker certificate URL)', () => ({ x5u: 'https://attacker.example/cert.pem' })],
    ['x5c (an embedded certificate chain)', () => ({ x5c: [Buffer.from('not a certificate').toString('base64')] })],
    ['crit (an unknown critical extension)', () => ({ crit: ['exp'] })],
  ])('401: header parameter %s', async (_label, header) => {
    await refusedJwt(jwtDelivery({ key: keys.attacker, header: header() }), 'jwt_header_forbidden');
    await refusedJwt(jwtDelivery({ key: keys.RS256, header: header() }), 'jwt_header_forbidden');
  });

  it.each(['sub', 'aud', 'exp', 'jti', 'htm', 'htb_s256'])('401: required claim %s missing', async (claim) => {
    await refusedJwt(jwtDelivery({ claims: { [claim]: undefined } }), 'jwt_claim_invalid');
  });

  it('401: sub with a trailing slash, or another tenant', async () => {
    await refusedJwt(jwtDelivery({ claims: { sub: `${stack.service.baseUrl}/` } }), 'jwt_claim_invalid');
    await refusedJwt(jwtDelivery({ claims: { sub: 'https://evil.example' } }), 'jwt_claim_invalid');
  });

  it("401: aud of another listener, or the listener's path only", async () => {
    await refusedJwt(
      jwtDelivery({ claims: { aud: otherAutomation.trigger.incomingWebhook.url } }),
      'jwt_claim_invalid',
    );
    await refusedJwt(jwtDelivery({ claims: { aud: jwtPath } }), 'jwt_claim_invalid');
  });

  it('401: htm "post" (lower case) or "PUT"', async () => {
    await refusedJwt(jwtDelivery({ claims: { htm: 'post' } }), 'jwt_claim_invalid');
    await refusedJwt(jwtDelivery({ claims: { htm: 'PUT' } }), 'jwt_claim_invalid');
  });

  it('401: a valid token replayed with another event id (jti ≠ Webhook-Event-Id)', async () => {
    const original = jwtDelivery();
    const replay = { ...original, headers: { ...original.headers, 'Webhook-Event-Id': randomUUID() } };
    await refusedJwt(replay, 'jwt_claim_invalid');
  });

  it('401: a valid token sent with another body (htb_s256 mismatch)', async () => {
    await refusedJwt(jwtDelivery({ tokenBody: JSON.stringify({ ...PAYLOAD, status: 'hired' }) }), 'jwt_claim_invalid');
  });

  it('401: htb_s256 hex-encoded, padded, or over the body without the last byte', async () => {
    const body = JSON.stringify(PAYLOAD);
    const digest = createHash('sha256').update(body).digest();
    for (const htb of [
      digest.toString('hex'),
      `${digest.toString('base64url')}=`,
      createHash('sha256').update(body.slice(0, -1)).digest('base64url'),
    ]) {
      await refusedJwt(jwtDelivery({ claims: { htb_s256: htb } }), 'jwt_claim_invalid');
    }
  });

  describe('exp (clock pinned)', () => {
    it('200: exp exactly 600 s ahead', async () => {
      const { ms, seconds: now } = pinnedNow();
      await expectAccepted(
        await atPinnedClock(ms, () => deliver(stack, jwtPath, jwtDelivery({ now, claims: { exp: now + 600 } }))),
      );
    });

    it('401: exp 601 s ahead, or a day ahead', async () => {
      for (const ahead of [601, 86_400]) {
        const { ms, seconds: now } = pinnedNow();
        const delivery = jwtDelivery({ now, claims: { exp: now + ahead } });
        const res = await atPinnedClock(ms, () => deliver(stack, jwtPath, delivery));
        expectRefused(res, 401, 'jwt_claim_invalid', tokenLeaks(delivery.token));
      }
    });

    it('401: exp one second past, or exactly now (expired)', async () => {
      for (const behind of [1, 0]) {
        const { ms, seconds: now } = pinnedNow();
        const delivery = jwtDelivery({ now, claims: { exp: now - behind } });
        const res = await atPinnedClock(ms, () => deliver(stack, jwtPath, delivery));
        expectRefused(res, 401, 'jwt_expired', tokenLeaks(delivery.token));
      }
    });

    it('401: exp as a string, and nbf in the future', async () => {
      await refusedJwt(jwtDelivery({ claims: { exp: String(nowSeconds() + 60) } }), 'jwt_claim_invalid');
      await refusedJwt(jwtDelivery({ claims: { nbf: nowSeconds() + 120 } }), 'jwt_claim_invalid');
    });
  });

  it.each([
    ['1024-bit', 'weak1024'],
    ['1536-bit', 'weak1536'],
  ] as const)('401: an RSA key of %s published in the JWKS', async (_label, name) => {
    await refusedJwt(jwtDelivery({ key: keys[name] }), 'jwt_key_rejected');
  });

  it('401: an Ed448 key for EdDSA (Ed25519 only)', async () => {
    await refusedJwt(jwtDelivery({ key: keys.ed448 }), 'jwt_key_rejected');
  });

  it('401: a stripped signature, and a signature spliced from another token', async () => {
    const a = jwtDelivery();
    const stripped = a.token.split('.').slice(0, 2).join('.') + '.';
    await refusedJwt(
      { ...a, token: stripped, headers: { ...a.headers, Authorization: `Bearer ${stripped}` } },
      'jwt_signature_invalid',
    );
    const b = jwtDelivery();
    const spliced = [...a.token.split('.').slice(0, 2), b.token.split('.')[2]].join('.');
    await refusedJwt(
      { ...a, token: spliced, headers: { ...a.headers, Authorization: `Bearer ${spliced}` } },
      'jwt_signature_invalid',
    );
  });

  it.each([
    ['two segments', 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0'],
    ['garbage', 'not-a-jwt'],
    ['an undecodable header', '!!!.eyJzdWIiOiJ4In0.c2ln'],
    ['a JSON array header', `${Buffer.from('[1]').toString('base64url')}.e30.c2ln`],
  ])('401: a malformed token (%s)', async (_label, token) => {
    const delivery = jwtDelivery();
    await refusedJwt(
      { ...delivery, token, headers: { ...delivery.headers, Authorization: `Bearer ${token}` } },
      'jwt_malformed',
    );
  });

  it('401: Authorization with another scheme, two tokens, or no scheme', async () => {
    const delivery = jwtDelivery();
    for (const value of [`Basic ${delivery.token}`, `Bearer ${delivery.token} ${delivery.token}`, delivery.token]) {
      const res = await deliver(stack, jwtPath, {
        ...delivery,
        headers: { ...delivery.headers, Authorization: value },
      });
      expectRefused(res, 401, 'bad_authorization', tokenLeaks(delivery.token));
    }
  });

  it('431: a token too large for the header block is refused by the HTTP server itself', async () => {
    const delivery = jwtDelivery();
    const huge = signCompact({ alg: 'RS256', kid: keys.RS256.kid }, { pad: 'x'.repeat(20_000) }, keys.RS256.privateKey);
    const res = await deliver(stack, jwtPath, {
      ...delivery,
      headers: { ...delivery.headers, Authorization: `Bearer ${huge}` },
    });
    expect(res.status).toBe(431);
    expectNoLeak(JSON.stringify(res.body), tokenLeaks(huge));
  });

  it('401: a missing Authorization header answers with WWW-Authenticate and no token echo', async () => {
    const delivery = jwtDelivery();
    const headers = { ...delivery.headers };
    delete (headers as Record<string, string | undefined>).Authorization;
    const res = await deliver(stack, jwtPath, { headers, body: delivery.body });
    expectRefused(res, 401, 'missing_authorization');
    expect(res.headers['www-authenticate']).toBe('Bearer');
  });
});
