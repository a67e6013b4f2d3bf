/**
 * The delivery log of an automation's webhook listener (super_admin):
 * GET /api/v1/automations/{id}/deliveries, newest first, paginated, filters `status` and `reason`.
 * Each entry says when, what answer and why, from where, which event and run, how long: never a
 * body, a signature, a token or a secret. Written in batches by the receiver (webhooks/delivery-log).
 */
import Router from '@koa/router';
import type { AppDeps } from '../context';
import { authenticate, requireAccess } from '../auth';
import { invalidArgument, notFound } from '../errors';
import { keysetPage, readPageRequest } from '../../domain/pagination';
import { getAutomation } from '../../store/automations';
import { listDeliveries, type DeliveryFilter, type DeliveryRecord } from '../../store/deliveries';

const REASON = /^[a-z_]{1,64}$/;

function one(value: unknown): string | undefined {
  return Array.isArray(value) ? (value[0] as string | undefined) : (value as string | undefined);
}

export function readDeliveryFilter(query: Record<string, unknown>): DeliveryFilter {
  const filter: DeliveryFilter = {};
  const status = one(query.status);
  if (status !== undefined && status !== '') {
    if (!/^[1-5]\d\d$/.test(status)) throw invalidArgument({ field: 'status', description: 'must be an HTTP status code such as 401' });
    filter.status = Number(status);
  }
  const reason = one(query.reason);
  if (reason !== undefined && reason !== '') {
    if (!REASON.test(reason)) throw invalidArgument({ field: 'reason', description: 'must be a reason code such as signature_mismatch' });
    filter.reason = reason;
  }
  return filter;
}

export function deliveryView(record: DeliveryRecord): Record<string, unknown> {
  return {
    receivedAt: record.receivedAt,
    status: record.status,
    reason: record.reason,
    eventId: record.eventId,
    sourceAddress: record.sourceAddress,
    executionId: record.executionId,
    latencyMs: record.latencyMs,
  };
}

export function createDeliveriesRouter(deps: AppDeps): Router {
  const router = new Router();
  router.use(authenticate(deps.tokens), requireAccess('automations', 'read'));

  router.get('/api/v1/automations/:id/deliveries', async (ctx) => {
    const automationId = ctx.params.id!;
    const page = readPageRequest(ctx.query);
    const filter = readDeliveryFilter(ctx.query);
    if (!(await getAutomation(deps.db, automationId))) throw notFound('automation');
    const listing = `deliveries:${automationId}`;
    const before = deps.pageTokens.decode<string>(listing, filter, page.pageToken);
    const rows = await listDeliveries(deps.db, automationId, filter, before, page.pageSize + 1);
    const result = keysetPage(rows, page.pageSize, (r) => r.id, (r) => ({ delivery: deliveryView(r) }), (cursor) =>
      deps.pageTokens.encode(listing, filter, cursor),
    );
    ctx.body = { list: result.items, nextPageToken: result.nextPageToken };
  });

  return router;
}
