/**
 * Fetching and caching a sender's JWKS document, guarded against server-side request forgery:
 * https only (unless insecure JWKS are allowed), no redirects, a size cap, an overall timeout, and
 * every resolved address checked at connect time so that a host cannot resolve to loopback,
 * private, link-local or metadata addresses. jose's own remote key set has no size cap, so the
 * fetch is done here and the keys are served by jose's `createLocalJWKSet`, with the same
 * refresh rules as `createRemoteJWKSet` (refetch on an unknown `kid` after a cooldown, and when
 * the cached document is older than its maximum age).
 */
import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import {
  createLocalJWKSet,
  errors as joseErrors,
  type FlattenedJWSInput,
  type JSONWebKeySet,
  type JWSHeaderParameters,
  type KeyLike,
} from 'jose';
import { addressForms, cidrContains, parseCidr, parseIp, type Cidr, type IpAddress } from './cidr';
import { rejectWebhook } from './errors';
import { WebhookRejection } from '../errors';

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

export const MAX_URL_LENGTH = 2048;

const FORBIDDEN_RANGES: Cidr[] = [
  '0.0.0.0/8', // "this network", unspecified
  '10.0.0.0/8',
  '100.64.0.0/10', // carrier-grade NAT
  '127.0.0.0/8',
  '169.254.0.0/16', // link-local, cloud metadata (169.254.169.254)
  '172.16.0.0/12',
  '192.0.0.0/24',
  '192.168.0.0/16',
  '198.18.0.0/15',
  '224.0.0.0/4', // multicast
  '240.0.0.0/4', // reserved, broadcast
  '::/96', // unspecified, loopback, IPv4-compatible
  '100::/64', // discard
  'fc00::/7', // unique local (also fd00:ec2::254, a metadata address)
  'fe80::/10', // link-local
  'fec0::/10', // site-local
  'ff00::/8', // multicast
].map((text) => {
  const cidr = parseCidr(text);
  if ('error' in cidr) throw new Error(`bad built-in range ${text}`);
  return cidr;
});

/** Non-public ranges an outbound call may reach when private targets are allowed (ALLOW_PRIVATE_OUTBOUND). */
const PRIVATE_RANGES: Cidr[] = ['10.0.0.0/8', '100.64.0.0/10', '127.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '::1/128', 'fc00::/7'].map(
  (text) => parseCidr(text) as Cidr,
);

/** Cloud metadata endpoints outside the link-local ranges: refused even when private targets are allowed. */
const METADATA_RANGES: Cidr[] = ['fd00:ec2::254/128', '100.100.100.200/32'].map((text) => parseCidr(text) as Cidr);

/**
 * Where an outbound call may go. `public`: https, public addresses only. `private`: http or
 * https, loopback and private addresses too, never link-local, metadata, multicast or reserved
 * ones. `any`: no scheme or address rule at all (ALLOW_INSECURE_JWKS, JWKS URLs only).
 */
export type OutboundPolicy = 'public' | 'private' | 'any';

const NAT64 = parseCidr('64:ff9b::/96') as Cidr;
/** RFC 8215 local-use NAT64 prefix; a network may use any RFC 6052 prefix length within it. */
const NAT64_LOCAL = parseCidr('64:ff9b:1::/48') as Cidr;
/**
 * Where RFC 6052 puts the IPv4 address for prefix lengths /48, /56 and /64 (byte 8, bits 64-71,
 * is skipped); /96 is the last four bytes. The prefix length a network uses is unknown here, so
 * every position is decoded and any forbidden one forbids the address. A /48-/64 decoding that
 * starts with a zero byte is not taken as 0.0.0.0/8: it is what the zero bytes of the common
 * 64:ff9b:1::/96 layout read as, and no NAT64 gateway routes to "this network" anyway.
 */
const RFC6052_SHORT_PREFIX_IPV4_BYTES = [
  [6, 7, 9, 10],
  [7, 9, 10, 11],
  [9, 10, 11, 12],
];
const SIX_TO_FOUR = parseCidr('2002::/16') as Cidr;

