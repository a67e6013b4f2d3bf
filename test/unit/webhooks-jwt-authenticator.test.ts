/**
 * The JWT authentication method (src/webhooks/authenticators/jwt.ts) on the receiving side: the
 * `Authorization: Bearer` reader, the save-time check of `jwksUrl`, and the verifier it makes, which
 * keeps one JwtVerifier (one cached JWKS) per listener and URL: reused for the same URL, replaced
 * when the URL changes, the oldest dropped beyond 10,000 listeners. Against a local JWKS server.
 */
import { jwtAuthenticator, bearerToken } from '../../src/webhooks/authenticators/jwt';
import type { VerifyRequest, VerifyResult } from '../../src/webhooks/authenticators/authenticator';
import {
  makeSigningKey,
  signWebhookJwt,
  startJwksServer,
  type JwksServer,
  type SigningKey,
} from '../fixtures/jwks-server';
import { WebhookRejection } from '../../src/errors';
import { webhookStatus } from '../../src/http/errors';

const BASE_URL = 'https://tenant.example.test';
const EVENT_ID = '3f2504e0-4f89-41d3-9a0c-0305e82c3301';
const BODY = Buffer.from('{"status":"terminated"}');

function rejection(fn: () => unknown): { status: number; reason: string; message: string } {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(WebhookRejection);
    const { reason, message } = err as WebhookRejection;
    return { status: webhookStatus(reason), reason, message };
  }
  throw new Error('expected a WebhookRejection');
}

describe('bearerToken', () => {
  it('trims the header value before reading the scheme', () => {
    expect(bearerToken('  Bearer x.y.z \t')).toBe('x.y.z');
  });

  it.each([undefined, '', '   '])('answers missing_authorization for %j', (value) => {
    expect(rejection(() => bearerToken(value))).toEqual({
      status: 401,
      reason: 'missing_authorization',
      message: 'missing Authorization header',
    });
  });

  it.each(['xBearer x.y.z', 'Token Bearer x.y.z', 'Bearer x.y.z extra'])(
    'refuses %j with the expected form',
    (value) => {
      expect(rejection(() => bearerToken(value))).toEqual({
        status: 401,
        reason: 'bad_authorization',
        message: 'Authorization header must be "Bearer <JWT>"',
      });
    },
  );

  it('takes a token of 16,384 characters and refuses one more', () => {
    const token = 'a'.repeat(16 * 1024);
    expect(bearerToken(`Bearer ${token}`)).toBe(token);
    expect(rejection(() => bearerToken(`Bearer ${token}a`)).reason).toBe('bad_authorization');
  });
});

describe('checkFields', () => {
  it('accepts an https JWKS URL and refuses http unless insecure JWKS are allowed', () => {
    const check = jwtAuthenticator.checkFields;
    expect(
      check({ jwksUrl: 'https://sender.example.com/jwks.json' }, { baseUrl: BASE_URL, allowInsecureJwks: false }),
    ).toEqual([]);
    expect(check({ jwksUrl: 'http://127.0.0.1:1/jwks.json' }, { baseUrl: BASE_URL, allowInsecureJwks: true })).toEqual(
      [],
    );
    const problems = check(
      { jwksUrl: 'http://sender.example.com/jwks.json' },
      { baseUrl: BASE_URL, allowInsecureJwks: false },
    );
    expect(problems).toEqual([{ field: 'jwksUrl', description: expect.stringMatching(/https/) }]);
  });
});

