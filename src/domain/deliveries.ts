/**
 * The delivery log of an automation's webhook listener, newest first: when, what answer and why,
 * from where, which event and run, how long; never a body, a signature, a token or a secret.
 * Written in batches by the receiver (src/delivery/delivery-log.ts).
 */
import { getAutomation } from '../store/automations';
import type { Db } from '../store/db';
import {
  insertDeliveries,
  listDeliveries,
  type DeliveryFilter,
  type DeliveryRecord,
  type DeliverySource,
} from '../store/deliveries';
import type { Queryable } from '../store/db';
import { derivedId } from '../ids';
import { isString, pageOf } from './listing';
import type { Page, PageRequest, PageTokens } from './pagination';
import { invalidArgument, notFound } from '../errors';

/** An entry as the API shows it: the stored record without its internal ids. */
export type Delivery = Omit<DeliveryRecord, 'id' | 'automationId' | 'source'> & { source: DeliverySource };

const REASON = /^[a-z_]{1,64}$/;

function one(value: unknown): string | undefined {
  return Array.isArray(value) ? (value[0] as string | undefined) : (value as string | undefined);
}

/** The `status` and `reason` filters of a query string; 400 naming the field when one is malformed. */
export function readDeliveryFilter(query: Record<string, unknown>): DeliveryFilter {
  const filter: DeliveryFilter = {};
  const status = one(query.status);
  if (status !== undefined && status !== '') {
    if (!/^[1-5]\d\d$/.test(status))
      throw invalidArgument({ field: 'status', description: 'must be an HTTP status code such as 401' });
    filter.status = Number(status);
  }
  const reason = one(query.reason);
  if (reason !== undefined && reason !== '') {
    if (!REASON.test(reason))
      throw invalidArgument({ field: 'reason', description: 'must be a reason code such as signature_mismatch' });
    filter.reason = reason;
  }
  return filter;
}

function toDelivery(record: DeliveryRecord): Delivery {
  return {
    receivedAt: record.receivedAt,
    status: record.status,
    reason: record.reason,
    eventId: record.eventId,
    sourceAddress: record.sourceAddress,
    executionId: record.executionId,
    latencyMs: record.latencyMs,
    source: record.source ?? 'webhook',
  };
}

/**
 * Records what became of a schedule's action or a directory event for one automation (reason
 * `started`, `paused`, `filtered`, `own_event`, `event_depth`, `skipped`): the delivery log of a
 * schedule or event automation. `eventId` is the directory event's id, or the action's scheduled
 * time; latency is from the event (or the scheduled time) to now. The entry's id is derived from
 * the automation and the event, so a repeat (an activity's retry, a second dispatch) adds none.
 */
export async function recordTriggerDelivery(
  db: Queryable,
  entry: {
    automationId: string;
    source: Exclude<DeliverySource, 'webhook'>;
    reason: string;
    eventId: string;
    executionId: string | null;
    occurredAt: string;
  },
): Promise<void> {
  const now = Date.now();
  await insertDeliveries(db, [
    {
      id: derivedId(`${entry.source}:${entry.automationId}:${entry.eventId}`, Date.parse(entry.occurredAt)),
      automationId: entry.automationId,
      receivedAt: new Date(now).toISOString(),
      status: null,
      reason: entry.reason,
      eventId: entry.eventId,
      sourceAddress: null,
      executionId: entry.executionId,
      latencyMs: Math.max(0, now - Date.parse(entry.occurredAt)),
      source: entry.source,
    },
  ]);
}

/** One page of an automation's delivery log; 404 when the automation does not exist. */
export async function listAutomationDeliveries(
  db: Db,
  tokens: PageTokens,
  automationId: string,
  query: Record<string, unknown>,
  page: PageRequest,
): Promise<Page<{ delivery: Delivery }>> {
  const filter = readDeliveryFilter(query);
  if (!(await getAutomation(db, automationId))) throw notFound('automation', automationId);
  return pageOf(tokens, page, {
    name: `deliveries:${automationId}`,
    filter,
    isCursor: isString,
    fetch: (before, limit) => listDeliveries(db, automationId, filter, before, limit),
    keyOf: (record) => record.id,
    toItem: (record) => ({ delivery: toDelivery(record) }),
  });
}
