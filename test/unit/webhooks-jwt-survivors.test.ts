/**
 * The JWT verifier's refusals (src/webhooks/jwt.ts) pinned to their exact reason AND message, and
 * the cases webhooks-jwt.test.ts left to a second line of defence: the header checks that refuse
 * before any JWKS fetch (jose would refuse the same token later, after fetching), the missing-claim
 * wording (which `requiredClaims` decides), several keys under one kid, a signed payload that is not
 * JSON, the options that tune the key set, and the clock when no time is given. Found as mutants
 * StrykerJS left alive (docs/testing.md#mutation-testing).
 */
import { generateKeyPairSync } from 'node:crypto';
import { CompactSign, exportJWK } from 'jose';
import { JwtVerifier, toRejection, type JwtCheck } from '../../src/webhooks/jwt';
import {
  JWT_DELIVERY,
  makeSigningKey,
  signCompact,
  signWebhookJwt,
  useThreeKeyJwks,
  type JwksServer,
  type SigningKey,
} from '../fixtures/jwks-server';
import { WebhookRejection } from '../../src/errors';
import { webhookStatus } from '../../src/http/errors';

const { baseUrl: BASE_URL, audience: AUDIENCE, eventId: EVENT_ID, body: BODY } = JWT_DELIVERY;
const NOW = Math.floor(Date.now() / 1000);

let server: JwksServer;
let rsa: SigningKey;
let ec: SigningKey;
let ed: SigningKey;

useThreeKeyJwks((jwks) => ({ server, rsa, ec, ed } = jwks));

function verifier(options: Partial<ConstructorParameters<typeof JwtVerifier>[1]> = {}): JwtVerifier {
  return new JwtVerifier(server.url, { allowInsecure: true, ...options });
}

function token(key: SigningKey, overrides: Partial<Parameters<typeof signWebhookJwt>[0]> = {}): string {
  return signWebhookJwt({
    key,
    baseUrl: BASE_URL,
    audience: AUDIENCE,
    eventId: EVENT_ID,
    body: BODY,
    nowSeconds: NOW,
    ...overrides,
  });
}

function check(tokenText: string, overrides: Partial<JwtCheck> = {}): JwtCheck {
  return {
    token: tokenText,
    baseUrl: BASE_URL,
    audience: AUDIENCE,
    eventId: EVENT_ID,
    body: BODY,
    nowSeconds: NOW,
    ...overrides,
  };
}

/** The refusal of `promise` as status, reason and message. */
async function refusal(promise: Promise<unknown>): Promise<{ status: number; reason: string; message: string }> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(WebhookRejection);
  const { reason, message } = err as WebhookRejection;
  return { status: webhookStatus(reason), reason, message };
}

const wait = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('refusals before any JWKS fetch', () => {
  it.each([
    ['two parts', 'a.b'],
    ['five parts', 'a.b.c.d.e'],
  ])('a token that is not three parts (%s)', async (_name, t) => {
    const v = verifier();
    expect(await refusal(v.verify(check(t)))).toEqual({
      status: 401,
      reason: 'jwt_malformed',
      message: 'Authorization does not carry a compact JWS',
    });
    expect(v.jwksFetchCount).toBe(0);
  });

  it('a header that does not decode', async () => {
    expect(await refusal(verifier().verify(check('a.b.c')))).toEqual({
      status: 401,
      reason: 'jwt_malformed',
      message: 'JWT header cannot be decoded',
    });
  });

  it('a valid token longer than 16 KiB, and one of exactly 16 KiB accepted', async () => {
    const long = token(ec, { claims: { pad: 'x'.repeat(13_000) } });
    expect(long.length).toBeGreaterThan(16 * 1024);
    expect(await refusal(verifier().verify(check(long)))).toEqual({
      status: 401,
      reason: 'jwt_malformed',
      message: 'Authorization does not carry a compact JWS',
    });
    // The padding that makes the token exactly 16,384 characters (base64url skips some lengths).
    let exact: string | undefined;
    for (let n = 11_500; n < 12_500 && exact === undefined; n++) {
      const t = token(ec, { claims: { pad: 'x'.repeat(n) } });
      if (t.length === 16 * 1024) exact = t;
    }
    expect(exact?.length).toBe(16 * 1024);
    await expect(verifier().verify(check(exact ?? ''))).resolves.toBeUndefined();
  });

  it.each([
    ['none', (): string => signCompact({ alg: 'none', kid: 'rsa-1' }, { sub: BASE_URL }, '')],
    ['HS256', (): string => token(rsa, { header: { alg: 'HS256' }, signWith: 'secret' })],
    ['RS384', (): string => token(rsa, { header: { alg: 'RS384' } })],
  ])('alg %s', async (_alg, make) => {
    const v = verifier();
    expect(await refusal(v.verify(check(make())))).toEqual({
      status: 401,
      reason: 'jwt_alg_not_allowed',
      message: 'JWT alg must be one of RS256, ES256, EdDSA',
    });
    expect(v.jwksFetchCount).toBe(0);
  });

  it('an embedded jku, with the parameter named', async () => {
    expect(
      await refusal(verifier().verify(check(token(rsa, { header: { jku: 'https://attacker.example/jwks.json' } })))),
    ).toEqual({
      status: 401,
      reason: 'jwt_header_forbidden',
      message: 'JWT header parameter jku is not accepted',
    });
  });

  it.each([
    ['absent', undefined],
    ['empty', ''],
  ])('a kid that is %s', async (_name, kid) => {
    const v = verifier();
    expect(await refusal(v.verify(check(token(rsa, { header: { kid } }))))).toEqual({
      status: 401,
      reason: 'jwt_missing_kid',
      message: 'JWT header kid is required',
    });
    expect(v.jwksFetchCount).toBe(0);
  });
});