/**
 * True for addresses a JWKS fetch must never reach: loopback, private, link-local (metadata),
 * unspecified, multicast and reserved ranges, also when wrapped in IPv4-mapped, NAT64 (the
 * well-known 64:ff9b::/96 and the local-use 64:ff9b:1::/48 of RFC 8215) or 6to4 IPv6 forms.
 * Unparseable text counts as forbidden. With the `private` policy, loopback and private ranges
 * are allowed, except metadata addresses.
 */
export function isForbiddenAddress(address: string, policy: Exclude<OutboundPolicy, 'any'> = 'public'): boolean {
  const zone = address.indexOf('%');
  const ip = parseIp(zone < 0 ? address : address.slice(0, zone));
  if (!ip) return true;
  const forms: IpAddress[] = [...addressForms(ip)];
  if (ip.family === 6 && cidrContains(NAT64, ip)) forms.push({ family: 4, bytes: ip.bytes.slice(12) });
  if (ip.family === 6 && cidrContains(NAT64_LOCAL, ip)) {
    forms.push({ family: 4, bytes: ip.bytes.slice(12) });
    for (const positions of RFC6052_SHORT_PREFIX_IPV4_BYTES) {
      const bytes = Uint8Array.from(positions, (i) => ip.bytes[i]!);
      if (bytes[0] !== 0) forms.push({ family: 4, bytes });
    }
  }
  if (ip.family === 6 && cidrContains(SIX_TO_FOUR, ip)) forms.push({ family: 4, bytes: ip.bytes.slice(2, 6) });
  const within = (ranges: Cidr[]) => (form: IpAddress) => ranges.some((range) => cidrContains(range, form));
  if (policy === 'public') return forms.some(within(FORBIDDEN_RANGES));
  if (forms.some(within(METADATA_RANGES))) return true;
  return forms.some((form) => within(FORBIDDEN_RANGES)(form) && !within(PRIVATE_RANGES)(form));
}

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
 * The policy for every URL the service calls out to (JWKS documents, callWebhook steps): an
 * error message naming `label`, or undefined. Always: an absolute URL of bounded length, no
 * credentials. `public`: https only, no `localhost` or literal non-public IP host (names are
 * checked again when they resolve); `private`: http too, loopback and private hosts too, but no
 * literal link-local, metadata or reserved IP host; `any`: nothing more. A boolean is `any`
 * (true) or `public` (false).
 */
export function checkOutboundUrl(
  url: string,
  policy: OutboundPolicy | boolean,
  label: string,
  invalidMessage = `${label} is not a valid absolute URL`,
): string | undefined {
  const rule: OutboundPolicy = policy === true ? 'any' : policy === false ? 'public' : policy;
  if (url.length > MAX_URL_LENGTH) return `${label} must be at most ${MAX_URL_LENGTH} characters`;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return invalidMessage;
  }
  if (parsed.protocol !== 'https:' && !(rule !== 'public' && parsed.protocol === 'http:')) {
    return rule !== 'public' ? `${label} must use http or https` : `${label} must use https`;
  }
  if (parsed.username !== '' || parsed.password !== '') return `${label} must not contain credentials`;
  if (parsed.hostname === '') return `${label} must name a host`;
  if (rule === 'any') return undefined;
  const host = parsed.hostname.toLowerCase().replace(/\.$/, '');
  if (rule === 'public' && (host === 'localhost' || host.endsWith('.localhost'))) return `${label} must not point to localhost`;
  const literal = host.startsWith('[') ? host.slice(1, -1) : host;
  if (parseIp(literal) && isForbiddenAddress(literal, rule)) {
    return rule === 'public'
      ? `${label} must not point to a loopback, private, link-local or other non-public address`
      : `${label} must not point to a link-local, metadata or other reserved address`;
  }
  return undefined;
}

