/**
 * API clients: /api/v1/iam/clients (super_admin only). The secret is in the create response only.
 * Creating and deleting a client is audited (actor, client id, roles; never the secret): see
 * domain/clients.
 */
import Router from '@koa/router';
import type { AppDeps } from '../context';
import { actorOf, authenticate, requireAccess } from '../auth';
import { readJsonObject } from '../body';
import { createApiClient, deleteApiClient, getApiClient, listApiClients } from '../../domain/clients';
import { readPageRequest } from '../../domain/pagination';

export function createClientsRouter(deps: AppDeps): Router {
  const router = new Router({ prefix: '/api/v1/iam/clients' });
  router.use(authenticate(deps.tokens), requireAccess('iam', 'write'));

  router.post('/', async (ctx) => {
    ctx.body = await createApiClient(deps.db, deps.secretBox, actorOf(ctx), await readJsonObject(ctx));
  });

  router.get('/', async (ctx) => {
    const page = await listApiClients(deps.db, deps.pageTokens, readPageRequest(ctx.query));
    ctx.body = { list: page.items, nextPageToken: page.nextPageToken };
  });

  router.get('/:id', async (ctx) => {
    ctx.body = { client: await getApiClient(deps.db, ctx.params.id!) };
  });

  router.delete('/:id', async (ctx) => {
    await deleteApiClient(deps.db, actorOf(ctx), ctx.params.id!);
    ctx.body = {};
  });

  return router;
}
