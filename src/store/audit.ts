/** Audit trail: who changed what, when. Written in the same transaction as the change itself. */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Queryable } from './db';
import { iso } from './db';
import { newId } from '../ids';

export interface AuditInput {
  /** `client:<clientId>` for API clients, `person:<issuer>#<subject>` for people (OIDC), `automation:<id>` for runs. */
  actor: string;
  /** e.g. `automation.create`, `entitlement_owner.create`. */
  action: string;
  resourceType: string;
  resourceId: string;
  /** Never secrets or payloads. */
  details?: Record<string, unknown>;
}

export interface AuditEvent extends Required<AuditInput> {
  id: string;
  at: string;
}

export async function recordAudit(db: Queryable, input: AuditInput): Promise<void> {
  await db.query(`INSERT INTO audit_events ${AUDIT_COLUMNS} VALUES (${auditPlaceholders(1)})`, auditParams(input));
}

/** The columns an audit insert writes, in the order of `auditParams`. */
export const AUDIT_COLUMNS = '(id, actor, action, resource_type, resource_id, details)';

/** Who a person actor is, for the audit records written on their behalf. */
export interface ActorPerson {
  actor: string;
  name: string;
  email: string;
}

const actingPerson = new AsyncLocalStorage<ActorPerson>();

/**
 * Runs `work` on behalf of a person: every audit record it writes with the person's actor string
 * also carries their `name` and `email` in its details (the actor string alone names an OIDC
 * subject, which no one reads). Set once where a request is authenticated.
 */
export function onBehalfOf<T>(person: ActorPerson, work: () => Promise<T>): Promise<T> {
  return actingPerson.run(person, work);
}

/** The six parameters of one audit event, in the order of AUDIT_COLUMNS (a fresh id). */
export function auditParams(input: AuditInput): unknown[] {
  const person = actingPerson.getStore();
  const details =
    person && person.actor === input.actor
      ? { ...input.details, name: person.name, email: person.email }
      : (input.details ?? {});
  return [newId(), input.actor, input.action, input.resourceType, input.resourceId, JSON.stringify(details)];
}

/**
 * The placeholders of `auditParams` from `$first` on: `$7, $8, …, $12::jsonb`. A statement that
 * writes its audit event only when its change happened selects them `FROM` the change's RETURNING
 * (src/store/owners.ts).
 */
export function auditPlaceholders(first: number): string {
  return ['', '', '', '', '', '::jsonb'].map((cast, i) => `$${first + i}${cast}`).join(', ');
}

/** A row of audit_events as the store returns it. */
interface AuditRow {
  id: string;
  at: Date;
  actor: string;
  action: string;
  resource_type: string;
  resource_id: string;
  details: Record<string, unknown>;
}

function auditEventOf(row: AuditRow): AuditEvent {
  return {
    id: row.id,
    at: iso(row.at) ?? '',
    actor: row.actor,
    action: row.action,
    resourceType: row.resource_type,
    resourceId: row.resource_id,
    details: row.details,
  };
}

export async function listAuditEvents(db: Queryable, resourceType: string, resourceId: string): Promise<AuditEvent[]> {
  const rows = await db.query<AuditRow>(
    'SELECT * FROM audit_events WHERE resource_type = $1 AND resource_id = $2 ORDER BY id',
    [resourceType, resourceId],
  );
  return rows.map(auditEventOf);
}

/** What the audit trail is read by (every field optional; `subject` is `<type>:<id>` or the bare id). */
export interface AuditFilter {
  actor?: string;
  action?: string;
  subject?: string;
  /** ISO timestamp: events at or after it. */
  since?: string;
}

/** Events newest first (by id, time-ordered), before the `before` id when given. */
export async function listAuditTrail(
  db: Queryable,
  filter: AuditFilter,
  before: string | undefined,
  limit: number,
): Promise<AuditEvent[]> {
  const rows = await db.query<AuditRow>(
    `SELECT * FROM audit_events
     WHERE ($1::text IS NULL OR id < $1)
       AND ($2::text IS NULL OR actor = $2)
       AND ($3::text IS NULL OR action = $3)
       AND ($4::text IS NULL OR resource_type || ':' || resource_id = $4 OR resource_id = $4)
       AND ($5::timestamptz IS NULL OR at >= $5)
     ORDER BY id DESC LIMIT $6`,
    [before ?? null, filter.actor ?? null, filter.action ?? null, filter.subject ?? null, filter.since ?? null, limit],
  );
  return rows.map(auditEventOf);
}
