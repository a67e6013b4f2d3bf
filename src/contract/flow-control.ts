/**
 * The stored shape of an automation's flow control (`filter`, `concurrency`, `rateLimit`), shared by
 * the store and the domain; the rules that validate and evaluate it are in src/domain/flow-control.ts.
 */

export interface ConcurrencySettings {
  /** Runs per key value that execute at a time, 1..100. */
  limit: number;
  /** CEL over ctx.trigger; null: one key for the whole automation. */
  key: string | null;
}

export interface RateLimitSettings {
  /** Runs per `period`, 1..10,000. */
  limit: number;
  /** Whole seconds, "1s".."86400s". */
  period: string;
  key: string | null;
}

export interface FlowControl {
  filter: string | null;
  concurrency: ConcurrencySettings | null;
  rateLimit: RateLimitSettings | null;
}

/** The circuit breaker: a live setting of the automation (not versioned, not in a run's version). */
export interface CircuitBreakerSettings {
  /** Runs per `period`, 1..1,000,000; the run past it trips the breaker. */
  maxRuns: number;
  /** Whole seconds, "60s".."2592000s". */
  period: string;
}
