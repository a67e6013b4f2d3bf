/**
 * Fetching and caching a sender's JWKS document, guarded against server-side request forgery:
 * https only (unless insecure JWKS are allowed), no redirects, a size cap, an overall timeout, and
 * every resolved address checked at connect time so that a host cannot resolve to loopback,
 * private, link-local or metadata addresses. jose's own remote key set has no size cap, so the
 * fetch is done here and the keys are served by jose's `createLocalJWKSet`, with the same
 * refresh rules as `createRemoteJWKSet` (refetch on an unknown `kid` after a cooldown, and when
 * the cached document is older than its maximum age).
 */
import http from 'node:http';
import https from 'node:https';
import {
  createLocalJWKSet,
  errors as joseErrors,
  type FlattenedJWSInput,
  type JSONWebKeySet,
  type JWSHeaderParameters,
  type KeyLike,
} from 'jose';
import {
  ADDRESS_REFUSED,
  checkOutboundUrl,
  guardedLookupFor,
  guardedLookup,
  isForbiddenAddress,
  MAX_URL_LENGTH,
  validateOutboundUrl,
  type OutboundPolicy,
} from '../outbound/policy';
import { rejectWebhook } from './errors';
import { WebhookRejection } from '../errors';

// The policy's names, for the JWKS fetch's callers (src/outbound/policy.ts is their home).
export {
  ADDRESS_REFUSED,
  checkOutboundUrl,
  guardedLookup,
  guardedLookupFor,
  isForbiddenAddress,
  MAX_URL_LENGTH,
  validateOutboundUrl,
  type OutboundPolicy,
};

export interface JwksFetchOptions {
  /** Allow `http://` and non-public hosts (development and tests only). */
  allowInsecure: boolean;
  /** Overall deadline for connect, response and body, in milliseconds. */
  timeoutMs: number;
  /** Largest accepted response body, in bytes. */
  maxBytes: number;
}

export interface KeySetOptions extends JwksFetchOptions {
  /** Least time between two fetches triggered by an unknown `kid`. */
  cooldownMs: number;
  /** Age after which the cached document is fetched again before use. */
  cacheMaxAgeMs: number;
  /** After a failed fetch, time during which the failure is answered without fetching again. */
  failureCooldownMs: number;
}

export const JWKS_DEFAULTS: KeySetOptions = {
  allowInsecure: false,
  timeoutMs: 5_000,
  maxBytes: 64 * 1024,
  cooldownMs: 30_000,
  cacheMaxAgeMs: 10 * 60_000,
  failureCooldownMs: 5_000,
};

/**
 * Save-time (and fetch-time) check of a JWKS URL; returns an error message, or undefined when the
 * URL is acceptable. Without `allowInsecure`: https only, and no `localhost` or literal non-public
 * IP host (names are checked again when they resolve, at fetch time).
 */
export function validateJwksUrl(url: string, allowInsecure: boolean): string | undefined {
  if (typeof url !== 'string' || url.length === 0) return 'JWKS URL is required';
  return checkOutboundUrl(url, allowInsecure, 'JWKS URL');
}

/**
 * Fetches and parses a JWKS document. Throws a 401 `WebhookRejection`: 'jwks_url_refused' for a
 * URL or resolved address the policy refuses, 'jwks_unreachable' for network errors, timeouts,
 * non-200 answers (redirects are not followed) and oversized bodies, 'jwks_invalid' for a body
 * that is not a JSON object with a `keys` array.
 */
