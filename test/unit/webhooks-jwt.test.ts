import { createPublicKey, generateKeyPairSync } from 'node:crypto';
import { exportJWK } from 'jose';
import { JwtVerifier, type JwtCheck } from '../../src/webhooks/jwt';
import {
  JWT_DELIVERY,
  makeSigningKey,
  signCompact,
  signWebhookJwt,
  startJwksServer,
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

function verifier(options: Partial<ConstructorParameters<typeof JwtVerifier>[1]> = {}, url = server.url): JwtVerifier {
  return new JwtVerifier(url, { allowInsecure: true, ...options });
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

async function rejection(promise: Promise<unknown>): Promise<{ status: number; reason: string }> {
  try {
    await promise;
  } catch (err) {
    expect(err).toBeInstanceOf(WebhookRejection);
    const { reason } = err as WebhookRejection;
    return { status: webhookStatus(reason), reason };
  }
  throw new Error('expected a WebhookRejection');
}

describe('JwtVerifier: valid tokens', () => {
  it.each(['RS256', 'ES256', 'EdDSA'] as const)('accepts %s', async (alg) => {
    const key = { RS256: rsa, ES256: ec, EdDSA: ed }[alg];
    await expect(verifier().verify(check(token(key)))).resolves.toBeUndefined();
  });

  it('compares jti case-insensitively', async () => {
    await expect(
      verifier().verify(check(token(rsa, { claims: { jti: EVENT_ID.toUpperCase() } }))),
    ).resolves.toBeUndefined();
  });

  it('accepts exp exactly 600 s ahead', async () => {
    await expect(verifier().verify(check(token(ec, { claims: { exp: NOW + 600 } })))).resolves.toBeUndefined();
  });

  it('accepts aud as an array containing the listener URL', async () => {
    await expect(
      verifier().verify(check(token(ed, { claims: { aud: ['other', AUDIENCE] } }))),
    ).resolves.toBeUndefined();
  });

  it('fetches the JWKS once for many tokens', async () => {
    const v = verifier();
    const before = server.fetchCount();
    for (const key of [rsa, ec, ed, rsa, ec]) await v.verify(check(token(key)));
    expect(server.fetchCount() - before).toBe(1);
    expect(v.jwksFetchCount).toBe(1);
  });

  it('shares one fetch between concurrent first verifications', async () => {
    const v = verifier();
    const before = server.fetchCount();
    await Promise.all([rsa, ec, ed].map((key) => v.verify(check(token(key)))));
    expect(server.fetchCount() - before).toBe(1);
  });

  it('tries every key that shares a kid', async () => {
    const twin = await makeSigningKey('RS256', 'rsa-1');
    server.setKeys([twin.publicJwk, rsa.publicJwk]);
    await expect(verifier().verify(check(token(rsa)))).resolves.toBeUndefined();
    const stranger = await makeSigningKey('RS256', 'rsa-1');
    expect(await rejection(verifier().verify(check(token(stranger))))).toEqual({
      status: 401,
      reason: 'jwt_signature_invalid',
    });
  });
});

describe('JwtVerifier: header and signature refusals', () => {
  it('refuses alg none', async () => {
    const t = signCompact({ alg: 'none', kid: 'rsa-1' }, { sub: BASE_URL }, '');
    expect(await rejection(verifier().verify(check(t)))).toEqual({ status: 401, reason: 'jwt_alg_not_allowed' });
  });

  it('refuses HS256 signed with the RSA public key', async () => {
    const publicPem = createPublicKey(rsa.privateKey).export({ type: 'spki', format: 'pem' });
    const t = token(rsa, { header: { alg: 'HS256' }, signWith: publicPem });
    expect(await rejection(verifier().verify(check(t)))).toEqual({ status: 401, reason: 'jwt_alg_not_allowed' });
  });

  it.each(['RS384', 'PS256', 'ES384', 'ES512', 'HS512'])('refuses alg %s', async (alg) => {
    const t = token(rsa, { header: { alg } });
    expect(await rejection(verifier().verify(check(t)))).toEqual({ status: 401, reason: 'jwt_alg_not_allowed' });
  });

  it('refuses an unknown kid', async () => {
    const other = await makeSigningKey('RS256', 'not-published');
    expect(await rejection(verifier().verify(check(token(other))))).toEqual({ status: 401, reason: 'unknown_kid' });
  });

  it('refuses a kid published for another algorithm', async () => {
    const t = token(ec, { header: { kid: 'rsa-1' } });
    expect(await rejection(verifier().verify(check(t)))).toEqual({ status: 401, reason: 'unknown_kid' });
  });

  it('refuses a foreign key under a known kid', async () => {
    const foreign = await makeSigningKey('ES256', 'ec-1');
    expect(await rejection(verifier().verify(check(token(foreign))))).toEqual({
      status: 401,
      reason: 'jwt_signature_invalid',
    });
  });

  it('refuses a token without kid', async () => {
    expect(await rejection(verifier().verify(check(token(rsa, { header: { kid: undefined } }))))).toEqual({
      status: 401,
      reason: 'jwt_missing_kid',
    });
  });

  it.each([
    ['jwk', async () => ({ ...(await makeSigningKey('RS256', 'x')).publicJwk })],
    ['jku', async () => 'https://attacker.example/jwks.json'],
    ['x5u', async () => 'https://attacker.example/cert.pem'],
    ['x5c', async () => ['MIIB']],
    ['crit', async () => ['exp']],
  ])('refuses an embedded %s header', async (name, value) => {
    const t = token(rsa, { header: { [name]: await value() } });
    const v = verifier();
    expect(await rejection(v.verify(check(t)))).toEqual({ status: 401, reason: 'jwt_header_forbidden' });
    expect(v.jwksFetchCount).toBe(0);
  });

  it('refuses a self-signed token carrying its own jwk', async () => {
    const attacker = await makeSigningKey('RS256', 'rsa-1');
    const t = token(attacker, { header: { jwk: attacker.publicJwk } });
    expect(await rejection(verifier().verify(check(t)))).toEqual({ status: 401, reason: 'jwt_header_forbidden' });
  });

  it.each([
    ['empty', ''],
    ['two parts', 'a.b'],
    ['garbage header', 'a.b.c'],
    ['JWE shape', 'a.b.c.d.e'],
  ])('refuses a malformed token (%s)', async (_name, t) => {
    expect(await rejection(verifier().verify(check(t)))).toEqual({ status: 401, reason: 'jwt_malformed' });
  });

  it('refuses a tampered payload', async () => {
    const [h, , s] = token(rsa).split('.');
    const forged = Buffer.from(
      JSON.stringify({ sub: BASE_URL, aud: AUDIENCE, exp: NOW + 60, jti: EVENT_ID, htm: 'POST' }),
    ).toString('base64url');
    expect(await rejection(verifier().verify(check(`${h}.${forged}.${s}`)))).toEqual({
      status: 401,
      reason: 'jwt_signature_invalid',
    });
  });

  it('refuses an RSA key under 2048 bits', async () => {
    const weak = await makeSigningKey('RS256', 'weak', { modulusLength: 1024 });
    server.setKeys([weak.publicJwk]);
    expect(await rejection(verifier().verify(check(token(weak))))).toEqual({ status: 401, reason: 'jwt_key_rejected' });
  });

  it('refuses an Ed448 key for EdDSA', async () => {
    const pair = generateKeyPairSync('ed448');
    const jwk = { ...(await exportJWK(pair.publicKey)), kid: 'ed448', alg: 'EdDSA', use: 'sig' };
    server.setKeys([jwk]);
    const key: SigningKey = { alg: 'EdDSA', kid: 'ed448', privateKey: pair.privateKey, publicJwk: jwk };
    expect(await rejection(verifier().verify(check(token(key))))).toEqual({ status: 401, reason: 'jwt_key_rejected' });
  });

  it('refuses a JWKS member that carries a private key', async () => {
    const privateJwk = { ...(await exportJWK(rsa.privateKey)), kid: 'rsa-1', alg: 'RS256' };
    server.setKeys([privateJwk]);
    expect(await rejection(verifier().verify(check(token(rsa))))).toEqual({ status: 401, reason: 'jwks_invalid' });
  });
});

describe('JwtVerifier: claim refusals', () => {
  it.each(['sub', 'aud', 'exp', 'jti', 'htm', 'htb_s256'])('refuses a token without %s', async (claim) => {
    const t = token(rsa, { claims: { [claim]: undefined } });
    expect(await rejection(verifier().verify(check(t)))).toEqual({ status: 401, reason: 'jwt_claim_invalid' });
  });

  it.each([
    ['sub', 'https://other.example.test'],
    ['sub', `${BASE_URL}/`],
    ['aud', `${BASE_URL}/api/v1/webhooks/incoming/lst_other`],
    ['aud', ['https://other.example.test']],
    ['jti', '3f2504e0-4f89-41d3-9a0c-0305e82c3302'],
    ['jti', 42],
    ['htm', 'GET'],
    ['htm', 'post'],
    ['htb_s256', 'cboFB3-nsKSV5NiWMJ7Kcy5WS1zAmX2vu6_R-Uzm_dU='],
    ['htb_s256', 'AAAA'],
    ['exp', 'soon'],
    ['nbf', NOW + 120],
  ])('refuses a wrong %s (%j)', async (claim, value) => {
    const t = token(ec, { claims: { [claim]: value } });
    expect(await rejection(verifier().verify(check(t)))).toEqual({ status: 401, reason: 'jwt_claim_invalid' });
  });

  it('names the claim in the message', async () => {
    const t = token(ec, { claims: { aud: 'https://elsewhere' } });
    await expect(verifier().verify(check(t))).rejects.toThrow(/aud/);
  });

  it('refuses a body that does not match htb_s256', async () => {
    const t = token(ed);
    expect(
      await rejection(verifier().verify(check(t, { body: Buffer.from('{"employee_id":"12345","status":"hired"}') }))),
    ).toEqual({
      status: 401,
      reason: 'jwt_claim_invalid',
    });
  });

  it('refuses a jti that differs from the event id of the request', async () => {
    const t = token(ed);
    expect(await rejection(verifier().verify(check(t, { eventId: '9f2504e0-4f89-41d3-9a0c-0305e82c3301' })))).toEqual({
      status: 401,
      reason: 'jwt_claim_invalid',
    });
  });

  it.each([0, -1, -3600])('refuses exp %i s from now as expired', async (offset) => {
    const t = token(rsa, { claims: { exp: NOW + offset } });
    expect(await rejection(verifier().verify(check(t)))).toEqual({ status: 401, reason: 'jwt_expired' });
  });

  it.each([601, 3600])('refuses exp %i s ahead', async (offset) => {
    const t = token(rsa, { claims: { exp: NOW + offset } });
    expect(await rejection(verifier().verify(check(t)))).toEqual({ status: 401, reason: 'jwt_claim_invalid' });
  });

  it('checks the signature before any claim', async () => {
    const foreign = await makeSigningKey('RS256', 'rsa-1');
    const t = token(foreign, { claims: { exp: NOW - 10, aud: 'x' } });
    expect(await rejection(verifier().verify(check(t)))).toEqual({ status: 401, reason: 'jwt_signature_invalid' });
  });

  it('never puts the token or the body in the message', async () => {
    const t = token(rsa, { claims: { htb_s256: 'AAAA' } });
    const err = await verifier()
      .verify(check(t))
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(err).toBeInstanceOf(WebhookRejection);
    expect((err as WebhookRejection).reason).toBe('jwt_claim_invalid');
    const message = (err as Error).message;
    expect(message).toContain('htb_s256');
    expect(message).not.toContain(t);
    expect(message).not.toContain(t.split('.')[2]);
    expect(message).not.toContain('employee_id');
  });
});

describe('JwtVerifier: JWKS retrieval', () => {
  it('refuses when the JWKS is unreachable (closed port)', async () => {
    const gone = await startJwksServer([rsa.publicJwk]);
    const url = gone.url;
    await gone.close();
    expect(await rejection(verifier({}, url).verify(check(token(rsa))))).toEqual({
      status: 401,
      reason: 'jwks_unreachable',
    });
  });

  it('refuses an http URL when insecure JWKS are not allowed, without fetching', async () => {
    const before = server.fetchCount();
    const v = new JwtVerifier(server.url, { allowInsecure: false });
    expect(await rejection(v.verify(check(token(rsa))))).toEqual({ status: 401, reason: 'jwks_url_refused' });
    expect(server.fetchCount()).toBe(before);
  });

  it('refuses a loopback https URL when insecure JWKS are not allowed', async () => {
    const port = new URL(server.url).port;
    for (const url of [
      `https://127.0.0.1:${port}/jwks.json`,
      `https://[::1]:${port}/jwks.json`,
      `https://localhost:${port}/jwks.json`,
    ]) {
      expect(await rejection(new JwtVerifier(url, { allowInsecure: false }).verify(check(token(rsa))))).toEqual({
        status: 401,
        reason: 'jwks_url_refused',
      });
    }
  });

  it('does not follow redirects', async () => {
    const target = await startJwksServer([rsa.publicJwk]);
    try {
      server.setHandler((_req, res) => {
        res.writeHead(302, { location: target.url });
        res.end();
      });
      expect(await rejection(verifier().verify(check(token(rsa))))).toEqual({
        status: 401,
        reason: 'jwks_unreachable',
      });
      expect(target.fetchCount()).toBe(0);
    } finally {
      await target.close();
    }
  });

  it.each([404, 500])('refuses HTTP %i from the JWKS endpoint', async (status) => {
    server.setHandler((_req, res) => {
      res.writeHead(status);
      res.end();
    });
    expect(await rejection(verifier().verify(check(token(rsa))))).toEqual({ status: 401, reason: 'jwks_unreachable' });
  });

  it('refuses a JWKS response over the size cap, declared or streamed', async () => {
    const padding = 'x'.repeat(10_000);
    server.setHandler((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ keys: [rsa.publicJwk], padding }));
    });
    expect(await rejection(verifier({ maxBytes: 4096 }).verify(check(token(rsa))))).toEqual({
      status: 401,
      reason: 'jwks_unreachable',
    });
    server.setHandler((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write(`{"keys":[${JSON.stringify(rsa.publicJwk)}],"padding":"`);
      const timer = setInterval(() => {
        if (!res.writable) {
          clearInterval(timer);
          return;
        }
        res.write(padding);
      }, 5);
      res.on('close', () => clearInterval(timer));
    });
    expect(await rejection(verifier({ maxBytes: 4096 }).verify(check(token(rsa))))).toEqual({
      status: 401,
      reason: 'jwks_unreachable',
    });
  });

  it('gives up on a JWKS endpoint that does not answer in time', async () => {
    server.setHandler(() => {
      // never answers
    });
    expect(await rejection(verifier({ timeoutMs: 200 }).verify(check(token(rsa))))).toEqual({
      status: 401,
      reason: 'jwks_unreachable',
    });
  });

  it.each([
    ['not JSON', 'not json'],
    ['no keys', '{}'],
    ['keys not an array', '{"keys":{}}'],
    ['a key that is not an object', '{"keys":[1]}'],
  ])('refuses a JWKS document that is %s', async (_name, body) => {
    server.setHandler((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(body);
    });
    expect(await rejection(verifier().verify(check(token(rsa))))).toEqual({ status: 401, reason: 'jwks_invalid' });
  });

  it('remembers a failed fetch for a short while', async () => {
    server.setHandler((_req, res) => {
      res.writeHead(503);
      res.end();
    });
    const v = verifier();
    const before = server.fetchCount();
    expect((await rejection(v.verify(check(token(rsa))))).reason).toBe('jwks_unreachable');
    expect((await rejection(v.verify(check(token(rsa))))).reason).toBe('jwks_unreachable');
    expect(server.fetchCount() - before).toBe(1);
  });

  it('does not refetch for an unknown kid during the cooldown', async () => {
    const v = verifier({ cooldownMs: 30_000 });
    await v.verify(check(token(rsa)));
    const rotated = await makeSigningKey('RS256', 'rsa-2');
    server.setKeys([rsa.publicJwk, rotated.publicJwk]);
    expect(await rejection(v.verify(check(token(rotated))))).toEqual({ status: 401, reason: 'unknown_kid' });
    expect(v.jwksFetchCount).toBe(1);
  });

  it('refetches on an unknown kid after the cooldown (key rotation)', async () => {
    const v = verifier({ cooldownMs: 0 });
    const before = server.fetchCount();
    await v.verify(check(token(rsa)));
    const rotated = await makeSigningKey('ES256', 'ec-2');
    server.setKeys([rotated.publicJwk]);
    await expect(v.verify(check(token(rotated)))).resolves.toBeUndefined();
    expect(server.fetchCount() - before).toBe(2);
    // The old key is gone after the rotation.
    expect(await rejection(v.verify(check(token(rsa))))).toEqual({ status: 401, reason: 'unknown_kid' });
  });

  it('refetches a cached JWKS older than its maximum age', async () => {
    const v = verifier({ cacheMaxAgeMs: 0 });
    const before = server.fetchCount();
    await v.verify(check(token(rsa)));
    await v.verify(check(token(rsa)));
    expect(server.fetchCount() - before).toBe(2);
  });
});
