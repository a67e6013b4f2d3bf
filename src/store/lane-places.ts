/**
 * The store side of a concurrency key's queue bound (docs/api.md#flow-control-between-runs): one
 * row per run that holds a place in its key's lane (`lane_places`: running or waiting, from its
 * delivery until it ends) and one count per lane (`lane_counts`). A delivery is admitted or refused
 * by one statement, `lane_take`, under the count row's lock: the bound is exact across API
 * processes. A run gives its place back when it ends (workflows/automation.ts, through an
 * activity); a place whose run ended without a word (terminated, timed out) or never started is
 * found by the reconcile of a full lane (src/flow/concurrency.ts).
 */
import type { Queryable } from './db';

/** What `lane_take` decided: admitted (a place taken now, or held already by this run), or refused. */
export interface LaneTake {
  admitted: boolean;
  /** True when this call took the place (false: refused, or the run held it already). */
  inserted: boolean;
}

/** Takes a place in `lane` for `runId` when fewer than `cap` are taken; a run holding one already is admitted again. */
export async function takeLanePlace(db: Queryable, lane: string, runId: string, cap: number): Promise<LaneTake> {
  const rows = await db.query<{ admitted: boolean; inserted: boolean }>('SELECT * FROM lane_take($1, $2, $3)', [
    lane,
    runId,
    cap,
  ]);
  const row = rows[0]!;
  return { admitted: row.admitted, inserted: row.inserted };
}

/** Gives back the places of `runIds` in `lane` (each at most once); answers how many were held. */
export async function freeLanePlaces(db: Queryable, lane: string, runIds: readonly string[]): Promise<number> {
  if (runIds.length === 0) return 0;
  const rows = await db.query<{ freed: number }>('SELECT lane_free($1, $2::text[]) AS freed', [lane, [...runIds]]);
  return Number(rows[0]!.freed);
}

/** How many places of `lane` are taken. */
export async function lanePlacesTaken(db: Queryable, lane: string): Promise<number> {
  const rows = await db.query<{ taken: number }>('SELECT taken FROM lane_counts WHERE lane = $1', [lane]);
  return rows.length === 0 ? 0 : Number(rows[0]!.taken);
}

/**
 * Claims the reconcile of `lane` for the caller: true at most once per `intervalMs` across API
 * processes (the store's clock), so that a flood against a full lane asks the engine once per interval.
 */
export async function claimLaneCheck(db: Queryable, lane: string, intervalMs: number): Promise<boolean> {
  const rows = await db.query(
    `UPDATE lane_counts SET checked_at = clock_timestamp()
      WHERE lane = $1 AND (checked_at IS NULL OR checked_at <= clock_timestamp() - make_interval(secs => $2::double precision / 1000))
      RETURNING 1`,
    [lane, intervalMs],
  );
  return rows.length > 0;
}

/** A place as the reconcile sees it: its run, and how long ago it was taken (the store's clock). */
export interface LanePlace {
  runId: string;
  ageMs: number;
}

/** The `limit` oldest places of `lane`. */
export async function oldestLanePlaces(db: Queryable, lane: string, limit: number): Promise<LanePlace[]> {
  const rows = await db.query<{ run_id: string; age_ms: string | number }>(
    `SELECT run_id, (extract(epoch FROM clock_timestamp() - taken_at) * 1000)::bigint AS age_ms
       FROM lane_places WHERE lane = $1 ORDER BY taken_at, run_id LIMIT $2`,
    [lane, limit],
  );
  return rows.map((row) => ({ runId: row.run_id, ageMs: Number(row.age_ms) }));
}
