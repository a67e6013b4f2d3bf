/**
 * Flood guards of the token endpoint: a per-source rate limit (token bucket; beyond it 429 with
 * Retry-After) and a cap on slow (scrypt) secret verifications running at once (beyond it 503 with
 * Retry-After), so that the libuv thread pool, which DNS lookups and JWKS fetches share, is never
 * filled by password hashing.
 */
import { GuardRefusal } from '../errors';

interface Bucket {
  tokens: number;
  updatedMs: number;
}

/** Token buckets per key (source address): `perMinute` requests, refilled continuously. */
export class RateLimiter {
  private readonly buckets = new Map<string, Bucket>();

  constructor(
    readonly perMinute: number,
    private readonly maxKeys = 100_000,
    private readonly now: () => number = Date.now,
  ) {}

  /** Takes one request from `key`'s bucket; throws a 429 `GuardRefusal` when it is empty. */
  take(key: string): void {
    const now = this.now();
    const ratePerMs = this.perMinute / 60_000;
    let bucket = this.buckets.get(key);
    if (bucket) {
      bucket.tokens = Math.min(this.perMinute, bucket.tokens + (now - bucket.updatedMs) * ratePerMs);
      bucket.updatedMs = now;
      // Most recently used last, so that the oldest entry is the first to go when the map is full.
      this.buckets.delete(key);
    } else {
      if (this.buckets.size >= this.maxKeys) this.evict(now, ratePerMs);
      bucket = { tokens: this.perMinute, updatedMs: now };
    }
    this.buckets.set(key, bucket);
    if (bucket.tokens < 1) {
      const retryAfterSeconds = Math.max(1, Math.ceil((1 - bucket.tokens) / ratePerMs / 1000));
      throw new GuardRefusal(429, 'too many token requests from this address; retry later', retryAfterSeconds);
    }
    bucket.tokens -= 1;
  }

  private evict(now: number, ratePerMs: number): void {
    for (const [key, bucket] of this.buckets) {
      if (bucket.tokens + (now - bucket.updatedMs) * ratePerMs >= this.perMinute) this.buckets.delete(key);
    }
    const oldest = this.buckets.keys().next().value;
    if (this.buckets.size >= this.maxKeys && oldest !== undefined) this.buckets.delete(oldest);
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

/** Both guards of one API process. */
export interface TokenGuard {
  perSource: RateLimiter;
  slowVerifications: ConcurrencyCap;
}

export function createTokenGuard(limits: { perSourcePerMinute: number; maxSlowVerifications: number }): TokenGuard {
  return {
    perSource: new RateLimiter(limits.perSourcePerMinute),
    slowVerifications: new ConcurrencyCap(limits.maxSlowVerifications),
  };
}
