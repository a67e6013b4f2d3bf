/**
 * The directory's own events (the transactional outbox, table `directory_events`): a change of a
 * user or a grant writes its event with the same `Queryable` as the change, inside the change's
 * transaction, so that no change is committed without its event and no event without its change.
 * `seq` orders them for dispatch; `dispatched_at` is set once every run the event starts has
 * been started. Events are kept for a retention period, then purged.
 */
import { iso, type Queryable } from './db';

export interface NewDirectoryEvent {
  id: string;
  type: string;
  actor: string;
  /** 1, or one more than the event whose run caused this change (the loop bound). */
  depth: number;
  /** What the event's runs see besides the envelope (`user`, `grant`, `appEntitlement`): never a secret. */
  payload: Record<string, unknown>;
  /** The W3C trace context of the change (`traceparent`, `tracestate`), when it was traced. */
  traceContext?: Record<string, string> | null;
  /** The automations listening to the type when the change committed (each runs once for the event). */
  targets?: EventTarget[];
}

/** An automation an event starts a run of, with the published version it runs. */
export interface EventTarget {
  automationId: string;
  version: number;
}

/** Channel NOTIFYed (on commit) by every event written: the dispatchers of every process wake. */
export const DIRECTORY_EVENTS_CHANNEL = 'directory_events';

export interface DirectoryEventRow extends Required<Omit<NewDirectoryEvent, 'traceContext' | 'targets'>> {
  targets: EventTarget[];
  seq: number;
  occurredAt: string;
  traceContext: Record<string, string> | null;
  dispatchedAt: string | null;
}

interface RawRow {
  seq: number | string;
  id: string;
  type: string;
  occurred_at: unknown;
  actor: string;
  depth: number | string;
  payload: Record<string, unknown> | string;
  trace_context: Record<string, string> | string | null;
  dispatched_at: unknown;
  targets: EventTarget[] | string;
}

const COLUMNS = 'seq, id, type, occurred_at, actor, depth, payload, trace_context, dispatched_at, targets';

function json<T>(value: T | string): T {
  return typeof value === 'string' ? (JSON.parse(value) as T) : value;
}

function toRow(raw: RawRow): DirectoryEventRow {
  return {
    seq: Number(raw.seq),
    id: raw.id,
    type: raw.type,
    occurredAt: iso(raw.occurred_at)!,
    actor: raw.actor,
    depth: Number(raw.depth),
    payload: json(raw.payload),
    traceContext: raw.trace_context === null ? null : json(raw.trace_context),
    dispatchedAt: iso(raw.dispatched_at),
    targets: json(raw.targets ?? []),
  };
}

/** Writes one event; call it with the transaction of the change it describes. */
export async function insertDirectoryEvent(tx: Queryable, event: NewDirectoryEvent): Promise<DirectoryEventRow> {
  const rows = await tx.query<RawRow>(
    `INSERT INTO directory_events (id, type, actor, depth, payload, trace_context, targets)
     VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING ${COLUMNS}`,
    [
      event.id,
      event.type,
      event.actor,
      event.depth,
      JSON.stringify(event.payload),
      event.traceContext ? JSON.stringify(event.traceContext) : null,
      JSON.stringify(event.targets ?? []),
    ],
  );
  // Delivered when the change commits, to every process's dispatcher (this one's too); never when it rolls back.
  if ((event.targets ?? []).length > 0) await tx.query(`SELECT pg_notify('${DIRECTORY_EVENTS_CHANNEL}', '')`);
  return toRow(rows[0]!);
}

/** One event by id. */
export async function getDirectoryEvent(db: Queryable, id: string): Promise<DirectoryEventRow | undefined> {
  const rows = await db.query<RawRow>(`SELECT ${COLUMNS} FROM directory_events WHERE id = $1`, [id]);
  return rows[0] && toRow(rows[0]);
}

/** Up to `limit` events not yet dispatched, in the order they were written. */
export async function undispatchedEvents(db: Queryable, limit: number): Promise<DirectoryEventRow[]> {
  const rows = await db.query<RawRow>(
    `SELECT ${COLUMNS} FROM directory_events WHERE dispatched_at IS NULL ORDER BY seq LIMIT $1`,
    [limit],
  );
  return rows.map(toRow);
}

/**
 * The published, enabled event automations whose trigger names `type`, each with its latest
 * published version; read inside the change's transaction (the listeners as of its commit).
 */
export async function listeningAutomations(tx: Queryable, type: string): Promise<EventTarget[]> {
  const rows = await tx.query<{ id: string; version: number | string }>(
    `SELECT a.id, (SELECT max(v.version) FROM automation_versions v WHERE v.automation_id = a.id) AS version
       FROM automations a
      WHERE a.published AND a.trigger->>'kind' = 'event' AND a.trigger->'types' ? $1
        AND COALESCE((a.trigger->>'enabled')::boolean, true)
      ORDER BY a.id`,
    [type],
  );
  return rows
    .filter((row) => row.version !== null)
    .map((row) => ({ automationId: row.id, version: Number(row.version) }));
}

/** Marks events dispatched (every run they start has been started). */
export async function markDispatched(db: Queryable, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return;
  await db.query(`UPDATE directory_events SET dispatched_at = now() WHERE id = ANY($1) AND dispatched_at IS NULL`, [
    ids,
  ]);
}

/** Removes the events that occurred more than `retentionSeconds` ago; answers how many. */
export async function purgeDirectoryEvents(db: Queryable, retentionSeconds: number): Promise<number> {
  const rows = await db.query<{ id: string }>(
    `DELETE FROM directory_events WHERE occurred_at < now() - make_interval(secs => $1) RETURNING id`,
    [retentionSeconds],
  );
  return rows.length;
}
