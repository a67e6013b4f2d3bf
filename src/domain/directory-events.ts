/**
 * The directory's own events: each change of a user or
 * a grant that the contract lists is written as an event in the change's own store transaction
 * (src/store/directory-events.ts: the transactional outbox), so that no change is committed
 * without its event and no event without its change. Automations with an event trigger run for
 * them; `ctx.trigger` of such a run is the event (`eventTrigger`).
 */
import { newId } from '../ids';
import type { Queryable } from '../store/db';
import { insertDirectoryEvent, listeningAutomations, type DirectoryEventRow } from '../store/directory-events';

export { DIRECTORY_EVENT_TYPES, type DirectoryEventType } from '../triggers';
import type { DirectoryEventType } from '../triggers';

/** Events are kept this long, then purged (as the webhook event records are). */
export const DIRECTORY_EVENT_RETENTION_SECONDS = 7 * 24 * 3600;

/** A change as its event records it: who made it, what it concerns. */
export interface DirectoryChange {
  type: DirectoryEventType;
  /** The change's actor string (`client:…`, `person:…#…`, `automation:<id>:<executionId>`, `system:…`). */
  actor: string;
  /** One more than the depth of the event whose run made this change; 1 otherwise. */
  depth?: number;
  /** The user the change concerns, as the API shows it. */
  user: Record<string, unknown>;
  grant?: Record<string, unknown>;
  appEntitlement?: Record<string, unknown>;
  /** The change's W3C trace context, when it was traced. */
  traceContext?: Record<string, string>;
}

/** Records the change's event; call it with the change's transaction. */
export async function recordDirectoryEvent(tx: Queryable, change: DirectoryChange): Promise<DirectoryEventRow> {
  return insertDirectoryEvent(tx, {
    id: newId(),
    type: change.type,
    actor: change.actor,
    depth: change.depth ?? 1,
    payload: {
      user: change.user,
      ...(change.grant ? { grant: change.grant } : {}),
      ...(change.appEntitlement ? { appEntitlement: change.appEntitlement } : {}),
    },
    ...(change.traceContext ? { traceContext: change.traceContext } : {}),
    targets: await listeningAutomations(tx, change.type),
  });
}

/** What a run started by an event sees as `ctx.trigger`. */
export function eventTrigger(event: DirectoryEventRow): Record<string, unknown> {
  return {
    type: event.type,
    eventId: event.id,
    occurredAt: event.occurredAt,
    actor: event.actor,
    depth: event.depth,
    ...event.payload,
  };
}
