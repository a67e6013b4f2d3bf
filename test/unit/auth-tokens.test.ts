/**
 * Access tokens (src/auth/tokens.ts) on a real PGlite store: what a token carries, and every way a
 * token is refused (expired, another key, issuer, audience, type, algorithm, claims missing, client
 * deleted), key rotation with and without revocation, and how a second process picks a rotation up.
 * Tokens that the service would never issue are signed here with the stored private key itself, so
 * that only the claim under test differs from a valid one. The clock is `Date.now`, moved by a spy.
 */
import { randomBytes } from 'node:crypto';
import { SignJWT, importJWK, decodeProtectedHeader, generateKeyPair, type JWK, type KeyLike } from 'jose';
import { AccessTokens, MAX_RETIRED_KEYS, SIGNING_KEY_SECRET } from '../../src/auth/tokens';
import { SecretBox } from '../../src/crypto/secret-box';
import { createClient, deleteClient } from '../../src/auth/clients';
import { getOrCreateServiceKey } from '../../src/store/service-keys';
import type { Db } from '../../src/store/db';
import { openTestDb, PGLITE } from '../helpers/databases';

const ISSUER = 'urn:automation-governance';
const AUDIENCE = 'urn:automation-governance:api';
const TTL = 600;

let db: Db;
let box: SecretBox;
let clientId: string;

beforeAll(async () => {
  db = await openTestDb(PGLITE);
  box = new SecretBox(randomBytes(32));
  ({
    client: { clientId },
  } = await createClient(db, box, { displayName: 'tokens test', roles: ['admin'] }));
});

afterAll(async () => {
  await db.close();
});

afterEach(() => {
  jest.restoreAllMocks();
});

/** Moves the clock `ms` ahead of the real one (for the reload interval and cooldown). */
function advanceClock(ms: number): void {
  const realNow = Date.now.bind(Date);
  jest.spyOn(Date, 'now').mockImplementation(() => realNow() + ms);
}

/** The current private signing key as stored (sealed) in the store. */
async function currentPrivateKey(): Promise<{ key: KeyLike; kid: string }> {
  // The ring exists already: the generated value is sealed but never stored (ON CONFLICT DO NOTHING).
  const raw = await getOrCreateServiceKey(db, box, SIGNING_KEY_SECRET, () => '');
  const ring = JSON.parse(raw) as { current: JWK };
  return { key: (await importJWK(ring.current, 'ES256')) as KeyLike, kid: ring.current.kid! };
}

interface Forge {
  claims?: Record<string, unknown>;
  header?: Record<string, unknown>;
  issuer?: string | null;
  audience?: string | null;
  subject?: string | null;
  expiresAt?: number | null;
  key?: KeyLike;
}

/** A token signed with the service's current key; each field overrides one part of a valid token. */
async function forge(options: Forge = {}): Promise<string> {
  const current = await currentPrivateKey();
  const now = Math.floor(Date.now() / 1000);
  const jwt = new SignJWT({ roles: ['admin'], ...options.claims }).setProtectedHeader({
    alg: 'ES256',
    kid: current.kid,
    typ: 'at+jwt',
    ...options.header,
  } as { alg: string });
  if (options.issuer !== null) jwt.setIssuer(options.issuer ?? ISSUER);
  if (options.audience !== null) jwt.setAudience(options.audience ?? AUDIENCE);
  if (options.subject !== null) jwt.setSubject(options.subject ?? clientId);
  if (options.expiresAt !== null) jwt.setExpirationTime(options.expiresAt ?? now + 60);
  jwt.setIssuedAt(now);
  return jwt.sign(options.key ?? current.key);
}

