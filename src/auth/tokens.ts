/**
 * Access tokens: short-lived JWTs (ES256) signed by the service with jose. The signing keys are made
 * once and kept in the store, sealed with the secret box, so every API process accepts every
 * other's tokens, a restart does not log callers out, and a database copy alone mints nothing.
 * Keys rotate by `kid`: `rotate` makes a new current key and keeps the replaced ones (public part
 * only) for one token lifetime; all are served at /auth/v1/jwks and tokens of any verify, so tokens
 * signed before a rotation stay valid until they expire — unless the rotation revokes them. Processes pick up a rotation by reloading
 * the key ring when they meet an unknown `kid` and at least once a minute.
 */
import {
  SignJWT,
  jwtVerify,
  exportJWK,
  generateKeyPair,
  importJWK,
  decodeProtectedHeader,
  type JWK,
  type KeyLike,
} from 'jose';
import type { Queryable } from '../store/db';
import { getOrCreateServiceKey, replaceSecret } from '../store/service-keys';
import type { SecretBox } from '../crypto/secret-box';
import { apiClientExists } from '../store/api-clients';
import { isRole, type Principal, type Role } from './roles';
import { randomToken } from '../ids';

const ALG = 'ES256';
const ISSUER = 'urn:automation-governance';
const AUDIENCE = 'urn:automation-governance:api';
/** The `service_secrets` row holding the key ring. */
export const SIGNING_KEY_SECRET = 'access_token_signing_key';
const RELOAD_INTERVAL_MS = 60_000;
const UNKNOWN_KID_RELOAD_COOLDOWN_MS = 5_000;

/**
 * Stored (sealed) form: the current private key and the public parts of the keys it replaced
 * within the last token lifetime (`retiredAt`: when each stopped signing). Older stored forms — a
 * bare JWK, or `{current, previous, rotatedAt}` with one previous key — are read as this one.
 */
interface KeyRing {
  current: JWK;
  retired?: Array<{ jwk: JWK; retiredAt: string }>;
}

/** Most retired keys kept: a longer burst of rotations drops the oldest (its tokens stop verifying early). */
export const MAX_RETIRED_KEYS = 10;

interface LoadedRing {
  raw: string;
  ring: KeyRing;
  privateKey: KeyLike;
  kid: string;
  publicKeys: Map<string, KeyLike>;
  publicJwks: JWK[];
}

async function newPrivateJwk(): Promise<JWK> {
  const generated = await generateKeyPair(ALG, { extractable: true });
  return { ...(await exportJWK(generated.privateKey)), kid: randomToken(12), alg: ALG };
}

function publicPart(jwk: JWK): JWK {
  const { d: _d, ...rest } = jwk;
  return rest;
}

/**
 * A key ring from its stored text: a bare JWK (the format before rotation existed) is the current
 * key; `{current, previous, rotatedAt}` (one previous key) becomes a ring with that retired key.
 */
function parseRing(raw: string): KeyRing {
  const value = JSON.parse(raw) as (KeyRing & { previous?: JWK; rotatedAt?: string }) | JWK;
  if (!('current' in value) || !value.current) return { current: value as JWK };
  const stored = value as KeyRing & { previous?: JWK; rotatedAt?: string };
  const retired =
    stored.retired ??
    (stored.previous ? [{ jwk: stored.previous, retiredAt: stored.rotatedAt ?? new Date(0).toISOString() }] : []);
  return { current: stored.current, retired };
}

async function loadRing(raw: string): Promise<LoadedRing> {
  const ring = parseRing(raw);
  const kid = ring.current.kid ?? '';
  const publicJwks = [ring.current, ...(ring.retired ?? []).map((entry) => entry.jwk)].map((jwk) => ({
    ...publicPart(jwk),
    use: 'sig',
  }));
  const publicKeys = new Map<string, KeyLike>();
  for (const jwk of publicJwks) publicKeys.set(jwk.kid ?? '', (await importJWK(jwk, ALG)) as KeyLike);
  return { raw, ring, privateKey: (await importJWK(ring.current, ALG)) as KeyLike, kid, publicKeys, publicJwks };
}

export class AccessTokens {
  private loadedAt = Date.now();
  private lastUnknownKidReload = 0;

  private constructor(
    private readonly db: Queryable,
    private readonly box: SecretBox,
    private ring: LoadedRing,
    readonly ttlSeconds: number,
  ) {}

