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
  await db.query(
    'INSERT INTO audit_events (id, actor, action, resource_type, resource_id, details) VALUES ($1, $2, $3, $4, $5, $6::jsonb)',
    [newId(), input.actor, input.action, input.resourceType, input.resourceId, JSON.stringify(input.details ?? {})],
  );
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
