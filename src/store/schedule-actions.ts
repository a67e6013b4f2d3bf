/**
 * The schedule_actions table: one row per schedule automation and scheduled time whose run was
 * started (its id is derived from the two, so the row and the run agree). A backfill counts the
 * times of its range that have a row as `skipped`; an automation's read answers the latest
 * `firedAt` as `lastRunAt`. Rows go with their automation.
 */
import { iso, type Queryable } from './db';

export type ScheduleActionKind = 'scheduled' | 'backfill' | 'manual';

export interface ScheduleActionRow {
  automationId: string;
  scheduledAt: string;
  kind: ScheduleActionKind;
  firedAt: string;
  executionId: string;
}

/** Records a started action; false when the time already had one (nothing changes). */
export async function recordScheduleAction(db: Queryable, row: ScheduleActionRow): Promise<boolean> {
  const inserted = await db.query(
    `INSERT INTO schedule_actions (automation_id, scheduled_at, kind, fired_at, execution_id)
     VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING RETURNING automation_id`,
    [row.automationId, row.scheduledAt, row.kind, row.firedAt, row.executionId],
  );
  return inserted.length > 0;
}

/** Of `times` (RFC 3339), those that already have an action. */
export async function timesThatRan(
  db: Queryable,
  automationId: string,
  times: readonly string[],
): Promise<Set<string>> {
  if (times.length === 0) return new Set();
  const rows = await db.query<{ scheduledAt: unknown }>(
    `SELECT scheduled_at AS "scheduledAt" FROM schedule_actions
     WHERE automation_id = $1 AND scheduled_at = ANY($2::timestamptz[])`,
    [automationId, times],
  );
  return new Set(rows.map((row) => iso(row.scheduledAt)!));
}

/** The `firedAt` of the automation's latest action of any kind, or null before the first. */
export async function lastFiredAt(db: Queryable, automationId: string): Promise<string | null> {
  const rows = await db.query<{ firedAt: unknown }>(
    'SELECT max(fired_at) AS "firedAt" FROM schedule_actions WHERE automation_id = $1',
    [automationId],
  );
  return iso(rows[0]?.firedAt);
}

/** Forgets the actions of a deleted automation. */
export async function deleteScheduleActions(db: Queryable, automationId: string): Promise<void> {
  await db.query('DELETE FROM schedule_actions WHERE automation_id = $1', [automationId]);
}
