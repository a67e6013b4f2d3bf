/**
 * The audit trail as the API reads it (super_admin): newest first, filtered by actor, action,
 * subject (`<type>:<id>`, or the bare id) and time. The records hold no secret value or payload
 * (what writes them sees to that), so they are shown as written.
 */
import type { Db } from '../store/db';
import { listAuditTrail, type AuditEvent, type AuditFilter } from '../store/audit';
import { isString, pageOf } from './listing';
import type { Page, PageRequest, PageTokens } from './pagination';
import { invalidArgument } from '../errors';

export interface AuditView {
  at: string;
  actor: string;
  action: string;
  subject: string;
  details: Record<string, unknown>;
}

const MAX_FILTER_LENGTH = 500;

function one(value: unknown): string | undefined {
  const text = Array.isArray(value) ? (value[0] as unknown) : value;
  return typeof text === 'string' && text !== '' ? text : undefined;
}

/** The filters of a query string; 400 naming the field when one is malformed. */
export function readAuditFilter(query: Record<string, unknown>): AuditFilter {
  const filter: AuditFilter = {};
  for (const field of ['actor', 'action', 'subject'] as const) {
    const value = one(query[field]);
    if (value === undefined) continue;
    if (value.length > MAX_FILTER_LENGTH || value.includes('\u0000')) {
      throw invalidArgument({ field, description: `must be at most ${MAX_FILTER_LENGTH} characters` });
    }
    filter[field] = value;
  }
  const since = one(query.since);
  if (since !== undefined) {
    const ms = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/.test(since) ? Date.parse(since) : NaN;
    if (Number.isNaN(ms))
      throw invalidArgument({
        field: 'since',
        description: 'must be an RFC 3339 timestamp such as 2026-01-31T09:00:00Z',
      });
    filter.since = new Date(ms).toISOString();
  }
  return filter;
}

function toView(event: AuditEvent): AuditView {
  return {
    at: event.at,
    actor: event.actor,
    action: event.action,
    subject: `${event.resourceType}:${event.resourceId}`,
    details: event.details,
  };
}

export function listAudit(
  db: Db,
  tokens: PageTokens,
  query: Record<string, unknown>,
  page: PageRequest,
): Promise<Page<{ auditEvent: AuditView }>> {
  const filter = readAuditFilter(query);
  return pageOf(tokens, page, {
    name: 'audit',
    filter,
    isCursor: isString,
    fetch: (before, limit) => listAuditTrail(db, filter, before, limit),
    keyOf: (event) => event.id,
    toItem: (event) => ({ auditEvent: toView(event) }),
  });
}
