/** Audit trail: who changed what, when. Written in the same transaction as the change itself. */
import type { Queryable } from './db';
import { iso } from './db';
import { newId } from '../ids';

export interface AuditInput {
  /** `client:<client_id>` for API callers, `automation:<id>` for runs. */
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

/** The six parameters of one audit event, in the order of AUDIT_COLUMNS (a fresh id). */
export function auditParams(input: AuditInput): unknown[] {
  return [newId(), input.actor, input.action, input.resourceType, input.resourceId, JSON.stringify(input.details ?? {})];
}

/**
 * The placeholders of `auditParams` from `$first` on: `$7, $8, …, $12::jsonb`. A statement that
 * writes its audit event only when its change happened selects them `FROM` the change's RETURNING
 * (src/store/owners.ts).
 */
export function auditPlaceholders(first: number): string {
  return ['', '', '', '', '', '::jsonb'].map((cast, i) => `$${first + i}${cast}`).join(', ');
}

export async function listAuditEvents(db: Queryable, resourceType: string, resourceId: string): Promise<AuditEvent[]> {
  const rows = await db.query<{
    id: string;
    at: Date;
    actor: string;
    action: string;
    resource_type: string;
    resource_id: string;
    details: Record<string, unknown>;
  }>('SELECT * FROM audit_events WHERE resource_type = $1 AND resource_id = $2 ORDER BY id', [resourceType, resourceId]);
  return rows.map((row) => ({
    id: row.id,
    at: iso(row.at) ?? '',
    actor: row.actor,
    action: row.action,
    resourceType: row.resource_type,
    resourceId: row.resource_id,
    details: row.details,
  }));
}