describe('AccessTokens', () => {
  let tokens: AccessTokens;

  beforeAll(async () => {
    tokens = await AccessTokens.load(db, box, TTL);
  });

  it('issues a token that verifies to its client and roles, with the claims the API promises', async () => {
    const token = await tokens.issue(clientId, ['admin', 'read_only']);
    await expect(tokens.verify(token)).resolves.toEqual({ clientId, roles: ['admin', 'read_only'] });

    const header = decodeProtectedHeader(token);
    expect(header).toEqual({ alg: 'ES256', kid: tokens.currentKid, typ: 'at+jwt' });
    const payload = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8')) as Record<
      string,
      unknown
    >;
    expect(payload.iss).toBe(ISSUER);
    expect(payload.aud).toBe(AUDIENCE);
    expect(payload.sub).toBe(clientId);
    expect(payload.roles).toEqual(['admin', 'read_only']);
    expect(payload.exp).toBe((payload.iat as number) + TTL);
    expect(typeof payload.jti).toBe('string');
    expect((payload.jti as string).length).toBeGreaterThanOrEqual(20);
    expect(tokens.ttlSeconds).toBe(TTL);
  });

  it('two tokens for the same client differ (a fresh jti each)', async () => {
    const a = await tokens.issue(clientId, ['admin']);
    const b = await tokens.issue(clientId, ['admin']);
    expect(a).not.toBe(b);
  });

  it("a second process on the same store shares the key: it verifies the first one's tokens", async () => {
    const other = await AccessTokens.load(db, box, TTL);
    expect(other.currentKid).toBe(tokens.currentKid);
    await expect(other.verify(await tokens.issue(clientId, ['admin']))).resolves.toEqual({
      clientId,
      roles: ['admin'],
    });
  });

  it('the key ring is stored sealed: another secret key cannot load it', async () => {
    await expect(AccessTokens.load(db, new SecretBox(randomBytes(32)), TTL)).rejects.toThrow();
  });

  it('a forged token with every claim right verifies (the forging itself is sound)', async () => {
    await expect(tokens.verify(await forge())).resolves.toEqual({ clientId, roles: ['admin'] });
  });

  it.each<[string, Forge]>([
    ['expired', { expiresAt: Math.floor(Date.now() / 1000) - 120 }],
    ['without exp', { expiresAt: null }],
    ['without sub', { subject: null }],
    ['with an empty sub', { subject: '' }],
    ['from another issuer', { issuer: 'urn:someone-else' }],
    ['without an issuer', { issuer: null }],
    ['for another audience', { audience: 'urn:automation-governance:other' }],
    ['without an audience', { audience: null }],
    ['of another type', { header: { typ: 'JWT' } }],
    ['without a type', { header: { typ: undefined } }],
    ['with an unknown kid', { header: { kid: 'no-such-key' } }],
    ['without a kid', { header: { kid: undefined } }],
  ])('refuses a token %s', async (_what, options) => {
    await expect(tokens.verify(await forge(options))).resolves.toBeUndefined();
  });

  it('refuses a token signed with another key under the right kid', async () => {
    const stranger = await generateKeyPair('ES256');
    await expect(tokens.verify(await forge({ key: stranger.privateKey }))).resolves.toBeUndefined();
  });

  it('refuses another algorithm (HS256 keyed with anything) and malformed tokens', async () => {
    const hs = await new SignJWT({ roles: ['super_admin'] })
      .setProtectedHeader({ alg: 'HS256', kid: tokens.currentKid, typ: 'at+jwt' })
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setSubject(clientId)
      .setExpirationTime('1m')
      .sign(randomBytes(32));
    await expect(tokens.verify(hs)).resolves.toBeUndefined();
    await expect(tokens.verify('not.a.token')).resolves.toBeUndefined();
    await expect(tokens.verify('')).resolves.toBeUndefined();
    const valid = await tokens.issue(clientId, ['admin']);
    const [h, p, s] = valid.split('.');
    const otherPayload = Buffer.from(
      JSON.stringify({ ...JSON.parse(Buffer.from(p!, 'base64url').toString()), roles: ['super_admin'] }),
    ).toString('base64url');
    await expect(tokens.verify(`${h}.${otherPayload}.${s}`)).resolves.toBeUndefined();
  });

  it('keeps only known roles; roles that are not a list give none', async () => {
    await expect(tokens.verify(await forge({ claims: { roles: ['admin', 'root', 7, 'read_only'] } }))).resolves.toEqual(
      {
        clientId,
        roles: ['admin', 'read_only'],
      },
    );
    await expect(tokens.verify(await forge({ claims: { roles: 'super_admin' } }))).resolves.toEqual({
      clientId,
      roles: [],
    });
    await expect(tokens.verify(await forge({ claims: { roles: undefined } }))).resolves.toEqual({
      clientId,
      roles: [],
    });
  });

  it('refuses the tokens of a client deleted since, at once', async () => {
    const { client } = await createClient(db, box, { displayName: 'short-lived', roles: ['read_only'] });
    const token = await tokens.issue(client.clientId, ['read_only']);
    await expect(tokens.verify(token)).resolves.toEqual({ clientId: client.clientId, roles: ['read_only'] });
    expect(await deleteClient(db, client.id)).toBe(true);
    await expect(tokens.verify(token)).resolves.toBeUndefined();
  });

  it('a store failure while checking the client is an error, not an invalid token', async () => {
    const token = await tokens.issue(clientId, ['admin']);
    const failing = { query: () => Promise.reject(new Error('store down')) } as unknown as Db;
    const broken = await AccessTokens.load(
      {
        query: (sql: string, params?: unknown[]) =>
          sql.includes('service_secrets') ? db.query(sql, params) : failing.query(sql, params),
      } as Db,
      box,
      TTL,
    );
    await expect(broken.verify(token)).rejects.toThrow('store down');
  });
});

