/**
 * The delivery log of an automation's webhook listener (admin or super_admin):
 * GET /api/v1/automations/{id}/deliveries, newest first, paginated, filters `status` and `reason`
 * (domain/deliveries).
 */
import type Router from '@koa/router';
import type { AppDeps } from '../context';
import * as api from '../../domain/api-schemas';
import { listAutomationDeliveries } from '../../domain/deliveries';
import { mountOperations, operation, exactRouter } from '../operation';

export const DELIVERY_OPERATIONS = [
  operation({
    method: 'get',
    path: '/api/v1/automations/{id}/deliveries',
    operationId: 'automations.deliveries.list',
    tag: 'Automations',
    access: { area: 'automations', mode: 'read' },
    paged: true,
    summary:
      'The delivery log of the automation’s webhook listener, newest first (7 days; never a body, signature or secret).',
    description:
      'Detail is kept for a bounded number of deliveries per listener and minute; the rest are counted per minute, status and reason (store table webhook_delivery_counts, metric webhook_delivery_log_summarized_total).',
    // Read and checked by the domain (readDeliveryFilter).
    query: [
      {
        name: 'status',
        description: 'Only deliveries answered with this HTTP status.',
        schema: { type: 'integer', minimum: 100, maximum: 599 },
      },
      {
        name: 'reason',
        description: 'Only deliveries with this reason code.',
        schema: { type: 'string', pattern: '^[a-z_]{1,64}$' },
      },
    ],
    ok: api.DeliveryList,
    errors: [400, 401, 403, 404, 500],
    handle: async (input, ctx, deps) => {
      const listing = await listAutomationDeliveries(deps.db, deps.pageTokens, input.params.id, ctx.query, input.page);
      return { list: listing.items, nextPageToken: listing.nextPageToken };
    },
  }),
];

export function createDeliveriesRouter(deps: AppDeps): Router {
  return mountOperations(exactRouter(), deps, DELIVERY_OPERATIONS);
}