  /** Loads the key ring from the store, making it on first use (and sealing a plaintext one). */
  static async load(db: Queryable, box: SecretBox, ttlSeconds: number): Promise<AccessTokens> {
    const candidate = JSON.stringify({ current: await newPrivateJwk() } satisfies KeyRing);
    const raw = await getOrCreateServiceKey(db, box, SIGNING_KEY_SECRET, () => candidate);
    return new AccessTokens(db, box, await loadRing(raw), ttlSeconds);
  }

  /** The `kid` new tokens are signed with. */
  get currentKid(): string {
    return this.ring.kid;
  }

  /** Reads the key ring again (another process may have rotated it). */
  async reload(): Promise<void> {
    const raw = await getOrCreateServiceKey(this.db, this.box, SIGNING_KEY_SECRET, () => this.ring.raw);
    this.loadedAt = Date.now();
    if (raw !== this.ring.raw) this.ring = await loadRing(raw);
  }

  /**
   * Makes a new current key. The replaced one stays valid (public part only) for the tokens it
   * signed, until they have all expired: retired keys older than the token lifetime are dropped,
   * so rotations may follow each other at any pace (a leaked key is retired at once). With
   * `revoke: true` every retired key is dropped too: tokens signed before this rotation stop
   * verifying at once (each process reloads the ring within a minute, or at once on a restart).
   */
  async rotate(
    now = new Date(),
    options: { revoke?: boolean } = {},
  ): Promise<{ kid: string; previousKid: string; retiredKids: string[] }> {
    await this.reload();
    const { ring, raw } = this.ring;
    const live = options.revoke
      ? []
      : [{ jwk: publicPart(ring.current), retiredAt: now.toISOString() }, ...(ring.retired ?? [])]
          .filter((entry) => now.getTime() - Date.parse(entry.retiredAt) < this.ttlSeconds * 1000)
          .slice(0, MAX_RETIRED_KEYS);
    const next: KeyRing = { current: await newPrivateJwk(), retired: live };
    const nextRaw = JSON.stringify(next);
    if (!(await replaceSecret(this.db, this.box, SIGNING_KEY_SECRET, raw, nextRaw))) {
      throw new Error('the signing key ring changed meanwhile (another rotation?); try again');
    }
    this.ring = await loadRing(nextRaw);
    this.loadedAt = Date.now();
    return {
      kid: this.ring.kid,
      previousKid: ring.current.kid ?? '',
      retiredKids: live.map((entry) => entry.jwk.kid ?? ''),
    };
  }

  async issue(clientId: string, roles: Role[]): Promise<string> {
    if (Date.now() - this.loadedAt > RELOAD_INTERVAL_MS) await this.reload().catch(() => undefined);
    return new SignJWT({ roles })
      .setProtectedHeader({ alg: ALG, kid: this.ring.kid, typ: 'at+jwt' })
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setSubject(clientId)
      .setIssuedAt()
      .setJti(randomToken(16))
      .setExpirationTime(`${this.ttlSeconds}s`)
      .sign(this.ring.privateKey);
  }

  /** The caller behind a token, or undefined when the token is invalid or expired. */
  async verify(token: string): Promise<Principal | undefined> {
    let principal: Principal | undefined;
    // A revoking rotation in another process reaches this one within RELOAD_INTERVAL_MS.
    if (Date.now() - this.loadedAt > RELOAD_INTERVAL_MS) await this.reload().catch(() => undefined);
    try {
      const kid = decodeProtectedHeader(token).kid ?? '';
      let key = this.ring.publicKeys.get(kid);
      if (!key && Date.now() - this.lastUnknownKidReload > UNKNOWN_KID_RELOAD_COOLDOWN_MS) {
        this.lastUnknownKidReload = Date.now();
        await this.reload();
        key = this.ring.publicKeys.get(kid);
      }
      if (!key) return undefined;
      const { payload } = await jwtVerify(token, key, {
        algorithms: [ALG],
        issuer: ISSUER,
        audience: AUDIENCE,
        typ: 'at+jwt',
        requiredClaims: ['sub', 'exp'],
      });
      const roles = Array.isArray(payload.roles) ? payload.roles.filter(isRole) : [];
      if (!payload.sub) return undefined;
      principal = { clientId: payload.sub, roles };
    } catch {
      return undefined;
    }
    // A deleted client's tokens are refused at once, not only when they expire. Outside the try:
    // a store failure is not an invalid token (it must not answer 401).
    return (await apiClientExists(this.db, principal.clientId)) ? principal : undefined;
  }

  jwks(): { keys: JWK[] } {
    return { keys: this.ring.publicJwks };
  }
}
