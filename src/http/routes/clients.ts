/**
 * API clients: /api/v1/iam/clients (super_admin only). The secret is in the create response only.
 * Creating and deleting a client is audited (actor, client id, roles; never the secret).
 */
import Router from '@koa/router';
import type { AppDeps } from '../context';
import { actorOf, authenticate, requireAccess } from '../auth';
import { recordAudit } from '../../store/audit';
import { readJsonObject } from '../body';
import { invalidArgument, notFound } from '../errors';
import { createClient, deleteClient, getClient, listClients } from '../../auth/clients';
import { isRole, ROLES } from '../../auth/roles';
import { keysetPage, readPageRequest } from '../../domain/pagination';

export function createClientsRouter(deps: AppDeps): Router {
  const router = new Router({ prefix: '/api/v1/iam/clients' });
  router.use(authenticate(deps.tokens), requireAccess('iam', 'write'));

  router.post('/', async (ctx) => {
    const body = await readJsonObject(ctx);
    const displayName = body.displayName ?? '';
    if (typeof displayName !== 'string' || displayName.length > 200) {
      throw invalidArgument({ field: 'displayName', description: 'must be a string of at most 200 characters' });
    }
    const roles = body.roles;
    if (!Array.isArray(roles) || roles.length === 0 || !roles.every(isRole)) {
      throw invalidArgument({ field: 'roles', description: `must be a non-empty list of ${ROLES.join(', ')}` });
    }
    const created = await deps.db.transaction(async (tx) => {
      const made = await createClient(tx, deps.secretBox, { displayName, roles: [...new Set(roles)] });
      await recordAudit(tx, {
        actor: actorOf(ctx),
        action: 'api_client.create',
        resourceType: 'api_client',
        resourceId: made.client.id,
        details: { clientId: made.client.clientId, displayName: made.client.displayName, roles: made.client.roles },
      });
      return made;
    });
    ctx.body = created;
  });

  router.get('/', async (ctx) => {
    const page = readPageRequest(ctx.query);
    const after = deps.pageTokens.decode<string>('iam:clients', {}, page.pageToken);
    const rows = await listClients(deps.db, after, page.pageSize + 1);
    const result = keysetPage(rows, page.pageSize, (c) => c.id, (client) => ({ client }), (cursor) =>
      deps.pageTokens.encode('iam:clients', {}, cursor),
    );
    ctx.body = { list: result.items, nextPageToken: result.nextPageToken };
  });

  router.get('/:id', async (ctx) => {
    const client = await getClient(deps.db, ctx.params.id!);
    if (!client) throw notFound('client');
    ctx.body = { client };
  });

  router.delete('/:id', async (ctx) => {
    const deleted = await deps.db.transaction(async (tx) => {
      const client = await getClient(tx, ctx.params.id!);
      if (!client || !(await deleteClient(tx, client.id))) return false;
      await recordAudit(tx, {
        actor: actorOf(ctx),
        action: 'api_client.delete',
        resourceType: 'api_client',
        resourceId: client.id,
        details: { clientId: client.clientId, displayName: client.displayName, roles: client.roles },
      });
      return true;
    });
    if (!deleted) throw notFound('client');
    ctx.body = {};
  });

  return router;
}
