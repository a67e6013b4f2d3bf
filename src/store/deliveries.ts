/**
 * The webhook delivery log: one row per delivery kept in detail (never a body, signature, token
 * or secret), and per automation and minute the number of deliveries only counted. Rows older
 * than the retention are pruned.
 */
import type { Queryable } from './db';
import { iso } from './db';

export type DeliverySource = 'webhook' | 'schedule' | 'event';

export interface DeliveryRecord {
  id: string;
  automationId: string;
  receivedAt: string;
  /** The HTTP status answered; null for a schedule's action or a directory event. */
  status: number | null;
  reason: string;
  eventId: string | null;
  /** The sender's address; null for a schedule's action or a directory event. */
  sourceAddress: string | null;
  executionId: string | null;
  latencyMs: number;
  /** Absent: `webhook`. */
  source?: DeliverySource;
}

export interface DeliveryCount {
  automationId: string;
  /** Start of the minute (UTC). */
  minute: string;
  status: number;
  reason: string;
  count: number;
}

interface DeliveryRow {
  id: string;
  automation_id: string;
  received_at: Date;
  status: number | null;
  reason: string;
  event_id: string | null;
  source_address: string | null;
  execution_id: string | null;
  latency_ms: number;
  source: DeliverySource;
}

const COLUMNS = 10;

/** One multi-row INSERT per call (callers pass bounded batches). */
export async function insertDeliveries(db: Queryable, records: readonly DeliveryRecord[]): Promise<void> {
  if (records.length === 0) return;
  const params: unknown[] = [];
  const rows = records.map((r, i) => {
    params.push(
      r.id,
      r.automationId,
      r.receivedAt,
      r.status,
      r.reason,
      r.eventId,
      r.sourceAddress,
      r.executionId,
      r.latencyMs,
      r.source ?? 'webhook',
    );
    const base = i * COLUMNS;
    return `($${base + 1}, $${base + 2}, $${base + 3}::timestamptz, $${base + 4}, $${base + 5}, $${base + 6}, $${base + 7}, $${base + 8}, $${base + 9}, $${base + 10})`;
  });
  await db.query(
    `INSERT INTO webhook_deliveries (id, automation_id, received_at, status, reason, event_id, source_address, execution_id, latency_ms, source)
     VALUES ${rows.join(', ')} ON CONFLICT (id) DO NOTHING`,
    params,
  );
}

/** Adds to the per-minute counts of deliveries that were not kept in detail. */
export async function addDeliveryCounts(db: Queryable, counts: readonly DeliveryCount[]): Promise<void> {
  if (counts.length === 0) return;
  const params: unknown[] = [];
  const rows = counts.map((c, i) => {
    params.push(c.automationId, c.minute, c.status, c.reason, c.count);
    const base = i * 5;
    return `($${base + 1}, $${base + 2}::timestamptz, $${base + 3}, $${base + 4}, $${base + 5})`;
  });
  await db.query(
    `INSERT INTO webhook_delivery_counts (automation_id, minute, status, reason, count) VALUES ${rows.join(', ')}
     ON CONFLICT (automation_id, minute, status, reason) DO UPDATE SET count = webhook_delivery_counts.count + EXCLUDED.count`,
    params,
  );
}

export interface DeliveryFilter {
  status?: number;
  reason?: string;
}

/** Newest first (ids are UUIDv7, so id order is arrival order), after the cursor id. */
export async function listDeliveries(
  db: Queryable,
  automationId: string,
  filter: DeliveryFilter,
  beforeId: string | undefined,
  limit: number,
): Promise<DeliveryRecord[]> {
  const rows = await db.query<DeliveryRow>(
    `SELECT * FROM webhook_deliveries
     WHERE automation_id = $1 AND ($2::text IS NULL OR id < $2) AND ($3::integer IS NULL OR status = $3) AND ($4::text IS NULL OR reason = $4)
     ORDER BY id DESC LIMIT $5`,
    [automationId, beforeId ?? null, filter.status ?? null, filter.reason ?? null, limit],
  );
  return rows.map((row) => ({
    id: row.id,
    automationId: row.automation_id,
    receivedAt: iso(row.received_at) ?? '',
    status: row.status === null ? null : Number(row.status),
    reason: row.reason,
    eventId: row.event_id,
    sourceAddress: row.source_address,
    executionId: row.execution_id,
    latencyMs: Number(row.latency_ms),
    source: row.source ?? 'webhook',
  }));
}

/** Counts of deliveries not kept in detail, newest minute first, within the retention. */
export async function listDeliveryCounts(db: Queryable, automationId: string): Promise<DeliveryCount[]> {
  const rows = await db.query<{
    automation_id: string;
    minute: Date;
    status: number;
    reason: string;
    count: string | number;
  }>('SELECT * FROM webhook_delivery_counts WHERE automation_id = $1 ORDER BY minute DESC, status, reason', [
    automationId,
  ]);
  return rows.map((row) => ({
    automationId: row.automation_id,
    minute: iso(row.minute) ?? '',
    status: Number(row.status),
    reason: row.reason,
    count: Number(row.count),
  }));
}

/** Deletes what is older than `before` (detail rows and counts). */
export async function pruneDeliveries(db: Queryable, before: Date): Promise<void> {
  await db.query('DELETE FROM webhook_deliveries WHERE received_at < $1', [before]);
  await db.query('DELETE FROM webhook_delivery_counts WHERE minute < $1', [before]);
}
