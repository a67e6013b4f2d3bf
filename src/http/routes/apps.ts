/** Apps: `POST /api/v1/apps`, `GET /api/v1/apps/{app_id}`, `GET /api/v1/apps`. */
import Router from '@koa/router';
import { createApp, getApp, listApps } from '../../domain/apps';
import { readJsonObject } from '../body';
import type { AppDeps } from '../context';
import { governanceAccess, listBody, param, queryPage } from './governance-helpers';

export function createAppsRouter(deps: AppDeps): Router {
  const router = new Router();
  const read = governanceAccess(deps, 'read');
  const write = governanceAccess(deps, 'write');

  router.post('/api/v1/apps', ...write, async (ctx) => {
    ctx.body = { app: await createApp(deps.db, await readJsonObject(ctx)) };
  });
  router.get('/api/v1/apps/:app_id', ...read, async (ctx) => {
    ctx.body = { app: await getApp(deps.db, param(ctx, 'app_id')) };
  });
  router.get('/api/v1/apps', ...read, async (ctx) => {
    ctx.body = listBody('app', await listApps(deps.db, deps.pageTokens, queryPage(ctx)));
  });
  return router;
}
