/**
 * Exactly-once, counted where a duplicate would show. Ownership rows cannot tell: the table's key
 * and the insert's ON CONFLICT DO NOTHING keep a second insert from adding a row. These count the
 * effect itself instead:
 *  - `completedActivities`: the completed executions of an activity in every run's history, as a
 *    regular activity or as a local one (a marker with a result: an effect's first attempt), so
 *    a second run, or a run that executed the step twice either way, shows as 2;
 *  - `ownershipCreations`: the `entitlement_owner.create` audit events, written in the insert's
 *    transaction only when the insert reports that it created the row.
 */
import type { Client } from '@temporalio/client';
import { localActivityType } from '../../src/temporal/run-history';
import type { Pool } from 'pg';

export interface RunRef {
  workflowId: string;
  runId: string;
}

/** Completed `activityType` executions (regular or local) per workflow id, summed over the given runs' histories. */
export async function completedActivities(
  client: Client,
  runs: RunRef[],
  activityType: string,
  parallel = 8,
): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  const queue = [...runs];
  const worker = async (): Promise<void> => {
    for (let run = queue.shift(); run; run = queue.shift()) {
      const history = await client.workflow.getHandle(run.workflowId, run.runId).fetchHistory();
      const scheduled = new Map<string, string>();
      let completed = 0;
      for (const event of history.events ?? []) {
        const attrs = event.activityTaskScheduledEventAttributes;
        if (attrs) scheduled.set(String(event.eventId), attrs.activityType?.name ?? '');
        const done = event.activityTaskCompletedEventAttributes;
        if (done && scheduled.get(String(done.scheduledEventId)) === activityType) completed++;
        const marker = event.markerRecordedEventAttributes;
        if (marker && !marker.failure && marker.details?.result && localActivityType(marker) === activityType)
          completed++;
      }
      counts.set(run.workflowId, (counts.get(run.workflowId) ?? 0) + completed);
    }
  };
  await Promise.all(Array.from({ length: parallel }, worker));
  return counts;
}

/** `entitlement_owner.create` audit events per role slug for one user (`schema` qualifies the table). */
export async function ownershipCreations(pool: Pool, userId: string, schema?: string): Promise<Map<string, number>> {
  const table = schema ? `${schema}.audit_events` : 'audit_events';
  const { rows } = await pool.query<{ role: string; n: number }>(
    `SELECT details->>'roleSlug' AS role, count(*)::int AS n FROM ${table}
      WHERE action = 'entitlement_owner.create' AND details->>'userId' = $1 GROUP BY 1`,
    [userId],
  );
  return new Map(rows.map((r) => [r.role, r.n]));
}
