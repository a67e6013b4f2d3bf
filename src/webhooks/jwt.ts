/**
 * JWT authentication of inbound webhooks (jose v5). The sender signs a short-lived JWT with a key
 * published in its JWKS; the token binds the request through its claims: `sub` = the service base
 * URL, `aud` = the listener URL, `jti` = the event id, `htm` = POST, `htb_s256` = the body hash,
 * and `exp` at most 600 s ahead. Every failure is a 401 `WebhookRejection` with a precise reason.
 */
import { KeyObject } from 'node:crypto';
import {
  decodeProtectedHeader,
  errors as joseErrors,
  jwtVerify,
  type FlattenedJWSInput,
  type JWSHeaderParameters,
  type JWTPayload,
  type JWTVerifyOptions,
  type KeyLike,
  type ProtectedHeaderParameters,
} from 'jose';
import { bodySha256 } from './digest';
import { rejectWebhook } from './errors';
import { JWKS_DEFAULTS, RemoteKeySet, validateJwksUrl } from './jwks';
import { WebhookRejection } from '../errors';

export { validateJwksUrl } from './jwks';

/** Signature algorithms accepted (RSA, ECDSA P-256, Ed25519). */
export const JWT_ALGORITHMS = ['RS256', 'ES256', 'EdDSA'] as const;

/** Largest accepted distance between `exp` and now, in seconds. */
export const MAX_JWT_LIFETIME_SECONDS = 600;

/** Claims every webhook JWT must carry. */
export const REQUIRED_CLAIMS = ['sub', 'aud', 'exp', 'jti', 'htm', 'htb_s256'] as const;

/** Protected-header parameters that would let a token choose its own key or extensions. */
const FORBIDDEN_HEADERS = ['jku', 'x5u', 'jwk', 'x5c', 'crit'] as const;

const MAX_TOKEN_CHARS = 16 * 1024;

export interface JwtCheck {
  /** The compact JWT from `Authorization: Bearer`. */
  token: string;
  /** The tenant base URL: the required `sub`. */
  baseUrl: string;
  /** The full listener URL: the required `aud`. */
  audience: string;
  /** The event id (lower case): the required `jti`, compared case-insensitively. */
  eventId: string;
  /** The raw request body: its hash is the required `htb_s256`. */
  body: Buffer;
  /** Current Unix time in seconds; defaults to the clock. */
  nowSeconds?: number;
}

export interface JwtVerifierOptions {
  /** Allow `http://` and non-public JWKS hosts (development and tests only). */
  allowInsecure: boolean;
  /** JWKS fetch deadline (default 5000 ms). */
  timeoutMs?: number;
  /** Least time between refetches caused by an unknown `kid` (default 30 s). */
  cooldownMs?: number;
  /** Largest JWKS document accepted (default 64 KiB). */
  maxBytes?: number;
  /** Age after which the cached JWKS is refetched before use (default 10 min). */
  cacheMaxAgeMs?: number;
  /** Time a failed JWKS fetch is remembered before trying again (default 5 s). */
  failureCooldownMs?: number;
}

/**
 * Verifies webhook JWTs against one JWKS URL. Keep one instance per listener and URL: it caches
 * the key set and refetches it under the cooldown rules of `RemoteKeySet`.
 */
export class JwtVerifier {
  private readonly keys: RemoteKeySet;
  private readonly urlError: string | undefined;

  constructor(
    readonly jwksUrl: string,
    options: JwtVerifierOptions,
  ) {
    this.urlError = validateJwksUrl(jwksUrl, options.allowInsecure);
    this.keys = new RemoteKeySet(jwksUrl, {
      allowInsecure: options.allowInsecure,
      timeoutMs: options.timeoutMs ?? JWKS_DEFAULTS.timeoutMs,
      cooldownMs: options.cooldownMs ?? JWKS_DEFAULTS.cooldownMs,
      maxBytes: options.maxBytes ?? JWKS_DEFAULTS.maxBytes,
      cacheMaxAgeMs: options.cacheMaxAgeMs ?? JWKS_DEFAULTS.cacheMaxAgeMs,
      failureCooldownMs: options.failureCooldownMs ?? JWKS_DEFAULTS.failureCooldownMs,
    });
  }

  /** Number of JWKS fetches this verifier has started. */
  get jwksFetchCount(): number {
    return this.keys.fetchCount;
  }

  /** Resolves when the token is valid for this request; otherwise throws a 401 `WebhookRejection`. */
  async verify(check: JwtCheck): Promise<void> {
    const now = Math.floor(check.nowSeconds ?? Date.now() / 1000);
    checkProtectedHeader(check.token);
    if (this.urlError !== undefined) throw rejectWebhook('jwks_url_refused', this.urlError);

    const options: JWTVerifyOptions = {
      algorithms: [...JWT_ALGORITHMS],
      subject: check.baseUrl,
      audience: check.audience,
      requiredClaims: [...REQUIRED_CLAIMS],
      currentDate: new Date(now * 1000),
      clockTolerance: 0,
    };
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(check.token, this.getKey, options));
    } catch (err) {
      if (!(err instanceof joseErrors.JWKSMultipleMatchingKeys)) throw toRejection(err);
      payload = await verifyWithCandidates(check.token, err, options);
    }
    checkBindingClaims(payload, check, now);
  }

  private readonly getKey = async (header: JWSHeaderParameters, token: FlattenedJWSInput): Promise<KeyLike> => {
    const key = await this.keys.getKey(header, token);
    assertKeyFits(header.alg, key);
    return key;
  };
}

