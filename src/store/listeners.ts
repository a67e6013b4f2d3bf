/**
 * What the webhook receiver needs about a listener, in one read: the automation that owns the
 * listener id and its latest published version (what new runs execute).
 */
import { iso, type Queryable } from './db';
import { toAutomationRecord, type AutomationRecord, type AutomationRow } from './automations';
import type { AutomationVersionRecord } from './automation-versions';

export interface ListenerRecord {
  automation: AutomationRecord;
  /** Latest published version; undefined when the automation was never published. */
  published: AutomationVersionRecord | undefined;
  /** Whether the listener has filtered events on record (then a start checks it is not a repeat of one). */
  hasFilteredEvents: boolean;
}

/** Channel on which migration 6 NOTIFYs the listener id of every changed automation or version. */
export const LISTENER_CHANGED_CHANNEL = 'listener_changed';

interface ListenerRow extends AutomationRow {
  published_version: number | null;
  published_snapshot: AutomationVersionRecord['snapshot'] | null;
  published_at_version: Date | null;
  has_filtered_events: boolean;
}

export async function getListener(db: Queryable, listenerId: string): Promise<ListenerRecord | undefined> {
  const rows = await db.query<ListenerRow>(
    `SELECT a.*, v.version AS published_version, v.snapshot AS published_snapshot, v.published_at AS published_at_version,
       EXISTS (SELECT 1 FROM filtered_events f WHERE f.listener_id = a.listener_id) AS has_filtered_events
     FROM automations a
     LEFT JOIN LATERAL (
       SELECT version, snapshot, published_at FROM automation_versions WHERE automation_id = a.id ORDER BY version DESC LIMIT 1
     ) v ON true
     WHERE a.listener_id = $1`,
    [listenerId],
  );
  const row = rows[0];
  if (!row) return undefined;
  const automation = toAutomationRecord(row);
  const published =
    row.published_version === null || row.published_snapshot === null
      ? undefined
      : {
          automationId: automation.id,
          version: Number(row.published_version),
          snapshot: row.published_snapshot,
          publishedAt: iso(row.published_at_version) ?? '',
        };
  return { automation, published, hasFilteredEvents: row.has_filtered_events === true };
}
