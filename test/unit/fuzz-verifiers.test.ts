/**
 * Property-based fuzzing (fast-check) of the pure webhook verifiers: random and mutated headers,
 * signatures, CIDR lists, addresses, bodies and JWTs. Whatever comes in, a check either answers or
 * throws a WebhookRejection with a 4xx status: nothing else escapes (no TypeError, no RangeError,
 * no jose error), so the receiver can never turn a hostile request into a 500.
 */
import net from 'node:net';
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import {
  checkWebhookHeaders,
  isAddressAllowed,
  JwtVerifier,
  parseCidr,
  parseCidrList,
  parseWebhookJson,
  signHmac,
  verifyHmac,
} from '../../src/webhooks';
import { WebhookRejection } from '../../src/errors';
import { webhookStatus } from '../../src/http/errors';

const RUNS = { numRuns: 200 };
const NOW = Math.floor(Date.now() / 1000);

/** Runs `fn`; a throw must be a WebhookRejection whose status is one of `statuses`. */
function onlyRejections<T>(fn: () => T, statuses: number[] = [400, 401, 403, 404, 409, 413]): T | WebhookRejection {
  try {
    return fn();
  } catch (err) {
    if (!(err instanceof WebhookRejection)) throw new Error(`escaped: ${String(err)}`, { cause: err });
    expect(statuses).toContain(webhookStatus(err.reason));
    expect(err.message.length).toBeGreaterThan(0);
    return err;
  }
}

async function onlyRejectionsAsync(fn: () => Promise<unknown>, statuses: number[]): Promise<unknown> {
  try {
    return await fn();
  } catch (err) {
    if (!(err instanceof WebhookRejection)) throw new Error(`escaped: ${String(err)}`, { cause: err });
    expect(statuses).toContain(webhookStatus(err.reason));
    return err;
  }
}

/** Any string: ASCII, full Unicode (lone surrogates included), control characters. */
const anyText = fc.oneof(
  fc.string({ maxLength: 80 }),
  fc.string({ unit: 'binary', maxLength: 80 }),
  fc.string({
    unit: fc.constantFrom('\u0000', '\r', '\n', ' ', '\t', ';', '=', '"', '\ud800', '\u00e9', '.', '-', '/'),
    maxLength: 20,
  }),
);

/** `valid` after a few random edits: insertions, deletions, replacements, case flips. */
function mutated(valid: fc.Arbitrary<string>): fc.Arbitrary<string> {
  const edit = fc.record({
    kind: fc.constantFrom('insert', 'delete', 'replace', 'upper', 'lower', 'trim', 'double'),
    at: fc.nat(),
    text: fc.string({ unit: 'binary', minLength: 1, maxLength: 3 }),
  });
  return fc.tuple(valid, fc.array(edit, { maxLength: 3 })).map(([start, edits]) => {
    let s = start;
    for (const e of edits) {
      const i = s.length === 0 ? 0 : e.at % (s.length + 1);
      if (e.kind === 'insert') s = s.slice(0, i) + e.text + s.slice(i);
      else if (e.kind === 'delete') s = s.slice(0, i) + s.slice(i + 1);
      else if (e.kind === 'replace') s = s.slice(0, i) + e.text + s.slice(i + e.text.length);
      else if (e.kind === 'upper') s = s.toUpperCase();
      else if (e.kind === 'lower') s = s.toLowerCase();
      else if (e.kind === 'trim') s = ` ${s}\t`;
      else s = s + s;
    }
    return s;
  });
}

const maybe = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined });

describe('checkWebhookHeaders', () => {
  const validTimestamp = fc.integer({ min: NOW - 400, max: NOW + 400 }).map(String);
  const eventId = fc.oneof(fc.uuid({ version: 4 }), fc.uuid(), mutated(fc.uuid({ version: 4 })), anyText);
  const contentType = fc.oneof(
    fc.constantFrom(
      'application/json',
      'application/json; charset=utf-8',
      'APPLICATION/JSON;charset="UTF-8"',
      'text/plain',
      'application/json; charset=latin1',
    ),
    mutated(fc.constant('application/json; charset=utf-8')),
    anyText,
  );
  const timestamp = fc.oneof(validTimestamp, mutated(validTimestamp), fc.bigInt().map(String), anyText);
  const authorization = fc.oneof(
    fc.constantFrom('Bearer a.b.c', 'bearer  token', 'Basic dXNlcjpwYXNz', 'Bearer', 'Bearer a b'),
    mutated(fc.constant('Bearer eyJhbGciOiJFUzI1NiJ9.e30.sig')),
    fc.string({ minLength: 16_000, maxLength: 17_000 }).map((s) => `Bearer ${s.replace(/\s/g, 'x')}`),
    anyText,
  );

  // Random headers are almost never all valid at once (0 of 200 were): half the inputs are made
  // well-formed by construction, so that the accepting branch runs, and the test counts it.
  const wellFormed = fc.record({
    contentType: fc.constantFrom(
      'application/json',
      'application/json; charset=utf-8',
      'APPLICATION/JSON;charset="UTF-8"',
    ),
    timestamp: fc.integer({ min: NOW - 300, max: NOW + 300 }).map(String),
    eventId: fc.tuple(fc.uuid({ version: 4 }), fc.boolean()).map(([id, upper]) => (upper ? id.toUpperCase() : id)),
    signature: fc.base64String({ minLength: 4, maxLength: 64 }).map((s) => `v1,${s}`),
    authorization: fc.stringMatching(/^[A-Za-z0-9_.-]{1,60}$/).map((t) => `Bearer ${t}`),
    authMethod: fc.constantFrom('HMAC' as const, 'JWT' as const),
    nowSeconds: fc.constant(NOW),
  });
  const random = fc.record({
    contentType: maybe(contentType),
    timestamp: maybe(timestamp),
    eventId: maybe(eventId),
    signature: maybe(anyText),
    authorization: maybe(authorization),
    authMethod: fc.constantFrom('HMAC' as const, 'JWT' as const),
    nowSeconds: fc.oneof(fc.constant(NOW), fc.double({ noNaN: false })),
  });

  it('parses or rejects with 400/401, and what it accepts is well-formed', () => {
    let accepted = 0;
    fc.assert(
      fc.property(fc.oneof(random, wellFormed), (input) => {
        const result = onlyRejections(() => checkWebhookHeaders(input), [400, 401]);
        if (result instanceof WebhookRejection) return;
        accepted++;
        expect(result.eventId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
        expect(result.eventId).toBe(input.eventId!.toLowerCase());
        expect(result.timestamp).toBe(Number(input.timestamp));
        expect(Math.abs(result.timestamp - Math.floor(input.nowSeconds))).toBeLessThanOrEqual(300);
        if (input.authMethod === 'JWT')
          expect(`Bearer ${result.token}`).toBe(input.authorization!.trim().replace(/^bearer\s+/i, 'Bearer '));
        else expect(result.signature).toBe(input.signature!.trim());
      }),
      RUNS,
    );
    // The accepting branch ran: at least a quarter of the inputs got through (about half are well-formed).
    expect(accepted).toBeGreaterThanOrEqual(RUNS.numRuns / 4);
  });
});

describe('verifyHmac', () => {
  const body = fc.oneof(
    fc.string({ unit: 'binary' }),
    fc.uint8Array({ maxLength: 256 }).map((bytes) => Buffer.from(bytes)),
  );

  it('answers a boolean for any input, and never throws', () => {
    fc.assert(
      fc.property(anyText, anyText, anyText, body, anyText, (secret, ts, id, raw, signature) => {
        expect(typeof verifyHmac(secret, ts, id, raw, signature)).toBe('boolean');
      }),
      RUNS,
    );
  });

  it('accepts exactly the right signature: any mutation of it fails', () => {
    fc.assert(
      fc.property(
        anyText,
        fc.integer({ min: 0 }).map(String),
        fc.uuid({ version: 4 }),
        body,
        fc.nat(),
        (secret, ts, id, raw, seed) => {
          const signature = signHmac(secret, ts, id, raw);
          expect(verifyHmac(secret, ts, id, raw, signature)).toBe(true);
          const at = seed % signature.length;
          const flipped = signature.slice(0, at) + (signature[at] === 'A' ? 'B' : 'A') + signature.slice(at + 1);
          expect(verifyHmac(secret, ts, id, raw, flipped)).toBe(false);
          expect(verifyHmac(secret, ts, id, raw, `${signature}=`)).toBe(false);
          expect(verifyHmac(secret, `${ts} `, id, raw, signature)).toBe(false);
        },
      ),
      RUNS,
    );
  });
});

describe('parseCidrList and isAddressAllowed', () => {
  const cidrText = fc.oneof(
    fc.tuple(fc.ipV4(), fc.integer({ min: -1, max: 40 })).map(([ip, prefix]) => `${ip}/${prefix}`),
    fc.tuple(fc.ipV6(), fc.integer({ min: -1, max: 140 })).map(([ip, prefix]) => `${ip}/${prefix}`),
    fc.ipV4(),
    fc.ipV6(),
    fc.ipV4Extended(),
    mutated(fc.constantFrom('10.0.0.0/8', '::ffff:192.168.1.1/120', '2001:db8::/32', '0.0.0.0/0', '::/0')),
    anyText,
  );
  const entry = fc.oneof(
    cidrText,
    cidrText,
    fc.integer(),
    fc.constant(null),
    fc.object({ maxDepth: 1 }),
    fc.array(fc.string(), { maxLength: 2 }),
  );
  const list = fc.oneof(
    fc.array(entry, { maxLength: 8 }),
    fc.array(fc.ipV4(), { minLength: 99, maxLength: 102 }),
    anyText,
    fc.integer(),
    fc.constant(null),
  );
  const address = fc.oneof(
    fc.ipV4(),
    fc.ipV6(),
    fc.ipV4().map((ip) => `::ffff:${ip}`),
    fc.ipV6().map((ip) => `${ip}%eth0`),
    mutated(fc.ipV4()),
    anyText,
  );

  it('parseCidrList answers ok or an error with an index, never throws, and its output is canonical', () => {
    fc.assert(
      fc.property(list, (input) => {
        const result = parseCidrList(input);
        if (!result.ok) {
          expect(typeof result.error).toBe('string');
          expect(result.index).toBeGreaterThanOrEqual(-1);
          return;
        }
        expect(result.cidrs.length).toBeLessThanOrEqual(100);
        expect(parseCidrList(result.cidrs)).toEqual(result);
      }),
      RUNS,
    );
  });

  it('isAddressAllowed answers a boolean for any address and any stored list, never throws', () => {
    fc.assert(
      fc.property(address, fc.array(cidrText, { maxLength: 5 }), (source, cidrs) => {
        const stored = parseCidrList(cidrs);
        expect(typeof isAddressAllowed(source, stored.ok ? stored.cidrs : cidrs)).toBe('boolean');
      }),
      RUNS,
    );
  });

  it('a host allows itself, IPv4-mapped or not; an empty list allows anything', () => {
    fc.assert(
      fc.property(fc.ipV4(), address, (ip, other) => {
        const parsed = parseCidrList([ip]);
        expect(parsed.ok).toBe(true);
        if (!parsed.ok) return;
        expect(isAddressAllowed(ip, parsed.cidrs)).toBe(true);
        expect(isAddressAllowed(`::ffff:${ip}`, parsed.cidrs)).toBe(true);
        expect(isAddressAllowed(other, [])).toBe(true);
        expect('error' in parseCidr(`${ip}/33`)).toBe(true);
      }),
      RUNS,
    );
  });
});

describe('parseWebhookJson', () => {
  it('returns the JSON value or rejects with 400 invalid_json', () => {
    const body = fc.oneof(
      fc.json().map((text) => Buffer.from(text)),
      mutated(fc.json()).map((text) => Buffer.from(text)),
      fc.uint8Array({ maxLength: 200 }).map((bytes) => Buffer.from(bytes)),
      fc.string({ unit: 'binary' }).map((text) => Buffer.from(text, 'utf16le')),
      fc.constantFrom(
        Buffer.alloc(0),
        Buffer.from([0xef, 0xbb, 0xbf, 0x7b, 0x7d]),
        Buffer.from('{"a":1}\u0000'),
        Buffer.from('[[[[[[[[[['),
      ),
    );
    fc.assert(
      fc.property(body, (raw) => {
        const result = onlyRejections(() => parseWebhookJson(raw), [400]);
        if (result instanceof WebhookRejection) expect(result.reason).toBe('invalid_json');
        // (a UTF-8 byte order mark is skipped, as TextDecoder does)
        else expect(JSON.parse(new TextDecoder().decode(raw))).toEqual(result);
      }),
      RUNS,
    );
  });

  it('accepts every JSON document', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        expect(parseWebhookJson(Buffer.from(JSON.stringify(value)))).toEqual(JSON.parse(JSON.stringify(value)));
      }),
      RUNS,
    );
  });
});