describe('key refusals', () => {
  it('an unknown kid', async () => {
    const other = await makeSigningKey('ES256', 'not-published');
    expect(await refusal(verifier().verify(check(token(other))))).toEqual({
      status: 401,
      reason: 'unknown_kid',
      message: 'no JWKS key matches the JWT kid and alg',
    });
  });

  it('a foreign key under a known kid', async () => {
    const foreign = await makeSigningKey('ES256', 'ec-1');
    expect(await refusal(verifier().verify(check(token(foreign))))).toEqual({
      status: 401,
      reason: 'jwt_signature_invalid',
      message: 'JWT signature is invalid',
    });
  });

  it('an Ed448 key for EdDSA', async () => {
    const pair = generateKeyPairSync('ed448');
    const jwk = { ...(await exportJWK(pair.publicKey)), kid: 'ed448', alg: 'EdDSA', use: 'sig' };
    server.setKeys([jwk]);
    const key: SigningKey = { alg: 'EdDSA', kid: 'ed448', privateKey: pair.privateKey, publicJwk: jwk };
    expect(await refusal(verifier().verify(check(token(key))))).toEqual({
      status: 401,
      reason: 'jwt_key_rejected',
      message: 'EdDSA tokens must be signed with an Ed25519 key',
    });
  });

  it('an RSA key under 2048 bits', async () => {
    const weak = await makeSigningKey('RS256', 'weak', { modulusLength: 1024 });
    server.setKeys([weak.publicJwk]);
    expect(await refusal(verifier().verify(check(token(weak))))).toEqual({
      status: 401,
      reason: 'jwt_key_rejected',
      message: 'JWKS key is not acceptable for this algorithm',
    });
  });

  it('a JWKS member that carries a private key', async () => {
    server.setKeys([{ ...(await exportJWK(rsa.privateKey)), kid: 'rsa-1', alg: 'RS256' }]);
    expect(await refusal(verifier().verify(check(token(rsa))))).toEqual({
      status: 401,
      reason: 'jwks_invalid',
      message: 'JWKS key cannot be used',
    });
  });
});

describe('several JWKS keys under one kid', () => {
  it('skips an Ed448 candidate and verifies with the Ed25519 one', async () => {
    const ed448 = {
      ...(await exportJWK(generateKeyPairSync('ed448').publicKey)),
      kid: 'ed-1',
      alg: 'EdDSA',
      use: 'sig',
    };
    server.setKeys([ed448, ed.publicJwk]);
    await expect(verifier().verify(check(token(ed)))).resolves.toBeUndefined();
  });

  it('refuses when none of them verifies', async () => {
    const [a, b] = await Promise.all([makeSigningKey('ES256', 'ec-1'), makeSigningKey('ES256', 'ec-1')]);
    server.setKeys([a.publicJwk, b.publicJwk]);
    expect(await refusal(verifier().verify(check(token(ec))))).toEqual({
      status: 401,
      reason: 'jwt_signature_invalid',
      message: 'JWT signature does not verify with any matching JWKS key',
    });
  });

  it('answers the claim refusal of the key that verifies, not a signature failure', async () => {
    const other = await makeSigningKey('ES256', 'ec-1');
    server.setKeys([other.publicJwk, ec.publicJwk]);
    expect(await refusal(verifier().verify(check(token(ec, { claims: { exp: NOW - 10 } }))))).toEqual({
      status: 401,
      reason: 'jwt_expired',
      message: 'JWT has expired',
    });
  });
});

