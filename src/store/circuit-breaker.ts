/**
 * The store side of the circuit breaker (docs/api.md#circuit-breaker): one row of state per
 * automation (`breaker_state`: the runs counted in the window, when it tripped) and one row per run
 * it counted or paused (`breaker_runs`, in acceptance order). A delivery is decided by one
 * statement, `breaker_take` (migration 21), on the store's clock: the state row's lock serialises
 * the API processes, so the count is exact across them.
 */
import type { Db, Queryable } from './db';
import { iso } from './db';

/** What the breaker decided for one run: counted in the window, or paused (the breaker is open). */
export interface BreakerTake {
  decision: 'counted' | 'paused';
  /** False when the run was decided before (a repeat of its start): nothing was counted now. */
  inserted: boolean;
  /** When the breaker tripped (paused runs only). */
  trippedAt: string | null;
}

/**
 * Counts the run `runId` in the sliding window of `periodMs`, or pauses it when the breaker is open
 * or the window already holds `maxRuns`: one statement.
 */
export async function takeBreaker(
  db: Queryable,
  automationId: string,
  runId: string,
  maxRuns: number,
  periodMs: number,
): Promise<BreakerTake> {
  const rows = await db.query<{ decision: string; inserted: boolean; tripped: Date | null }>(
    'SELECT * FROM breaker_take($1, $2, $3, $4)',
    [automationId, runId, maxRuns, periodMs],
  );
  const row = rows[0]!;
  return {
    decision: row.decision === 'paused' ? 'paused' : 'counted',
    inserted: row.inserted,
    trippedAt: iso(row.tripped) ?? null,
  };
}

/** Gives back what `takeBreaker` took for a run that was not started (a repeat, or the engine refused it). */
export async function giveBackBreaker(db: Queryable, automationId: string, runId: string): Promise<void> {
  await db.query('SELECT breaker_give_back($1, $2)', [automationId, runId]);
}

/** The breaker's state as the API shows it. */
export interface BreakerState {
  trippedAt: string | null;
  pausedRuns: number;
  runsInPeriod: number;
}

/** The state of an automation's breaker; the window is counted exactly (the runs still in it). */
export async function breakerState(
  db: Queryable,
  automationId: string,
  periodMs: number | null,
): Promise<BreakerState> {
  const rows = await db.query<{ tripped_at: Date | null; paused: string | number; counted: string | number }>(
    `SELECT (SELECT tripped_at FROM breaker_state WHERE automation_id = $1) AS tripped_at,
            (SELECT count(*) FROM breaker_runs WHERE automation_id = $1 AND status = 'paused') AS paused,
            (SELECT count(*) FROM breaker_runs WHERE automation_id = $1 AND status = 'counted'
               AND ($2::bigint IS NULL OR at_ms > (extract(epoch FROM clock_timestamp()) * 1000)::bigint - $2::bigint)) AS counted`,
    [automationId, periodMs],
  );
  const row = rows[0]!;
  return { trippedAt: iso(row.tripped_at) ?? null, pausedRuns: Number(row.paused), runsInPeriod: Number(row.counted) };
}

/** The ids of an automation's paused runs, in the order their events were accepted. */
export async function pausedRuns(db: Queryable, automationId: string): Promise<string[]> {
  const rows = await db.query<{ run_id: string }>(
    "SELECT run_id FROM breaker_runs WHERE automation_id = $1 AND status = 'paused' ORDER BY seq",
    [automationId],
  );
  return rows.map((row) => row.run_id);
}

/**
 * Forgets the paused runs that were let go (`runIds`) and, when no other run is paused (none was
 * paused meanwhile), closes the breaker: it counts from zero. False when others are paused (the
 * caller lets them go too, then calls again). Locks the state row first, as breaker_take does.
 */
export async function releasePaused(db: Db, automationId: string, runIds: string[]): Promise<boolean> {
  return db.transaction(async (tx) => {
    await tx.query('SELECT 1 FROM breaker_state WHERE automation_id = $1 FOR UPDATE', [automationId]);
    if (runIds.length > 0) {
      await tx.query(
        "DELETE FROM breaker_runs WHERE automation_id = $1 AND status = 'paused' AND run_id = ANY($2::text[])",
        [automationId, runIds],
      );
    }
    const others = await tx.query("SELECT 1 FROM breaker_runs WHERE automation_id = $1 AND status = 'paused' LIMIT 1", [
      automationId,
    ]);
    if (others.length > 0) return false;
    await tx.query("DELETE FROM breaker_runs WHERE automation_id = $1 AND status = 'counted'", [automationId]);
    await tx.query('UPDATE breaker_state SET runs_in_period = 0, tripped_at = NULL WHERE automation_id = $1', [
      automationId,
    ]);
    return true;
  });
}

/** Forgets one paused run (it was canceled or terminated on its own); the breaker stays as it is. */
export async function forgetPausedRun(db: Queryable, automationId: string, runId: string): Promise<void> {
  await db.query("DELETE FROM breaker_runs WHERE automation_id = $1 AND run_id = $2 AND status = 'paused'", [
    automationId,
    runId,
  ]);
}

/** The automations whose breaker is open (the metric `automation_breaker_open`). */
export async function openBreakers(db: Queryable): Promise<string[]> {
  const rows = await db.query<{ automation_id: string }>(
    'SELECT automation_id FROM breaker_state WHERE tripped_at IS NOT NULL',
  );
  return rows.map((row) => row.automation_id);
}