describe('AccessTokens key rotation', () => {
  let rotDb: Db;
  let rotClient: string;

  beforeAll(async () => {
    rotDb = await openTestDb(PGLITE);
  });

  beforeEach(async () => {
    // Every test starts without a key ring (cheaper than a new database each).
    await rotDb.query('DELETE FROM service_secrets');
    await rotDb.query('DELETE FROM api_clients');
    ({
      client: { clientId: rotClient },
    } = await createClient(rotDb, box, { displayName: 'rotation', roles: ['super_admin'] }));
  });

  afterAll(async () => {
    await rotDb.close();
  });

  it('rotate makes a new current key; tokens of the replaced key still verify; both keys are published', async () => {
    const tokens = await AccessTokens.load(rotDb, box, TTL);
    const before = await tokens.issue(rotClient, ['super_admin']);
    const oldKid = tokens.currentKid;
    const result = await tokens.rotate();
    expect(result.previousKid).toBe(oldKid);
    expect(result.kid).toBe(tokens.currentKid);
    expect(result.kid).not.toBe(oldKid);
    expect(result.retiredKids).toEqual([oldKid]);

    const after = await tokens.issue(rotClient, ['super_admin']);
    expect(decodeProtectedHeader(after).kid).toBe(result.kid);
    await expect(tokens.verify(before)).resolves.toEqual({ clientId: rotClient, roles: ['super_admin'] });
    await expect(tokens.verify(after)).resolves.toEqual({ clientId: rotClient, roles: ['super_admin'] });

    const jwks = tokens.jwks();
    expect(jwks.keys.map((key) => key.kid)).toEqual([result.kid, oldKid]);
    for (const key of jwks.keys) {
      expect(key).not.toHaveProperty('d');
      expect(key).toMatchObject({ kty: 'EC', crv: 'P-256', alg: 'ES256', use: 'sig' });
    }
  });

  it('rotate with revoke drops every replaced key: their tokens stop verifying at once', async () => {
    const tokens = await AccessTokens.load(rotDb, box, TTL);
    const before = await tokens.issue(rotClient, ['super_admin']);
    await tokens.rotate();
    const middle = await tokens.issue(rotClient, ['super_admin']);
    const result = await tokens.rotate(new Date(), { revoke: true });
    expect(result.retiredKids).toEqual([]);
    expect(tokens.jwks().keys.map((key) => key.kid)).toEqual([result.kid]);
    await expect(tokens.verify(before)).resolves.toBeUndefined();
    await expect(tokens.verify(middle)).resolves.toBeUndefined();
    await expect(tokens.verify(await tokens.issue(rotClient, ['super_admin']))).resolves.toEqual({
      clientId: rotClient,
      roles: ['super_admin'],
    });
  });

  it('a replaced key is kept for one token lifetime: dropped at exactly TTL after it retired, kept 1 ms before', async () => {
    const tokens = await AccessTokens.load(rotDb, box, TTL);
    const t0 = Date.parse('2026-11-24T00:00:00.000Z');
    const first = await tokens.rotate(new Date(t0));
    const second = await tokens.rotate(new Date(t0 + TTL * 1000 - 1));
    // The first replaced key retired at t0: 1 ms short of a lifetime, it is kept.
    expect(second.retiredKids).toEqual([first.kid, first.previousKid]);
    const third = await tokens.rotate(new Date(t0 + TTL * 1000));
    // At exactly one lifetime after t0 the first replaced key goes; the one replaced at t0+TTL-1 stays.
    expect(third.retiredKids).toEqual([second.kid, first.kid]);
    expect(tokens.jwks().keys.map((key) => key.kid)).toEqual([third.kid, second.kid, first.kid]);
  });

  it(`keeps at most ${MAX_RETIRED_KEYS} replaced keys, newest first`, async () => {
    const tokens = await AccessTokens.load(rotDb, box, TTL);
    const now = new Date();
    const kids: string[] = [tokens.currentKid];
    let last: Awaited<ReturnType<AccessTokens['rotate']>> | undefined;
    for (let i = 0; i < MAX_RETIRED_KEYS + 2; i += 1) {
      last = await tokens.rotate(now);
      kids.push(last.kid);
    }
    // kids: the first key and every later one; the last is current, the ten before it are kept.
    expect(last!.retiredKids).toEqual(kids.slice(0, -1).reverse().slice(0, MAX_RETIRED_KEYS));
    expect(tokens.jwks().keys).toHaveLength(MAX_RETIRED_KEYS + 1);
  });

  it('another process verifies tokens of a key it has not loaded yet (reload on an unknown kid)', async () => {
    const a = await AccessTokens.load(rotDb, box, TTL);
    const b = await AccessTokens.load(rotDb, box, TTL);
    const rotated = await a.rotate();
    expect(b.currentKid).toBe(rotated.previousKid);
    const token = await a.issue(rotClient, ['super_admin']);
    await expect(b.verify(token)).resolves.toEqual({ clientId: rotClient, roles: ['super_admin'] });
    expect(b.currentKid).toBe(rotated.kid);
  });

  it('unknown kids reload the ring at most once per cooldown (5 s)', async () => {
    const a = await AccessTokens.load(rotDb, box, TTL);
    const b = await AccessTokens.load(rotDb, box, TTL);
    // An unknown kid makes b reload (nothing new there).
    const forged = await new SignJWT({})
      .setProtectedHeader({ alg: 'ES256', kid: 'nobody', typ: 'at+jwt' })
      .sign((await generateKeyPair('ES256')).privateKey);
    await expect(b.verify(forged)).resolves.toBeUndefined();
    await a.rotate();
    const token = await a.issue(rotClient, ['super_admin']);
    // Within the cooldown, b does not read the store again: the new kid is still unknown to it.
    await expect(b.verify(token)).resolves.toBeUndefined();
    advanceClock(5_001);
    await expect(b.verify(token)).resolves.toEqual({ clientId: rotClient, roles: ['super_admin'] });
  });

  it('a revoking rotation elsewhere reaches a process within a minute (periodic reload), not before', async () => {
    const a = await AccessTokens.load(rotDb, box, TTL);
    const b = await AccessTokens.load(rotDb, box, TTL);
    const token = await b.issue(rotClient, ['super_admin']);
    await a.rotate(new Date(), { revoke: true });
    // b still holds the old ring: the old kid is known to it, the token verifies.
    await expect(b.verify(token)).resolves.toEqual({ clientId: rotClient, roles: ['super_admin'] });
    advanceClock(60_001);
    await expect(b.verify(token)).resolves.toBeUndefined();
    // The reload also changed what b signs with.
    expect(b.currentKid).toBe(a.currentKid);
  });

  it("issue picks up another process's rotation after a minute", async () => {
    const a = await AccessTokens.load(rotDb, box, TTL);
    const b = await AccessTokens.load(rotDb, box, TTL);
    const rotated = await a.rotate();
    expect(decodeProtectedHeader(await b.issue(rotClient, [])).kid).toBe(rotated.previousKid);
    advanceClock(60_001);
    expect(decodeProtectedHeader(await b.issue(rotClient, [])).kid).toBe(rotated.kid);
  });

  it('the periodic reload comes strictly after 60 s: not at exactly 60 000 ms, at 60 001 ms', async () => {
    const t0 = Date.now();
    const clockAt = jest.spyOn(Date, 'now').mockReturnValue(t0);
    const a = await AccessTokens.load(rotDb, box, TTL);
    const b = await AccessTokens.load(rotDb, box, TTL);
    const rotated = await a.rotate(new Date(t0));
    clockAt.mockReturnValue(t0 + 60_000);
    expect(decodeProtectedHeader(await b.issue(rotClient, [])).kid).toBe(rotated.previousKid);
    clockAt.mockReturnValue(t0 + 60_001);
    expect(decodeProtectedHeader(await b.issue(rotClient, [])).kid).toBe(rotated.kid);
  });

  it('rotate reads the ring first: a process with a stale ring rotates from the newest one', async () => {
    const a = await AccessTokens.load(rotDb, box, TTL);
    const b = await AccessTokens.load(rotDb, box, TTL);
    const first = await a.rotate();
    const second = await b.rotate();
    expect(second.previousKid).toBe(first.kid);
    expect(second.retiredKids).toEqual([first.kid, first.previousKid]);
  });

  it('reads the older stored forms: a bare JWK, and {current, previous, rotatedAt}', async () => {
    const bare = await AccessTokens.load(rotDb, box, TTL);
    const raw = await getOrCreateServiceKey(rotDb, box, SIGNING_KEY_SECRET, () => '');
    const current = (JSON.parse(raw) as { current: JWK }).current;

    const legacyDb = rotDb;
    await rotDb.query('DELETE FROM service_secrets');
    {
      await getOrCreateServiceKey(legacyDb, box, SIGNING_KEY_SECRET, () => JSON.stringify(current));
      const fromBare = await AccessTokens.load(legacyDb, box, TTL);
      expect(fromBare.currentKid).toBe(bare.currentKid);
      expect(fromBare.jwks().keys.map((key) => key.kid)).toEqual([bare.currentKid]);
    }

    const previousDb = rotDb;
    await rotDb.query('DELETE FROM service_secrets');
    {
      const newer = (await generateKeyPair('ES256', { extractable: true })).privateKey;
      const { exportJWK } = await import('jose');
      const newerJwk = { ...(await exportJWK(newer)), kid: 'newer', alg: 'ES256' };
      const { d: _d, ...previousPublic } = current;
      await getOrCreateServiceKey(previousDb, box, SIGNING_KEY_SECRET, () =>
        JSON.stringify({ current: newerJwk, previous: previousPublic, rotatedAt: new Date().toISOString() }),
      );
      const fromPrevious = await AccessTokens.load(previousDb, box, TTL);
      expect(fromPrevious.currentKid).toBe('newer');
      expect(fromPrevious.jwks().keys.map((key) => key.kid)).toEqual(['newer', current.kid]);
      // A token signed with the previous key still verifies against the older form.
      const { client } = await createClient(previousDb, box, { displayName: 'legacy', roles: ['admin'] });
      const oldToken = await new SignJWT({ roles: ['admin'] })
        .setProtectedHeader({ alg: 'ES256', kid: current.kid!, typ: 'at+jwt' })
        .setIssuer(ISSUER)
        .setAudience(AUDIENCE)
        .setSubject(client.clientId)
        .setExpirationTime('1m')
        .sign((await importJWK(current, 'ES256')) as KeyLike);
      await expect(fromPrevious.verify(oldToken)).resolves.toEqual({ clientId: client.clientId, roles: ['admin'] });
      // Retired just now (rotatedAt): the next rotation keeps it.
      const rotated = await fromPrevious.rotate();
      expect(rotated.retiredKids).toEqual(['newer', current.kid]);
    }

    // Without rotatedAt the previous key counts as retired long ago: the next rotation drops it.
    await rotDb.query('DELETE FROM service_secrets');
    const { d: _d2, ...previousPublic } = current;
    await getOrCreateServiceKey(rotDb, box, SIGNING_KEY_SECRET, () =>
      JSON.stringify({ current: { ...current, kid: 'cur' }, previous: { ...previousPublic, kid: 'old' } }),
    );
    const undated = await AccessTokens.load(rotDb, box, TTL);
    expect(undated.jwks().keys.map((key) => key.kid)).toEqual(['cur', 'old']);
    expect((await undated.rotate()).retiredKids).toEqual(['cur']);
  });
});