export function fetchJwks(url: string, options: JwksFetchOptions): Promise<JSONWebKeySet> {
  const urlError = validateJwksUrl(url, options.allowInsecure);
  if (urlError !== undefined) return Promise.reject(rejectWebhook('jwks_url_refused', urlError));
  const target = new URL(url);
  const request = target.protocol === 'https:' ? https.request : http.request;

  return new Promise<JSONWebKeySet>((resolve, fail) => {
    let settled = false;
    const done = (error: WebhookRejection | undefined, value?: JSONWebKeySet): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (error) {
        req.destroy();
        fail(error);
      } else {
        resolve(value as JSONWebKeySet);
      }
    };
    const unreachable = (message: string, cause?: unknown): WebhookRejection =>
      rejectWebhook('jwks_unreachable', message, cause);

    const req = request(
      target,
      {
        method: 'GET',
        agent: false,
        lookup: options.allowInsecure ? undefined : guardedLookup,
        headers: { accept: 'application/jwk-set+json, application/json', 'user-agent': 'automation-governance-jwks' },
      },
      (res) => {
        const status = res.statusCode ?? 0;
        if (status !== 200) {
          res.resume();
          done(unreachable(`JWKS endpoint answered HTTP ${status}, expected 200`));
          return;
        }
        const declared = Number(res.headers['content-length']);
        if (Number.isFinite(declared) && declared > options.maxBytes) {
          done(unreachable(`JWKS response exceeds ${options.maxBytes} bytes`));
          return;
        }
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > options.maxBytes) {
            done(unreachable(`JWKS response exceeds ${options.maxBytes} bytes`));
            return;
          }
          chunks.push(chunk);
        });
        res.on('error', (err) => done(unreachable('JWKS response was interrupted', err)));
        res.on('aborted', () => done(unreachable('JWKS response was interrupted')));
        res.on('end', () => {
          if (settled) return;
          let json: unknown;
          try {
            json = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(Buffer.concat(chunks, size)));
          } catch (err) {
            done(rejectWebhook('jwks_invalid', 'JWKS response is not valid JSON', err));
            return;
          }
          if (!isJwksShape(json)) {
            done(rejectWebhook('jwks_invalid', 'JWKS response is not an object with a "keys" array'));
            return;
          }
          done(undefined, json);
        });
      },
    );
    req.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === ADDRESS_REFUSED) done(rejectWebhook('jwks_url_refused', err.message, err));
      else done(unreachable('JWKS endpoint could not be reached', err));
    });
    const timer = setTimeout(
      () => done(unreachable(`JWKS fetch timed out after ${options.timeoutMs} ms`)),
      options.timeoutMs,
    );
    req.end();
  });
}

function isJwksShape(value: unknown): value is JSONWebKeySet {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const keys = (value as { keys?: unknown }).keys;
  return Array.isArray(keys) && keys.every((key) => key !== null && typeof key === 'object' && !Array.isArray(key));
}

type LocalKeySet = ReturnType<typeof createLocalJWKSet>;

/**
 * A JWKS kept in memory for one URL: fetched on first use, refetched when older than
 * `cacheMaxAgeMs`, or when no key matches and the last fetch is older than `cooldownMs`.
 * Concurrent callers share one fetch. `getKey` is a jose key-resolver function.
 */
export class RemoteKeySet {
  private readonly options: KeySetOptions;
  private local: LocalKeySet | undefined;
  private fetchedAt: number | undefined;
  private pending: Promise<LocalKeySet> | undefined;
  private failure: { at: number; error: WebhookRejection } | undefined;
  private fetches = 0;

  constructor(
    readonly url: string,
    options: Partial<KeySetOptions> = {},
  ) {
    this.options = { ...JWKS_DEFAULTS, ...definedOnly(options) };
  }

  /** Number of fetches started so far (for tests and metrics). */
  get fetchCount(): number {
    return this.fetches;
  }

  /** Resolves the verification key for a JWS header; jose errors pass through. */
  readonly getKey = async (header: JWSHeaderParameters, token: FlattenedJWSInput): Promise<KeyLike> => {
    let local = this.local;
    if (local === undefined || !this.fresh()) local = await this.reload();
    try {
      return await local(header, token);
    } catch (err) {
      if (err instanceof joseErrors.JWKSNoMatchingKey && !this.coolingDown()) {
        const reloaded = await this.reload();
        return reloaded(header, token);
      }
      throw err;
    }
  };

  private fresh(): boolean {
    return this.fetchedAt !== undefined && Date.now() < this.fetchedAt + this.options.cacheMaxAgeMs;
  }

  private coolingDown(): boolean {
    return this.fetchedAt !== undefined && Date.now() < this.fetchedAt + this.options.cooldownMs;
  }

  private reload(): Promise<LocalKeySet> {
    if (this.pending) return this.pending;
    if (this.failure && Date.now() < this.failure.at + this.options.failureCooldownMs) {
      return Promise.reject(this.failure.error);
    }
    this.fetches++;
    const pending = fetchJwks(this.url, this.options).then((jwks) => {
      let local: LocalKeySet;
      try {
        local = createLocalJWKSet(jwks);
      } catch (err) {
        throw rejectWebhook('jwks_invalid', 'JWKS document is malformed', err);
      }
      this.local = local;
      this.fetchedAt = Date.now();
      this.failure = undefined;
      this.pending = undefined;
      return local;
    });
    const tracked = pending.catch((err: unknown) => {
      this.pending = undefined;
      const error =
        err instanceof WebhookRejection ? err : rejectWebhook('jwks_unreachable', 'JWKS could not be loaded', err);
      this.failure = { at: Date.now(), error };
      throw error;
    });
    this.pending = tracked;
    return tracked;
  }
}

function definedOnly<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
