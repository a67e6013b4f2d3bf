/**
 * Named outbound secrets: `POST /api/v1/secrets` {name, value, allowedOrigins}, `GET
 * /api/v1/secrets` (names, allowed origins and timestamps), `GET /api/v1/secrets/{name}`
 * (metadata), `PUT /api/v1/secrets/{name}` {value?, gracePeriod?, allowedOrigins?} (rotation,
 * re-binding), `DELETE /api/v1/secrets/{name}`. Governance access: read_only reads metadata, admin
 * and super_admin write. No response ever carries a value.
 */
import Router from '@koa/router';
import { actorOf } from '../auth';
import { readJsonObject } from '../body';
import type { AppDeps } from '../context';
import {
  createOutboundSecret,
  deleteOutboundSecret,
  getOutboundSecret,
  listOutboundSecrets,
  replaceOutboundSecret,
} from '../../domain/outbound-secrets';
import { governanceAccess, listBody, param, queryPage } from './governance-helpers';

export function createSecretsRouter(deps: AppDeps): Router {
  const router = new Router();
  const read = governanceAccess(deps, 'read');
  const write = governanceAccess(deps, 'write');

  router.post('/api/v1/secrets', ...write, async (ctx) => {
    ctx.body = { secret: await createOutboundSecret(deps.db, await readJsonObject(ctx), { secretBox: deps.secretBox, actor: actorOf(ctx) }) };
  });
  router.get('/api/v1/secrets', ...read, async (ctx) => {
    ctx.body = listBody('secret', await listOutboundSecrets(deps.db, deps.pageTokens, queryPage(ctx)));
  });
  router.get('/api/v1/secrets/:name', ...read, async (ctx) => {
    ctx.body = { secret: await getOutboundSecret(deps.db, param(ctx, 'name')) };
  });
  router.put('/api/v1/secrets/:name', ...write, async (ctx) => {
    const body = await readJsonObject(ctx);
    const { previousValueExpiresAt, ...secret } = await replaceOutboundSecret(deps.db, param(ctx, 'name'), body, { secretBox: deps.secretBox, actor: actorOf(ctx) });
    ctx.body = { secret, previousValueExpiresAt };
  });
  router.delete('/api/v1/secrets/:name', ...write, async (ctx) => {
    await deleteOutboundSecret(deps.db, param(ctx, 'name'), actorOf(ctx));
    ctx.body = {};
  });
  return router;
}
