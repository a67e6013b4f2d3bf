/**
 * The audit trail as the API reads it (super_admin): newest first, filtered by actor, action,
 * subject (`<type>:<id>`, or the bare id) and time. The records hold no secret value or payload
 * (what writes them sees to that), so they are shown as written.
 */
import type { Db } from '../store/db';
import type { Queryable } from '../store/queryable';
import { automationNames } from '../store/automations';
import { listAuditTrail, type AuditEvent, type AuditFilter } from '../store/audit';
import { isString, pageOf } from './listing';
import type { Page, PageRequest, PageTokens } from './pagination';
import { invalidArgument } from '../errors';

export interface AuditView {
  at: string;
  actor: string;
  /** A person's name, an API client's display name, an automation's name; null when none is known. */
  actorDisplayName: string | null;
  action: string;
  subject: string;
  /** The subject's display name (an automation, an API client, an entitlement) while it exists; null otherwise. */
  subjectDisplayName: string | null;
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

/**
 * The name of an actor: a person's (the `name` their audit record's details carry), an API
 * client's display name, an automation's; null when none is known.
 */
export function actorName(actor: string, details: Record<string, unknown> | undefined, names: Names): string | null {
  const person = details?.name;
  if (typeof person === 'string' && person !== '') return person;
  const [kind, id = ''] = splitActor(actor);
  return (
    (kind === 'client' ? names.clients.get(id) : kind === 'automation' ? names.automations.get(id) : undefined) ?? null
  );
}

function toView(event: AuditEvent, names: Names): AuditView {
  return {
    at: event.at,
    actor: event.actor,
    actorDisplayName: actorName(event.actor, event.details, names),
    action: event.action,
    subject: `${event.resourceType}:${event.resourceId}`,
    subjectDisplayName: names.subjects.get(`${event.resourceType}:${event.resourceId}`) ?? null,
    details: event.details,
  };
}

export interface Names {
  /** client id → display name */
  clients: Map<string, string>;
  automations: Map<string, string>;
  /** `<type>:<id>` → display name */
  subjects: Map<string, string>;
}

/** `client:<clientId>` → ['client', clientId]; `automation:<id>:<event>` → ['automation', id]. */
function splitActor(actor: string): [string, string?] {
  const at = actor.indexOf(':');
  if (at < 0) return [actor];
  const kind = actor.slice(0, at);
  const rest = actor.slice(at + 1);
  return [kind, kind === 'automation' ? rest.split(':')[0] : rest];
}

/** The names of the actors and subjects of some records (a subject is optional), in one query per kind. */
export async function namesOf(
  db: Queryable,
  events: ReadonlyArray<Pick<AuditEvent, 'actor'> & Partial<Pick<AuditEvent, 'resourceType' | 'resourceId'>>>,
): Promise<Names> {
  const clientIds = new Set<string>();
  const automationIds = new Set<string>();
  const apiClients = new Set<string>();
  const entitlements = new Set<string>();
  for (const event of events) {
    const [kind, id] = splitActor(event.actor);
    if (kind === 'client' && id) clientIds.add(id);
    if (kind === 'automation' && id) automationIds.add(id);
    if (event.resourceId === undefined) continue;
    if (event.resourceType === 'automation') automationIds.add(event.resourceId);
    if (event.resourceType === 'api_client') apiClients.add(event.resourceId);
    if (event.resourceType === 'app_entitlement') entitlements.add(event.resourceId);
  }
  const rows = (sql: string, ids: Set<string>) =>
    ids.size === 0 ? Promise.resolve([]) : db.query<{ id: string; name: string }>(sql, [[...ids]]);
  const [clients, automations, clientRows, entitlementRows] = await Promise.all([
    rows('SELECT client_id AS id, display_name AS name FROM api_clients WHERE client_id = ANY($1::text[])', clientIds),
    automationNames(db, [...automationIds]),
    rows('SELECT id, display_name AS name FROM api_clients WHERE id = ANY($1::text[])', apiClients),
    rows('SELECT id, display_name AS name FROM app_entitlements WHERE id = ANY($1::text[])', entitlements),
  ]);
  const subjects = new Map<string, string>();
  for (const [id, name] of automations) subjects.set(`automation:${id}`, name);
  for (const row of clientRows) if (row.name) subjects.set(`api_client:${row.id}`, row.name);
  for (const row of entitlementRows) if (row.name) subjects.set(`app_entitlement:${row.id}`, row.name);
  return {
    clients: new Map(clients.filter((row) => row.name).map((row) => [row.id, row.name])),
    automations,
    subjects,
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
    toItem: (event) => event,
  }).then(async (page) => {
    const names = await namesOf(db, page.items);
    return { ...page, items: page.items.map((event) => ({ auditEvent: toView(event, names) })) };
  });
}
