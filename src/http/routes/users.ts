/** Users: `POST /api/v1/users`, `GET /api/v1/users/{user_id}`, `GET /api/v1/users`. */
import Router from '@koa/router';
import { createUser, getUser, listUsers } from '../../domain/users';
import { readJsonObject } from '../body';
import type { AppDeps } from '../context';
import { governanceAccess, listBody, param, queryPage } from './governance-helpers';

export function createUsersRouter(deps: AppDeps): Router {
  const router = new Router();
  const read = governanceAccess(deps, 'read');
  const write = governanceAccess(deps, 'write');

  router.post('/api/v1/users', ...write, async (ctx) => {
    ctx.body = { user: await createUser(deps.db, await readJsonObject(ctx)) };
  });
  router.get('/api/v1/users/:user_id', ...read, async (ctx) => {
    ctx.body = { user: await getUser(deps.db, param(ctx, 'user_id')) };
  });
  router.get('/api/v1/users', ...read, async (ctx) => {
    ctx.body = listBody('user', await listUsers(deps.db, deps.pageTokens, queryPage(ctx)));
  });
  return router;
}