describe('JwtVerifier.verify', () => {
  let closedPort: number;
  let verifier: JwtVerifier;

  beforeAll(async () => {
    // A port that was just free: nothing listens there, the JWKS fetch is refused.
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    closedPort = (server.address() as net.AddressInfo).port;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    verifier = new JwtVerifier(`http://127.0.0.1:${closedPort}/jwks.json`, {
      allowInsecure: true,
      timeoutMs: 2000,
      failureCooldownMs: 50,
    });
  });

  const b64 = (value: unknown) =>
    Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');
  const header = fc.record(
    {
      alg: fc.oneof(fc.constantFrom('RS256', 'ES256', 'EdDSA', 'none', 'HS256', 'PS256'), fc.string(), fc.integer()),
      kid: fc.oneof(fc.string(), fc.constant(''), fc.integer(), fc.constant(null)),
      typ: fc.constant('JWT'),
      jku: fc.webUrl(),
      crit: fc.array(fc.string(), { maxLength: 2 }),
      b64: fc.boolean(),
      x5c: fc.array(fc.base64String(), { maxLength: 1 }),
    },
    { requiredKeys: [] },
  );
  const payload = fc.oneof(
    fc.record(
      {
        sub: fc.oneof(fc.webUrl(), fc.integer()),
        aud: fc.oneof(fc.webUrl(), fc.array(fc.webUrl(), { maxLength: 2 })),
        exp: fc.oneof(fc.integer({ min: NOW - 1000, max: NOW + 1000 }), fc.double(), fc.string()),
        jti: fc.oneof(fc.uuid({ version: 4 }), fc.string()),
        htm: fc.constantFrom('POST', 'GET', 1),
        htb_s256: fc.base64String(),
        nbf: fc.integer(),
        iat: fc.integer(),
      },
      { requiredKeys: [] },
    ),
    fc.jsonValue(),
  );
  const segment = fc.oneof(
    fc.base64String({ maxLength: 40 }).map((s) => s.replace(/=/g, '')),
    fc.string({ maxLength: 40 }),
  );
  const token = fc.oneof(
    fc.tuple(header, payload, segment).map(([h, p, s]) => `${b64(h)}.${b64(p)}.${s}`),
    fc.tuple(fc.jsonValue(), fc.jsonValue(), segment).map(([h, p, s]) => `${b64(h)}.${b64(p)}.${s}`),
    fc.tuple(segment, segment, segment).map((parts) => parts.join('.')),
    mutated(fc.constant(`${b64({ alg: 'ES256', kid: 'k1' })}.${b64({ sub: 'x' })}.c2ln`)),
    fc.string({ unit: 'binary', maxLength: 100 }),
    fc.constant('a'.repeat(20_000)),
  );

  it('rejects every random token with a 401, whatever the claims, headers and body', async () => {
    await fc.assert(
      fc.asyncProperty(
        token,
        fc.oneof(fc.webUrl(), anyText),
        fc.oneof(fc.webUrl(), anyText),
        fc.oneof(fc.uuid({ version: 4 }), anyText),
        fc.uint8Array({ maxLength: 64 }),
        async (jwt, baseUrl, audience, eventId, body) => {
          const result = await onlyRejectionsAsync(
            () => verifier.verify({ token: jwt, baseUrl, audience, eventId, body: Buffer.from(body), nowSeconds: NOW }),
            [401],
          );
          expect(result).toBeInstanceOf(WebhookRejection);
        },
      ),
      { numRuns: 150 },
    );
  });

  it('a JWKS URL the policy refuses is a 401 too', async () => {
    const refused = new JwtVerifier('http://127.0.0.1:1/jwks.json', { allowInsecure: false });
    const jwt = `${b64({ alg: 'ES256', kid: 'k' })}.${b64({ jti: randomUUID() })}.c2ln`;
    const result = await onlyRejectionsAsync(
      () =>
        refused.verify({
          token: jwt,
          baseUrl: 'https://t.example',
          audience: 'https://t.example/x',
          eventId: randomUUID(),
          body: Buffer.alloc(0),
        }),
      [401],
    );
    expect((result as WebhookRejection).reason).toBe('jwks_url_refused');
  });
});