describe('claim refusals, with the claim and the fault named', () => {
  it.each(['sub', 'aud', 'exp', 'jti', 'htm', 'htb_s256'])('a token without %s', async (claim) => {
    expect(await refusal(verifier().verify(check(token(rsa, { claims: { [claim]: undefined } }))))).toEqual({
      status: 401,
      reason: 'jwt_claim_invalid',
      message: `JWT claim ${claim} is missing`,
    });
  });

  // Titles name no time-dependent value: StrykerJS finds a test again by its title.
  it.each<[string, string, unknown]>([
    ['sub', 'JWT claim sub does not match the service base URL', 'https://other.example.test'],
    ['aud', 'JWT claim aud does not match the listener URL', 'https://other.example.test'],
    ['exp', 'JWT claim exp is invalid', 'soon'],
    ['nbf', 'JWT claim nbf is invalid', NOW + 120],
    ['exp', 'JWT claim exp is more than 600 seconds ahead', NOW + 601],
    ['jti', 'JWT claim jti does not match Webhook-Event-Id', '3f2504e0-4f89-41d3-9a0c-0305e82c3302'],
    ['htm', 'JWT claim htm must be POST', 'GET'],
    ['htb_s256', 'JWT claim htb_s256 does not match the SHA-256 of the request body', 'AAAA'],
  ])('a wrong %s: %s', async (claim, message, value) => {
    expect(await refusal(verifier().verify(check(token(ec, { claims: { [claim]: value } }))))).toEqual({
      status: 401,
      reason: 'jwt_claim_invalid',
      message,
    });
  });

  it('a signed payload that is not a JSON object', async () => {
    const t = await new CompactSign(new TextEncoder().encode('not json'))
      .setProtectedHeader({ alg: 'ES256', kid: 'ec-1' })
      .sign(ec.privateKey);
    expect(await refusal(verifier().verify(check(t)))).toEqual({
      status: 401,
      reason: 'jwt_malformed',
      message: 'JWT is malformed',
    });
  });
});

describe('the clock and the key-set options', () => {
  it('reads the clock in seconds when no time is given', async () => {
    const now = Math.floor(Date.now() / 1000);
    await expect(
      verifier().verify(check(token(rsa, { nowSeconds: now }), { nowSeconds: undefined })),
    ).resolves.toBeUndefined();
    // Issued 400 s ago with a 300 s lifetime: expired by the clock (a time that is not a number would expire nothing).
    expect(
      await refusal(verifier().verify(check(token(rsa, { nowSeconds: now - 400 }), { nowSeconds: undefined }))),
    ).toEqual({
      status: 401,
      reason: 'jwt_expired',
      message: 'JWT has expired',
    });
  });

  it('passes cooldownMs on: a short cooldown refetches for an unknown kid', async () => {
    const v = verifier({ cooldownMs: 1 });
    await v.verify(check(token(rsa)));
    const rotated = await makeSigningKey('ES256', 'ec-rotated');
    server.setKeys([rotated.publicJwk]);
    await wait(20);
    await expect(v.verify(check(token(rotated)))).resolves.toBeUndefined();
    expect(v.jwksFetchCount).toBe(2);
  });

  it('passes cacheMaxAgeMs on: a short maximum age refetches', async () => {
    const v = verifier({ cacheMaxAgeMs: 1 });
    await v.verify(check(token(rsa)));
    await wait(20);
    await v.verify(check(token(rsa)));
    expect(v.jwksFetchCount).toBe(2);
  });

  it('passes failureCooldownMs on: a short one retries a failed fetch', async () => {
    server.setHandler((_req, res) => {
      res.writeHead(503);
      res.end();
    });
    const v = verifier({ failureCooldownMs: 1 });
    expect((await refusal(v.verify(check(token(rsa))))).reason).toBe('jwks_unreachable');
    await wait(20);
    expect((await refusal(v.verify(check(token(rsa))))).reason).toBe('jwks_unreachable');
    expect(v.jwksFetchCount).toBe(2);
  });
});

describe('errors from outside jose', () => {
  /** An Error carrying a Node error code, as node:crypto and OpenSSL raise them. */
  function coded(code: unknown, Type: ErrorConstructor = Error): Error {
    return Object.assign(new Type('from crypto'), { code });
  }

  it.each(['ERR_CRYPTO_INVALID_KEYTYPE', 'ERR_OSSL_EVP_DECODE_ERROR', 'ERR_OSSL_RSA_DATA_TOO_LARGE_FOR_MODULUS'])(
    'refuses a crypto error %s as an unacceptable key (401 jwt_key_rejected)',
    (code) => {
      const result = toRejection(coded(code));
      expect(result).toBeInstanceOf(WebhookRejection);
      expect(webhookStatus((result as WebhookRejection).reason)).toBe(401);
      expect(result).toMatchObject({
        reason: 'jwt_key_rejected',
        message: 'JWKS key is not acceptable for this algorithm',
      });
    },
  );

  it('refuses a TypeError whatever its code (a JWK that does not import)', () => {
    expect(toRejection(coded(undefined, TypeError))).toMatchObject({ reason: 'jwt_key_rejected' });
  });

  it.each([
    ['a plain Error', new Error('store down')],
    ['an error with another Node code', coded('ERR_HTTP_HEADERS_SENT')],
    ['a code that only contains ERR_OSSL', coded('X_ERR_OSSL')],
    ['a code that is not a string', coded(42)],
    ['a thrown string', 'boom'],
    ['null', null],
  ])('passes %s through unchanged (the caller answers 500)', (_what, err) => {
    expect(toRejection(err)).toBe(err);
  });

  it('passes a refusal through as it is', () => {
    const refusal = toRejection(coded('ERR_OSSL_X'));
    expect(toRejection(refusal)).toBe(refusal);
  });
});
