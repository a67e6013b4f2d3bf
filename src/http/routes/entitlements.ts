/**
 * App entitlements under `/api/v1/apps/{app_id}/entitlements` (create, list, get, update, soft
 * delete) and `POST /api/v1/search/entitlements` (a read).
 */
import Router from '@koa/router';
import * as entitlements from '../../domain/entitlements';
import { readPageRequest } from '../../domain/pagination';
import { readJsonObject } from '../body';
import type { AppDeps } from '../context';
import { governanceAccess, listBody, param, queryPage } from './governance-helpers';

export function createEntitlementsRouter(deps: AppDeps): Router {
  const router = new Router();
  const read = governanceAccess(deps, 'read');
  const write = governanceAccess(deps, 'write');
  const collection = '/api/v1/apps/:app_id/entitlements';
  const item = `${collection}/:id`;

  router.post(collection, ...write, async (ctx) => {
    const appEntitlement = await entitlements.createEntitlement(deps.db, param(ctx, 'app_id'), await readJsonObject(ctx));
    ctx.body = { appEntitlement };
  });
  router.get(collection, ...read, async (ctx) => {
    const page = await entitlements.listAppEntitlements(deps.db, deps.pageTokens, param(ctx, 'app_id'), queryPage(ctx));
    ctx.body = listBody('appEntitlement', page);
  });
  router.get(item, ...read, async (ctx) => {
    ctx.body = { appEntitlement: await entitlements.getEntitlement(deps.db, param(ctx, 'app_id'), param(ctx, 'id')) };
  });
  router.post(item, ...write, async (ctx) => {
    const body = await readJsonObject(ctx);
    ctx.body = { appEntitlement: await entitlements.updateEntitlement(deps.db, param(ctx, 'app_id'), param(ctx, 'id'), body) };
  });
  router.delete(item, ...write, async (ctx) => {
    await entitlements.deleteEntitlement(deps.db, param(ctx, 'app_id'), param(ctx, 'id'));
    ctx.body = {};
  });
  router.post('/api/v1/search/entitlements', ...read, async (ctx) => {
    const body = await readJsonObject(ctx);
    const page = await entitlements.searchEntitlements(deps.db, deps.pageTokens, body, readPageRequest(body));
    ctx.body = listBody('appEntitlement', page);
  });
  return router;
}
