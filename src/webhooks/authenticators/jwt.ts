/**
 * JWT authentication of inbound webhooks. The sender signs a short-lived JWT (RS256, ES256 or
 * EdDSA) with a key published in its JWKS and sends it in `Authorization: Bearer`; the trigger
 * configures the JWKS URL (`jwksUrl`). The token binds the request through its claims (see
 * `../jwt.ts`: `sub` = base URL, `aud` = listener URL, `jti` = event id, `htm`, `htb_s256`, `exp`).
 * No signing secret. One `JwtVerifier` (and so one cached JWKS) is kept per listener and URL.
 */
import { createPrivateKey } from 'node:crypto';
import fs from 'node:fs';
import { importPKCS8, SignJWT, type KeyLike } from 'jose';
import { z } from 'zod';
import { bodySha256 } from '../digest';
import { rejectWebhook } from '../errors';
import { validateJwksUrl } from '../jwks';
import { JWT_ALGORITHMS, JwtVerifier } from '../jwt';
import { type Authenticator } from './authenticator';
import { SenderUsageError, WebhookRejection } from '../../errors';

type Algorithm = (typeof JWT_ALGORITHMS)[number];

/** Most JWT verifiers (listeners) kept; the oldest is dropped beyond it. */
const MAX_CACHED_VERIFIERS = 10_000;
/** Longest accepted bearer token, in characters. */
const MAX_TOKEN_CHARS = 16 * 1024;
/** Lifetime of the JWTs `npm run send` makes: the receiver accepts `exp` up to 600 s ahead. */
const SENT_JWT_LIFETIME_SECONDS = 300;

/** Extracts the token of `Authorization: Bearer <token>`; 401 when absent or another scheme. */
export function bearerToken(authorization: string | undefined): string {
  const value = authorization?.trim();
  if (value === undefined || value === '') {
    throw rejectWebhook('missing_authorization', 'missing Authorization header');
  }
  const match = /^bearer +([^\s]+)$/i.exec(value);
  const token = match?.[1];
  if (token === undefined || token.length > MAX_TOKEN_CHARS) {
    throw rejectWebhook('bad_authorization', 'Authorization header must be "Bearer <JWT>"');
  }
  return token;
}

/** One JWT verifier (and so one cached JWKS) per listener and JWKS URL. */
class VerifierCache {
  private readonly verifiers = new Map<string, JwtVerifier>();
  constructor(private readonly allowInsecure: boolean) {}

  get(listenerId: string, jwksUrl: string): JwtVerifier {
    const existing = this.verifiers.get(listenerId);
    if (existing && existing.jwksUrl === jwksUrl) return existing;
    if (this.verifiers.size >= MAX_CACHED_VERIFIERS) {
      const oldest = this.verifiers.keys().next().value;
      if (oldest !== undefined) this.verifiers.delete(oldest);
    }
    const verifier = new JwtVerifier(jwksUrl, { allowInsecure: this.allowInsecure });
    this.verifiers.set(listenerId, verifier);
    return verifier;
  }
}

const REQUIRED = 'is required for JWT authentication';

export const jwtAuthenticator = {
  summary: 'a JWT in Authorization: Bearer, signed with a key of the JWKS configured on the trigger',
  credential: {
    name: 'Authorization',
    input: 'authorization',
    output: 'token',
    requiredHeader: false,
    description: 'JWT listeners only: "Bearer <JWT>".',
  },
  readCredential: bearerToken,
  fields: z.object({
    jwksUrl: z
      .string({ error: REQUIRED })
      .min(1, { error: REQUIRED })
      .meta({ format: 'uri', description: 'https URL of the sender’s JWKS.' }),
  }),
  checkFields: (fields, config) => {
    const problem = validateJwksUrl(fields.jwksUrl, config.allowInsecureJwks);
    return problem ? [{ field: 'jwksUrl', description: problem }] : [];
  },
  createVerifier: (config) => {
    const verifiers = new VerifierCache(config.allowInsecureJwks);
    return (request) =>
      verifiers
        .get(request.listenerId, request.fields.jwksUrl)
        .verify({
          token: request.credential ?? '',
          baseUrl: config.baseUrl,
          audience: request.listenerUrl,
          eventId: request.eventId,
          body: request.body,
          nowSeconds: request.nowSeconds,
        })
        .then(authentic, refusalOf);
  },
  sender: {
    selector: 'jwt-key',
    options: {
      'jwt-key': {
        value: '<file>',
        description: 'JWT listeners: PEM private key (PKCS#8; PKCS#1 and SEC1 are accepted too)',
      },
      kid: { value: '<kid>', description: "JWT header kid: the key's id in the JWKS the listener fetches" },
      alg: {
        value: '<alg>',
        description: `JWT algorithm: ${JWT_ALGORITHMS.slice(0, -1).join(', ')} or ${JWT_ALGORITHMS.at(-1)}`,
      },
      'base-url': { value: '<url>', description: 'JWT sub claim: the tenant base URL (default: the origin of --url)' },
    },
    synopsis: `--jwt-key <key.pem> --kid <kid> --alg <${JWT_ALGORITHMS.join('|')}> [--base-url <url>]`,
    hint: '--jwt-key with --kid and --alg (JWT listener)',
    signer: async (values, target) => {
      const alg = required(values.alg, '--alg (with --jwt-key)');
      if (!(JWT_ALGORITHMS as readonly string[]).includes(alg))
        throw new SenderUsageError(`--alg must be one of ${JWT_ALGORITHMS.join(', ')}`);
      const kid = required(values.kid, '--kid (with --jwt-key)');
      const key = await importKey(readKeyFile(values['jwt-key'] ?? ''), alg as Algorithm);
      const baseUrl = values['base-url'] ?? target.origin;
      return async ({ url, body, eventId, timestamp }) => {
        const now = Number(timestamp);
        const token = await new SignJWT({ htm: 'POST', htb_s256: bodySha256(body) })
          .setProtectedHeader({ alg, kid, typ: 'JWT' })
          .setSubject(baseUrl)
          .setAudience(url)
          .setIssuedAt(now)
          .setExpirationTime(now + SENT_JWT_LIFETIME_SECONDS)
          .setJti(eventId)
          .sign(key);
        return { Authorization: `Bearer ${token}` };
      };
    },
  },
} satisfies Authenticator<{ jwksUrl: string }, 'authorization', 'token'>;

function required(value: string | undefined, name: string): string {
  if (value === undefined || value === '') throw new SenderUsageError(`${name} is required (see --help)`);
  return value;
}

function readKeyFile(path: string): Buffer {
  try {
    return fs.readFileSync(path);
  } catch (err) {
    throw new SenderUsageError(
      `--jwt-key: cannot read ${JSON.stringify(path)} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
    );
  }
}

/** PKCS#8 through jose; other PEM encodings (PKCS#1 RSA, SEC1 EC) through node:crypto. */
async function importKey(pem: Buffer, alg: Algorithm): Promise<KeyLike> {
  const text = pem.toString('utf8');
  try {
    return await importPKCS8(text, alg);
  } catch (err) {
    try {
      const key = createPrivateKey(text);
      if (key.type === 'private') return key;
    } catch {
      // fall through to the original error
    }
    throw new SenderUsageError(`--jwt-key: not a PEM private key usable for ${alg} (${(err as Error).message})`);
  }
}

const authentic = (): undefined => undefined;

/** The verifier's 401 as the verification's answer (src/webhooks/authenticators/authenticator.ts); anything else is thrown on. */
function refusalOf(err: unknown): WebhookRejection {
  if (err instanceof WebhookRejection) return err;
  throw err;
}