/** Refuses, before any key lookup, tokens that are malformed or whose header is not acceptable. */
function checkProtectedHeader(token: string): ProtectedHeaderParameters {
  if (token.length > MAX_TOKEN_CHARS || token.split('.').length !== 3) {
    throw rejectWebhook('jwt_malformed', 'Authorization does not carry a compact JWS');
  }
  let header: ProtectedHeaderParameters;
  try {
    header = decodeProtectedHeader(token);
  } catch (err) {
    throw rejectWebhook('jwt_malformed', 'JWT header cannot be decoded', err);
  }
  if (typeof header.alg !== 'string' || !(JWT_ALGORITHMS as readonly string[]).includes(header.alg)) {
    throw rejectWebhook('jwt_alg_not_allowed', `JWT alg must be one of ${JWT_ALGORITHMS.join(', ')}`);
  }
  for (const name of FORBIDDEN_HEADERS) {
    if (Object.prototype.hasOwnProperty.call(header, name)) {
      throw rejectWebhook('jwt_header_forbidden', `JWT header parameter ${name} is not accepted`);
    }
  }
  if (typeof header.kid !== 'string' || header.kid === '') {
    throw rejectWebhook('jwt_missing_kid', 'JWT header kid is required');
  }
  return header;
}

/** EdDSA here means Ed25519 only; jose would also take Ed448. */
function assertKeyFits(alg: string | undefined, key: KeyLike): void {
  if (alg === 'EdDSA' && !(key instanceof KeyObject && key.asymmetricKeyType === 'ed25519')) {
    throw rejectWebhook('jwt_key_rejected', 'EdDSA tokens must be signed with an Ed25519 key');
  }
}

/** Several JWKS keys share the `kid`: the token is valid if one of them verifies it. */
async function verifyWithCandidates(
  token: string,
  multiple: InstanceType<typeof joseErrors.JWKSMultipleMatchingKeys>,
  options: JWTVerifyOptions,
): Promise<JWTPayload> {
  for await (const key of multiple as unknown as AsyncIterable<KeyLike>) {
    try {
      assertKeyFits(decodeProtectedHeader(token).alg, key);
      return (await jwtVerify(token, key, options)).payload;
    } catch (err) {
      if (err instanceof joseErrors.JWSSignatureVerificationFailed) continue;
      if (err instanceof WebhookRejection && err.reason === 'jwt_key_rejected') continue;
      throw toRejection(err);
    }
  }
  throw rejectWebhook('jwt_signature_invalid', 'JWT signature does not verify with any matching JWKS key');
}

/** The claims that bind the token to this request, checked after the signature. */
function checkBindingClaims(payload: JWTPayload, check: JwtCheck, now: number): void {
  if (typeof payload.exp !== 'number' || payload.exp - now > MAX_JWT_LIFETIME_SECONDS) {
    throw claimInvalid('exp', `is more than ${MAX_JWT_LIFETIME_SECONDS} seconds ahead`);
  }
  if (typeof payload.jti !== 'string' || payload.jti.toLowerCase() !== check.eventId.toLowerCase()) {
    throw claimInvalid('jti', 'does not match Webhook-Event-Id');
  }
  if (payload.htm !== 'POST') {
    throw claimInvalid('htm', 'must be POST');
  }
  if (typeof payload.htb_s256 !== 'string' || payload.htb_s256 !== bodySha256(check.body)) {
    throw claimInvalid('htb_s256', 'does not match the SHA-256 of the request body');
  }
}

function claimInvalid(claim: string, what: string): WebhookRejection {
  return rejectWebhook('jwt_claim_invalid', `JWT claim ${claim} ${what}`);
}

/**
 * Maps jose (and key import) errors to a 401 with a precise reason; unknown errors pass through.
 * Exported for its unit test: Node's own crypto errors (ERR_CRYPTO_*, ERR_OSSL_*) cannot all be
 * produced on purpose through a key set.
 */
export function toRejection(err: unknown): unknown {
  if (err instanceof WebhookRejection) return err;
  if (err instanceof joseErrors.JWTExpired) return rejectWebhook('jwt_expired', 'JWT has expired', err);
  if (err instanceof joseErrors.JWTClaimValidationFailed) {
    const claim = err.claim;
    if (err.reason === 'missing') return claimInvalid(claim, 'is missing');
    if (claim === 'sub') return claimInvalid('sub', 'does not match the service base URL');
    if (claim === 'aud') return claimInvalid('aud', 'does not match the listener URL');
    return claimInvalid(claim, 'is invalid');
  }
  if (err instanceof joseErrors.JWKSNoMatchingKey) {
    return rejectWebhook('unknown_kid', 'no JWKS key matches the JWT kid and alg', err);
  }
  if (err instanceof joseErrors.JWSSignatureVerificationFailed) {
    return rejectWebhook('jwt_signature_invalid', 'JWT signature is invalid', err);
  }
  if (err instanceof joseErrors.JOSEAlgNotAllowed) {
    return rejectWebhook('jwt_alg_not_allowed', `JWT alg must be one of ${JWT_ALGORITHMS.join(', ')}`, err);
  }
  if (err instanceof joseErrors.JWSInvalid || err instanceof joseErrors.JWTInvalid) {
    return rejectWebhook('jwt_malformed', 'JWT is malformed', err);
  }
  if (
    err instanceof joseErrors.JWKSInvalid ||
    err instanceof joseErrors.JWKInvalid ||
    err instanceof joseErrors.JOSENotSupported
  ) {
    return rejectWebhook('jwks_invalid', 'JWKS key cannot be used', err);
  }
  if (err instanceof TypeError || isCryptoError(err)) {
    // e.g. an RSA key under 2048 bits, or a JWK that does not import.
    return rejectWebhook('jwt_key_rejected', 'JWKS key is not acceptable for this algorithm', err);
  }
  return err;
}

function isCryptoError(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && (code.startsWith('ERR_CRYPTO') || code.startsWith('ERR_OSSL'));
}