/** Error code carried by the error `guardedLookup` reports for a refused host. */
export const ADDRESS_REFUSED = 'ERR_JWKS_ADDRESS_REFUSED';

/**
 * A `lookup` for sockets that resolves like `dns.lookup` but fails when any resolved address is
 * forbidden by `policy`, so the connection can only go to an address that was checked.
 */
export function guardedLookupFor(policy: Exclude<OutboundPolicy, 'any'>): LookupFunction {
  return (hostname, options, callback) => {
    dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) {
        callback(err, '', 0);
        return;
      }
      const first = addresses[0];
      if (first === undefined || addresses.some((entry) => isForbiddenAddress(entry.address, policy))) {
        const refused: NodeJS.ErrnoException = new Error(
          policy === 'public' ? 'JWKS host resolves to a non-public address' : 'host resolves to a link-local, metadata or other reserved address',
        );
        refused.code = ADDRESS_REFUSED;
        callback(refused, '', 0);
        return;
      }
      if (options.all) callback(null, addresses);
      else callback(null, first.address, first.family);
    });
  };
}

/** `guardedLookupFor('public')`: only public addresses. */
export const guardedLookup: LookupFunction = guardedLookupFor('public');

/**
 * Fetches and parses a JWKS document. Throws a 401 `WebhookRejection`: 'jwks_url_refused' for a
 * URL or resolved address the policy refuses, 'jwks_unreachable' for network errors, timeouts,
 * non-200 answers (redirects are not followed) and oversized bodies, 'jwks_invalid' for a body
 * that is not a JSON object with a `keys` array.
 */
export function fetchJwks(url: string, options: JwksFetchOptions): Promise<JSONWebKeySet> {
  const urlError = validateJwksUrl(url, options.allowInsecure);
  if (urlError !== undefined) return Promise.reject(rejectWebhook(401, 'jwks_url_refused', urlError));
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
      rejectWebhook(401, 'jwks_unreachable', message, cause);

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
            done(rejectWebhook(401, 'jwks_invalid', 'JWKS response is not valid JSON', err));
            return;
          }
          if (!isJwksShape(json)) {
            done(rejectWebhook(401, 'jwks_invalid', 'JWKS response is not an object with a "keys" array'));
            return;
          }
          done(undefined, json);
        });
      },
    );
    req.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === ADDRESS_REFUSED) done(rejectWebhook(401, 'jwks_url_refused', err.message, err));
      else done(unreachable('JWKS endpoint could not be reached', err));
    });
    const timer = setTimeout(() => done(unreachable(`JWKS fetch timed out after ${options.timeoutMs} ms`)), options.timeoutMs);
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
    const pending = fetchJwks(this.url, this.options).then(
      (jwks) => {
        let local: LocalKeySet;
        try {
          local = createLocalJWKSet(jwks);
        } catch (err) {
          throw rejectWebhook(401, 'jwks_invalid', 'JWKS document is malformed', err);
        }
        this.local = local;
        this.fetchedAt = Date.now();
        this.failure = undefined;
        this.pending = undefined;
        return local;
      },
    );
    const tracked = pending.catch((err: unknown) => {
      this.pending = undefined;
      const error = err instanceof WebhookRejection ? err : rejectWebhook(401, 'jwks_unreachable', 'JWKS could not be loaded', err);
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

/**
 * Checks an outbound URL against the policy; returns an error message, or undefined when it may be
 * called. Without `allowPrivate`: https only, no `localhost`, no literal non-public IP; with it:
 * http too, loopback and private IPs too, never link-local, metadata or reserved ones (names are
 * checked again when they resolve).
 */
export function validateOutboundUrl(url: string, allowPrivate: boolean): string | undefined {
  const shown = JSON.stringify(url.length > 100 ? `${url.slice(0, 100)}…` : url);
  return checkOutboundUrl(url, allowPrivate ? 'private' : 'public', 'URL', `${shown} is not a valid absolute URL`);
}
