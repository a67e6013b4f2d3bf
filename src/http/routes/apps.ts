/** Apps: `POST /api/v1/apps`, `GET /api/v1/apps/{app_id}`, `GET /api/v1/apps`. */
import type Router from '@koa/router';
import { createApp, getApp, listApps } from '../../domain/apps';
import * as gov from '../../domain/schemas';
import type { AppDeps } from '../context';
import { ITEM_READ_ERRORS, mountOperations, operation, READ_ERRORS, WRITE_ERRORS, exactRouter } from '../operation';
import { GOVERNANCE_READ, GOVERNANCE_WRITE, listBody } from './governance-helpers';

export const APP_OPERATIONS = [
  operation({
    method: 'post',
    path: '/api/v1/apps',
    operationId: 'apps.create',
    tag: 'Apps',
    summary: 'Create an app.',
    access: GOVERNANCE_WRITE,
    body: { schema: gov.CreateAppRequest, required: true, validation: 'schema' },
    ok: gov.AppResponse,
    errors: WRITE_ERRORS,
    handle: async (input, _ctx, deps) => ({ app: await createApp(deps.db, await input.body()) }),
  }),
  operation({
    method: 'get',
    path: '/api/v1/apps/{app_id}',
    operationId: 'apps.get',
    tag: 'Apps',
    summary: 'Get an app.',
    access: GOVERNANCE_READ,
    ok: gov.AppResponse,
    errors: ITEM_READ_ERRORS,
    handle: async (input, _ctx, deps) => ({ app: await getApp(deps.db, input.params.app_id) }),
  }),
  operation({
    method: 'get',
    path: '/api/v1/apps',
    operationId: 'apps.list',
    tag: 'Apps',
    paged: true,
    summary: 'List apps.',
    access: GOVERNANCE_READ,
    ok: gov.AppList,
    errors: READ_ERRORS,
    handle: async (input, _ctx, deps) => listBody('app', await listApps(deps.db, deps.pageTokens, input.page)),
  }),
];

export function createAppsRouter(deps: AppDeps): Router {
  return mountOperations(exactRouter(), deps, APP_OPERATIONS);
}
