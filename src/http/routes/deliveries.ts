/**
 * The delivery log of an automation's webhook listener (super_admin):
 * GET /api/v1/automations/{id}/deliveries, newest first, paginated, filters `status` and `reason`
 * (domain/deliveries).
 */
import Router from '@koa/router';
import type { AppDeps } from '../context';
import { authenticate, requireAccess } from '../auth';
import { listAutomationDeliveries } from '../../domain/deliveries';
import { readPageRequest } from '../../domain/pagination';

export function createDeliveriesRouter(deps: AppDeps): Router {
  const router = new Router();
  router.use(authenticate(deps.tokens), requireAccess('automations', 'read'));

  router.get('/api/v1/automations/:id/deliveries', async (ctx) => {
    const page = readPageRequest(ctx.query);
    const listing = await listAutomationDeliveries(deps.db, deps.pageTokens, ctx.params.id!, ctx.query, page);
    ctx.body = { list: listing.items, nextPageToken: listing.nextPageToken };
  });

  return router;
}
