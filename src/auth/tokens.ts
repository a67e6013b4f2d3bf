/**
 * Access tokens: short-lived JWTs (ES256) signed by the service with jose. The signing key is made
 * once and kept in the store, so every API process accepts every other's tokens and a restart does
 * not log callers out. Public keys are served at /auth/v1/jwks.
 */
import { SignJWT, jwtVerify, exportJWK, generateKeyPair, importJWK, type JWK, type KeyLike } from 'jose';
import type { Queryable } from '../store/db';
import { getOrCreateSecret } from '../store/secrets';
import { isRole, type Principal, type Role } from './roles';
import { randomToken } from '../ids';

const ALG = 'ES256';
const ISSUER = 'urn:automation-governance';
const AUDIENCE = 'urn:automation-governance:api';

export class AccessTokens {
  private constructor(
    private readonly privateKey: KeyLike,
    private readonly publicKey: KeyLike,
    private readonly publicJwk: JWK,
    readonly ttlSeconds: number,
  ) {}

  /** Loads the signing key from the store, making it on first use. */
  static async load(db: Queryable, ttlSeconds: number): Promise<AccessTokens> {
    const generated = await generateKeyPair(ALG, { extractable: true });
    const candidate = JSON.stringify({ ...(await exportJWK(generated.privateKey)), kid: randomToken(12), alg: ALG });
    const stored = JSON.parse(await getOrCreateSecret(db, 'access_token_signing_key', () => candidate)) as JWK;
    const { d: _d, ...publicJwk } = stored;
    const privateKey = (await importJWK(stored, ALG)) as KeyLike;
    const publicKey = (await importJWK(publicJwk, ALG)) as KeyLike;
    return new AccessTokens(privateKey, publicKey, { ...publicJwk, use: 'sig' }, ttlSeconds);
  }

  async issue(clientId: string, roles: Role[]): Promise<string> {
    return new SignJWT({ roles })
      .setProtectedHeader({ alg: ALG, kid: this.publicJwk.kid ?? '', typ: 'at+jwt' })
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setSubject(clientId)
      .setIssuedAt()
      .setJti(randomToken(16))
      .setExpirationTime(`${this.ttlSeconds}s`)
      .sign(this.privateKey);
  }

  /** The caller behind a token, or undefined when the token is invalid or expired. */
  async verify(token: string): Promise<Principal | undefined> {
    try {
      const { payload } = await jwtVerify(token, this.publicKey, {
        algorithms: [ALG],
        issuer: ISSUER,
        audience: AUDIENCE,
        typ: 'at+jwt',
        requiredClaims: ['sub', 'exp'],
      });
      const roles = Array.isArray(payload.roles) ? payload.roles.filter(isRole) : [];
      if (!payload.sub) return undefined;
      return { clientId: payload.sub, roles };
    } catch {
      return undefined;
    }
  }

  jwks(): { keys: JWK[] } {
    return { keys: [this.publicJwk] };
  }
}