describe('the verifier, one per listener and JWKS URL', () => {
  let a: JwksServer;
  let b: JwksServer;
  let keyA: SigningKey;
  let keyB: SigningKey;

  beforeAll(async () => {
    [keyA, keyB] = await Promise.all([makeSigningKey('ES256', 'key-a'), makeSigningKey('ES256', 'key-b')]);
    [a, b] = await Promise.all([startJwksServer([keyA.publicJwk]), startJwksServer([keyB.publicJwk])]);
  });

  afterAll(async () => {
    await Promise.all([a.close(), b.close()]);
  });

  const listenerUrl = (id: string): string => `${BASE_URL}/api/v1/webhooks/incoming/${id}`;

  function request(
    listenerId: string,
    jwksUrl: string,
    credential: string | undefined,
  ): VerifyRequest<{ jwksUrl: string }> {
    return {
      listenerId,
      listenerUrl: listenerUrl(listenerId),
      fields: { jwksUrl },
      secrets: [],
      credential,
      timestampHeader: '0',
      eventIdHeader: EVENT_ID,
      eventId: EVENT_ID,
      body: BODY,
      nowSeconds: Math.floor(Date.now() / 1000),
    };
  }

  const token = (key: SigningKey, listenerId: string): string =>
    signWebhookJwt({ key, baseUrl: BASE_URL, audience: listenerUrl(listenerId), eventId: EVENT_ID, body: BODY });

  /** The verification's answer: 'accepted', or the reason of the refusal it returned (a refusal is never thrown). */
  async function reason(answer: VerifyResult | Promise<VerifyResult>): Promise<string> {
    const refusal = await answer;
    if (refusal === undefined) return 'accepted';
    expect(refusal).toBeInstanceOf(WebhookRejection);
    expect(webhookStatus(refusal.reason)).toBe(401);
    return refusal.reason;
  }

  it('binds the token to the base URL, listener URL, event id and body', async () => {
    const verify = jwtAuthenticator.createVerifier({ baseUrl: BASE_URL, allowInsecureJwks: true });
    expect(await reason(verify(request('lst_1', a.url, token(keyA, 'lst_1'))))).toBe('accepted');
    expect(await reason(verify(request('lst_2', a.url, token(keyA, 'lst_1'))))).toBe('jwt_claim_invalid');
    expect(
      await reason(
        verify({ ...request('lst_1', a.url, token(keyA, 'lst_1')), eventId: '9f2504e0-4f89-41d3-9a0c-0305e82c3301' }),
      ),
    ).toBe('jwt_claim_invalid');
    expect(await reason(verify({ ...request('lst_1', a.url, token(keyA, 'lst_1')), body: Buffer.from('{}') }))).toBe(
      'jwt_claim_invalid',
    );
    const otherTenant = jwtAuthenticator.createVerifier({
      baseUrl: 'https://other.example.test',
      allowInsecureJwks: true,
    });
    expect(await reason(otherTenant(request('lst_1', a.url, token(keyA, 'lst_1'))))).toBe('jwt_claim_invalid');
  });

  it("judges exp at the delivery's time, not the process clock's", async () => {
    const verify = jwtAuthenticator.createVerifier({ baseUrl: BASE_URL, allowInsecureJwks: true });
    // An hour ago: by the process clock every token below has expired.
    const then = Math.floor(Date.now() / 1000) - 3600;
    const at = (ahead: number): VerifyRequest<{ jwksUrl: string }> => ({
      ...request(
        'lst_1',
        a.url,
        signWebhookJwt({
          key: keyA,
          baseUrl: BASE_URL,
          audience: listenerUrl('lst_1'),
          eventId: EVENT_ID,
          body: BODY,
          nowSeconds: then,
          claims: { exp: then + ahead },
        }),
      ),
      nowSeconds: then,
    });
    expect(await reason(verify(at(600)))).toBe('accepted');
    expect(await reason(verify(at(601)))).toBe('jwt_claim_invalid');
    expect(await reason(verify(at(0)))).toBe('jwt_expired');
  });

  it('refuses an http JWKS URL unless insecure JWKS are allowed', async () => {
    const verify = jwtAuthenticator.createVerifier({ baseUrl: BASE_URL, allowInsecureJwks: false });
    expect(await reason(verify(request('lst_1', a.url, token(keyA, 'lst_1'))))).toBe('jwks_url_refused');
  });

  it('answers a missing credential as a malformed token', async () => {
    const verify = jwtAuthenticator.createVerifier({ baseUrl: BASE_URL, allowInsecureJwks: true });
    expect(await reason(verify(request('lst_1', a.url, undefined)))).toBe('jwt_malformed');
  });

  it('keeps the JWKS of a listener across requests and other listeners', async () => {
    const verify = jwtAuthenticator.createVerifier({ baseUrl: BASE_URL, allowInsecureJwks: true });
    const before = a.fetchCount();
    expect(await reason(verify(request('keep_1', a.url, token(keyA, 'keep_1'))))).toBe('accepted');
    expect(await reason(verify(request('keep_2', a.url, 'x')))).toBe('jwt_malformed');
    expect(await reason(verify(request('keep_1', a.url, token(keyA, 'keep_1'))))).toBe('accepted');
    expect(a.fetchCount() - before).toBe(1);
  });

  it('uses the new JWKS when a listener changes its URL', async () => {
    const verify = jwtAuthenticator.createVerifier({ baseUrl: BASE_URL, allowInsecureJwks: true });
    expect(await reason(verify(request('move', a.url, token(keyA, 'move'))))).toBe('accepted');
    expect(await reason(verify(request('move', b.url, token(keyB, 'move'))))).toBe('accepted');
    expect(await reason(verify(request('move', b.url, token(keyA, 'move'))))).toBe('unknown_kid');
  });

  it('drops the oldest verifier beyond 10,000 listeners', async () => {
    const verify = jwtAuthenticator.createVerifier({ baseUrl: BASE_URL, allowInsecureJwks: true });
    const before = a.fetchCount();
    expect(await reason(verify(request('first', a.url, token(keyA, 'first'))))).toBe('accepted');
    // 9,999 more listeners fill the cache to 10,000 (a malformed token is refused before any fetch).
    for (let i = 1; i < 10_000; i++) await reason(verify(request(`fill_${i}`, a.url, 'x')));
    expect(await reason(verify(request('first', a.url, token(keyA, 'first'))))).toBe('accepted');
    expect(a.fetchCount() - before).toBe(1);
    // The 10,001st listener drops the oldest entry: 'first' (a hit does not make an entry newer).
    await reason(verify(request('fill_10000', a.url, 'x')));
    expect(await reason(verify(request('first', a.url, token(keyA, 'first'))))).toBe('accepted');
    expect(a.fetchCount() - before).toBe(2);
  });
});
