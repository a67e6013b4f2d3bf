/**
 * The store side of the token endpoint's limits (src/auth/token-guard.ts), shared by every API
 * process: the per-source rate limit (GCRA, as the automations' rate limits in flow-control.ts: one
 * row per source holding its theoretical arrival time) and the failure backoff of a client id from
 * one source. All times are the store's clock, so the processes agree.
 */
import type { Queryable } from './db';

/** What one admission found: the source's limit, and the backoff of (client id, source). */
export interface TokenAdmission {
  /** The source's request was counted; false: its limit is used up (nothing changed). */
  sourceAllowed: boolean;
  /** When `sourceAllowed` is false: milliseconds until the source may send again. */
  sourceRetryAfterMs: number;
  /** Milliseconds the client id must still wait after its failures from this source (0: none). */
  backoffMs: number;
}

/**
 * One statement: takes one request from `source`'s limit (`limit` per `periodMs`; a refusal changes
 * nothing) and reads the backoff of `clientId` from `source`. The row lock of the upsert serialises
 * the API processes, so the count is exact across them.
 */
export async function admitTokenRequest(
  db: Queryable,
  source: string,
  clientId: string,
  limit: number,
  periodMs: number,
): Promise<TokenAdmission> {
  const interval = Math.ceil(periodMs / limit);
  const rows = await db.query<{
    granted: string | number | null;
    current: string | number | null;
    blocked_until: string | number | null;
    now_ms: string | number;
  }>(
    `WITH n AS (SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS ms),
     up AS (
       INSERT INTO token_source_limits AS r (source, tat_ms)
       SELECT $1, n.ms + $2::bigint FROM n
       ON CONFLICT (source) DO UPDATE
         SET tat_ms = greatest(r.tat_ms, EXCLUDED.tat_ms - $2::bigint) + $2::bigint
         WHERE greatest(r.tat_ms, EXCLUDED.tat_ms - $2::bigint) + $2::bigint - (EXCLUDED.tat_ms - $2::bigint) <= $3::bigint
       RETURNING tat_ms
     )
     SELECT (SELECT tat_ms FROM up) AS granted,
            (SELECT tat_ms FROM token_source_limits WHERE source = $1) AS current,
            (SELECT blocked_until_ms FROM token_failures WHERE client_id = $4 AND source = $1) AS blocked_until,
            (SELECT ms FROM n) AS now_ms`,
    [source, interval, periodMs, clientId],
  );
  const row = rows[0]!;
  const now = Number(row.now_ms);
  const backoffMs = row.blocked_until === null ? 0 : Math.max(0, Number(row.blocked_until) - now);
  if (row.granted !== null) return { sourceAllowed: true, sourceRetryAfterMs: 0, backoffMs };
  const tat = row.current === null ? now : Number(row.current);
  return {
    sourceAllowed: false,
    sourceRetryAfterMs: Math.max(0, Math.max(tat, now) + interval - periodMs - now),
    backoffMs,
  };
}

/**
 * One statement: takes one request of `key` (a kind of request and its source, e.g.
 * `console-login:203.0.113.7`) from a limit of `limit` per `periodMs`, in the table of the token
 * endpoint's per-source limits (GCRA, as `admitTokenRequest`; its keys are bare sources, so the
 * counts stay apart). A refusal changes nothing and answers the milliseconds until the next request
 * is allowed.
 */
export async function takeSourceRequest(
  db: Queryable,
  key: string,
  limit: number,
  periodMs: number,
): Promise<{ allowed: true } | { allowed: false; retryAfterMs: number }> {
  const interval = Math.ceil(periodMs / limit);
  const rows = await db.query<{
    granted: string | number | null;
    current: string | number | null;
    now_ms: string | number;
  }>(
    `WITH n AS (SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS ms),
     up AS (
       INSERT INTO token_source_limits AS r (source, tat_ms)
       SELECT $1, n.ms + $2::bigint FROM n
       ON CONFLICT (source) DO UPDATE
         SET tat_ms = greatest(r.tat_ms, EXCLUDED.tat_ms - $2::bigint) + $2::bigint
         WHERE greatest(r.tat_ms, EXCLUDED.tat_ms - $2::bigint) + $2::bigint - (EXCLUDED.tat_ms - $2::bigint) <= $3::bigint
       RETURNING tat_ms
     )
     SELECT (SELECT tat_ms FROM up) AS granted,
            (SELECT tat_ms FROM token_source_limits WHERE source = $1) AS current,
            (SELECT ms FROM n) AS now_ms`,
    [key, interval, periodMs],
  );
  const row = rows[0]!;
  if (row.granted !== null) return { allowed: true };
  const now = Number(row.now_ms);
  const tat = row.current === null ? now : Number(row.current);
  return { allowed: false, retryAfterMs: Math.max(0, Math.max(tat, now) + interval - periodMs - now) };
}

/** How failures of one client id from one source make it wait (src/auth/token-guard.ts decides). */
export interface BackoffPolicy {
  /** Failures allowed before any wait. */
  free: number;
  /** The wait after the first failure past `free`, doubled with each further one... */
  baseMs: number;
  /** ...up to this. */
  maxMs: number;
  /** A failure this long after the previous one starts the count again. */
  forgetAfterMs: number;
}

/**
 * Records a failed attempt of `clientId` from `source` (one statement): the count within
 * `forgetAfterMs` of the previous failure, and the time before which the next attempt is refused.
 */
export async function recordTokenFailure(
  db: Queryable,
  source: string,
  clientId: string,
  policy: BackoffPolicy,
): Promise<void> {
  // failures → wait: 0 up to `free`, then baseMs · 2^(failures - free - 1), capped (the exponent
  // is capped first so that the power stays small).
  await db.query(
    `WITH n AS (SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS ms)
     INSERT INTO token_failures AS f (client_id, source, failures, last_failure_ms, blocked_until_ms)
     SELECT $1, $2, 1, n.ms, n.ms + CASE WHEN 1 > $3::int THEN $4::bigint ELSE 0 END FROM n
     ON CONFLICT (client_id, source) DO UPDATE SET
       failures = CASE WHEN EXCLUDED.last_failure_ms - f.last_failure_ms > $6::bigint THEN 1 ELSE f.failures + 1 END,
       last_failure_ms = EXCLUDED.last_failure_ms,
       blocked_until_ms = EXCLUDED.last_failure_ms + CASE
         WHEN (CASE WHEN EXCLUDED.last_failure_ms - f.last_failure_ms > $6::bigint THEN 1 ELSE f.failures + 1 END) <= $3::int THEN 0
         ELSE least($5::bigint, $4::bigint * (2::bigint ^ least(40, (CASE WHEN EXCLUDED.last_failure_ms - f.last_failure_ms > $6::bigint THEN 1 ELSE f.failures + 1 END) - $3::int - 1))::bigint)
       END`,
    [clientId, source, policy.free, policy.baseMs, policy.maxMs, policy.forgetAfterMs],
  );
}

/** Drops rows that limit nothing any more: sources whose limit is full again, backoffs long forgotten. */
export async function pruneTokenLimits(db: Queryable, forgetAfterMs: number): Promise<void> {
  await db.query(
    `WITH n AS (SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS ms),
     s AS (DELETE FROM token_source_limits WHERE tat_ms < (SELECT ms FROM n) RETURNING 1)
     DELETE FROM token_failures WHERE last_failure_ms < (SELECT ms FROM n) - $1::bigint AND blocked_until_ms < (SELECT ms FROM n)`,
    [forgetAfterMs],
  );
}
