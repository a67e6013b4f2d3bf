/**
 * Flood guards of the token endpoint: a per-source rate limit and a per-(client, source) failure
 * backoff, both shared by the API processes through the store (beyond them 429 with Retry-After),
 * and a cap on slow (scrypt) secret verifications running at once in this process (beyond it 503
 * with Retry-After), so that the libuv thread pool, which DNS lookups and JWKS fetches share, is
 * never filled by password hashing. A source is an IPv4 address or an IPv6 /64.
 */
import { GuardRefusal } from '../errors';
import { sourcePrefix } from '../net/cidr';
import type { Queryable } from '../store/db';
import {
  admitTokenRequest,
  pruneTokenLimits,
  recordTokenFailure,
  takeSourceRequest,
  type BackoffPolicy,
} from '../store/token-limits';

/**
 * How failed attempts of one client id from one source (an IPv4 address or an IPv6 /64) make the
 * next attempt from there wait: five failures are free, then 1 s, 2 s, 4 s... up to 15 minutes; a
 * failure 15 minutes after the previous one starts the count again. Keyed on the source too, so a
 * flood naming a client from elsewhere never makes the client's own caller wait.
 */
export const TOKEN_FAILURE_BACKOFF: BackoffPolicy = {
  free: 5,
  baseMs: 1000,
  maxMs: 15 * 60_000,
  forgetAfterMs: 15 * 60_000,
};

/** The client id as the backoff keys it: as sent, without NUL characters (the store refuses them), at most 200 characters. */
function clientKey(clientId: string): string {
  return clientId.replaceAll('\u0000', '').slice(0, 200);
}

/** How often one API process drops the limit rows that limit nothing any more. */
const PRUNE_EVERY_MS = 60_000;

/**
 * The token endpoint's limits, kept in the store so that every API process counts the same: the
 * per-source limit (`perMinute` requests per source, refilled continuously) and the failure backoff.
 * Each request costs one statement (`admit`); a failed attempt one more (`failed`).
 */
export class SharedTokenLimits {
  private lastPruneMs = Date.now();

  constructor(
    private readonly db: Queryable,
    readonly perMinute: number,
    readonly backoff: BackoffPolicy = TOKEN_FAILURE_BACKOFF,
  ) {}

  /**
   * Counts a request naming `clientId` from `address`; throws a 429 `GuardRefusal` (with
   * Retry-After) when the source's limit is used up or the client is in its backoff from this
   * source. Returns the source key to pass to `failed`.
   */
  async admit(address: string, clientId: string): Promise<string> {
    const source = sourcePrefix(address);
    const admission = await admitTokenRequest(this.db, source, clientKey(clientId), this.perMinute, 60_000);
    if (!admission.sourceAllowed) {
      throw new GuardRefusal(
        429,
        'too many token requests from this address; retry later',
        Math.max(1, Math.ceil(admission.sourceRetryAfterMs / 1000)),
      );
    }
    if (admission.backoffMs > 0) {
      throw new GuardRefusal(
        429,
        'too many failed attempts for this client from this address; retry later',
        Math.max(1, Math.ceil(admission.backoffMs / 1000)),
      );
    }
    await this.pruneNow();
    return source;
  }

  /** Records a failed attempt of `clientId` from `source` (as `admit` returned it). */
  async failed(source: string, clientId: string): Promise<void> {
    await recordTokenFailure(this.db, source, clientKey(clientId), this.backoff);
  }

  private async pruneNow(): Promise<void> {
    const now = Date.now();
    if (now - this.lastPruneMs < PRUNE_EVERY_MS) return;
    this.lastPruneMs = now;
    await pruneTokenLimits(this.db, this.backoff.forgetAfterMs);
  }
}

/**
 * A per-source limit of another kind of request than the token endpoint's (`kind`, e.g.
 * `console-login`: its count is kept apart from the token endpoint's), shared by every API process
 * through the store as the token endpoint's: `perMinute` requests per source (an IPv4 address or an
 * IPv6 /64), refilled continuously; beyond it a 429 with Retry-After, and nothing else happens.
 */
export class SharedSourceLimit {
  private lastPruneMs = Date.now();

  constructor(
    private readonly db: Queryable,
    readonly kind: string,
    readonly perMinute: number,
    private readonly refusal: string,
  ) {}

  /** Counts a request from `address`; throws a 429 `GuardRefusal` (with Retry-After) when its source's limit is used up. */
  async admit(address: string): Promise<void> {
    const taken = await takeSourceRequest(this.db, `${this.kind}:${sourcePrefix(address)}`, this.perMinute, 60_000);
    if (!taken.allowed) throw new GuardRefusal(429, this.refusal, Math.max(1, Math.ceil(taken.retryAfterMs / 1000)));
    const now = Date.now();
    if (now - this.lastPruneMs >= PRUNE_EVERY_MS) {
      this.lastPruneMs = now;
      await pruneTokenLimits(this.db, TOKEN_FAILURE_BACKOFF.forgetAfterMs);
    }
  }
}

/** At most `max` pieces of work at once; the next one is refused (503), never queued. */
export class ConcurrencyCap {
  private running = 0;

  constructor(
    readonly max: number,
    private readonly retryAfterSeconds = 1,
  ) {}

  get inUse(): number {
    return this.running;
  }

  readonly run = async <T>(work: () => Promise<T>): Promise<T> => {
    if (this.running >= this.max) {
      throw new GuardRefusal(503, 'too many client authentications in progress; retry later', this.retryAfterSeconds);
    }
    this.running += 1;
    try {
      return await work();
    } finally {
      this.running -= 1;
    }
  };
}

/** The guards of one API process: the limits it shares with the others, and its own cap. */
export interface TokenGuard {
  limits: SharedTokenLimits;
  slowVerifications: ConcurrencyCap;
}

export function createTokenGuard(
  db: Queryable,
  limits: { perSourcePerMinute: number; maxSlowVerifications: number },
  backoff?: BackoffPolicy,
): TokenGuard {
  return {
    limits: new SharedTokenLimits(db, limits.perSourcePerMinute, backoff),
    slowVerifications: new ConcurrencyCap(limits.maxSlowVerifications),
  };
}
