/**
 * The store side of flow control between runs (src/flow): the ids of filtered
 * events (so that a repeat answers 409, like the repeat of an event that started a run) and the
 * state of rate limits (GCRA: one row per automation and key hash, its theoretical arrival time).
 */
import type { Queryable } from './db';

/* A filtered event id answers 409 for 7 days: the namespace retention of runs (interval '7 days'). */

/**
 * Records a filtered event; false when the id was already recorded for this listener within the
 * retention (a repeat). A row past the retention is taken over, as if it were not there.
 */
export async function recordFilteredEvent(db: Queryable, listenerId: string, eventId: string): Promise<boolean> {
  const rows = await db.query(
    `INSERT INTO filtered_events (listener_id, event_id) VALUES ($1, $2)
     ON CONFLICT (listener_id, event_id) DO UPDATE SET received_at = now()
       WHERE filtered_events.received_at < now() - interval '7 days'
     RETURNING 1`,
    [listenerId, eventId],
  );
  return rows.length > 0;
}

/** Whether this listener filtered this event id within the retention. */
export async function isFilteredEvent(db: Queryable, listenerId: string, eventId: string): Promise<boolean> {
  const rows = await db.query(
    "SELECT 1 FROM filtered_events WHERE listener_id = $1 AND event_id = $2 AND received_at >= now() - interval '7 days'",
    [listenerId, eventId],
  );
  return rows.length > 0;
}

/** What one rate-limit decision found: allowed, or refused with the time until a run may start. */
export type RateDecision = { allowed: true } | { allowed: false; retryAfterMs: number };

/**
 * Takes one run from a rate limit of `limit` runs per `periodMs` (GCRA, the generic cell rate
 * algorithm): the row holds the key's theoretical arrival time (TAT); a run is allowed when
 * `max(TAT, now) + periodMs/limit - now <= periodMs`, and then moves the TAT by `periodMs/limit`.
 * One statement, on the store's clock: the row lock of the upsert serialises the API processes, so
 * the count is exact across them. A refusal changes nothing.
 */
export async function takeRateLimit(
  db: Queryable,
  automationId: string,
  keyHash: string,
  limit: number,
  periodMs: number,
): Promise<RateDecision> {
  const interval = periodMs / limit;
  const rows = await db.query<{
    granted: string | number | null;
    current: string | number | null;
    now_ms: string | number;
  }>(
    `WITH n AS (SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS ms),
     up AS (
       INSERT INTO rate_limits AS r (automation_id, key_hash, tat_ms)
       SELECT $1, $2, n.ms + $3::bigint FROM n
       ON CONFLICT (automation_id, key_hash) DO UPDATE
         SET tat_ms = greatest(r.tat_ms, EXCLUDED.tat_ms - $3::bigint) + $3::bigint
         WHERE greatest(r.tat_ms, EXCLUDED.tat_ms - $3::bigint) + $3::bigint - (EXCLUDED.tat_ms - $3::bigint) <= $4::bigint
       RETURNING tat_ms
     )
     SELECT (SELECT tat_ms FROM up) AS granted,
            (SELECT tat_ms FROM rate_limits WHERE automation_id = $1 AND key_hash = $2) AS current,
            (SELECT ms FROM n) AS now_ms`,
    [automationId, keyHash, Math.ceil(interval), periodMs],
  );
  const row = rows[0]!;
  if (row.granted !== null) return { allowed: true };
  const now = Number(row.now_ms);
  const tat = row.current === null ? now : Number(row.current);
  return { allowed: false, retryAfterMs: Math.max(0, Math.max(tat, now) + Math.ceil(interval) - periodMs - now) };
}

/** Gives back one run taken by `takeRateLimit` (the delivery turned out to be a repeat). */
export async function returnRateLimit(
  db: Queryable,
  automationId: string,
  keyHash: string,
  limit: number,
  periodMs: number,
): Promise<void> {
  await db.query('UPDATE rate_limits SET tat_ms = tat_ms - $3::bigint WHERE automation_id = $1 AND key_hash = $2', [
    automationId,
    keyHash,
    Math.ceil(periodMs / limit),
  ]);
}

/**
 * Drops filtered event ids past the retention, rate-limit rows that no longer limit anything, and
 * the count rows of concurrency lanes without a place (src/store/lane-places.ts: a later delivery
 * of the key makes its row again; a take holding the row's lock keeps it).
 */
export async function pruneFlowControl(db: Queryable): Promise<void> {
  await db.query("DELETE FROM filtered_events WHERE received_at < now() - interval '7 days'");
  await db.query('DELETE FROM rate_limits WHERE tat_ms < (extract(epoch FROM clock_timestamp()) * 1000)::bigint');
  await db.query('DELETE FROM lane_counts WHERE taken = 0');
}
