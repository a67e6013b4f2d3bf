/**
 * Published versions of automations: each publish snapshots what a run executes (display name and
 * steps) under the automation's version number. The receiver starts runs with the latest one, so
 * editing a published automation changes nothing for new runs until it is published again.
 * Trigger settings (auth method, CIDRs, enabled, secret) are not versioned: they stay live.
 */
import type { Queryable } from './db';
import { iso } from './db';
import type { StepDefinition } from '../contract/run';
import type { StoredFlow } from './automations';

/** What a run of one published version executes. */
export interface AutomationSnapshot {
  displayName: string;
  steps: StepDefinition[];
  /** The version's filter, concurrency and rate limit; absent in snapshots published before they existed. */
  flow?: StoredFlow;
}

export interface AutomationVersionRecord {
  automationId: string;
  version: number;
  snapshot: AutomationSnapshot;
  publishedAt: string;
}

interface VersionRow {
  automation_id: string;
  version: number;
  snapshot: AutomationSnapshot;
  published_at: Date;
}

function toRecord(row: VersionRow): AutomationVersionRecord {
  return {
    automationId: row.automation_id,
    version: Number(row.version),
    snapshot: row.snapshot,
    publishedAt: iso(row.published_at) ?? '',
  };
}

/**
 * Records a publish of `version`. Publishing the same version again (unpublish, publish, no edit
 * in between) keeps its snapshot and moves `published_at`.
 */
export async function recordPublishedVersion(
  db: Queryable,
  automationId: string,
  version: number,
  snapshot: AutomationSnapshot,
): Promise<AutomationVersionRecord> {
  const rows = await db.query<VersionRow>(
    `INSERT INTO automation_versions (automation_id, version, snapshot) VALUES ($1, $2, $3::json)
     ON CONFLICT (automation_id, version) DO UPDATE SET published_at = now()
     RETURNING *`,
    [automationId, version, JSON.stringify(snapshot)],
  );
  return toRecord(rows[0]!);
}

/** The latest published version of an automation: what new runs execute. */
export async function getLatestPublishedVersion(
  db: Queryable,
  automationId: string,
): Promise<AutomationVersionRecord | undefined> {
  const rows = await db.query<VersionRow>(
    'SELECT * FROM automation_versions WHERE automation_id = $1 ORDER BY version DESC LIMIT 1',
    [automationId],
  );
  return rows[0] ? toRecord(rows[0]) : undefined;
}

export async function getPublishedVersion(
  db: Queryable,
  automationId: string,
  version: number,
): Promise<AutomationVersionRecord | undefined> {
  const rows = await db.query<VersionRow>(
    'SELECT * FROM automation_versions WHERE automation_id = $1 AND version = $2',
    [automationId, version],
  );
  return rows[0] ? toRecord(rows[0]) : undefined;
}

/** The number of the latest published version of each automation (absent: never published). */
export async function latestPublishedVersionNumbers(
  db: Queryable,
  automationIds: string[],
): Promise<Map<string, number>> {
  if (automationIds.length === 0) return new Map();
  const rows = await db.query<{ automation_id: string; version: number }>(
    'SELECT automation_id, max(version) AS version FROM automation_versions WHERE automation_id = ANY($1::text[]) GROUP BY automation_id',
    [automationIds],
  );
  return new Map(rows.map((row) => [row.automation_id, Number(row.version)]));
}
