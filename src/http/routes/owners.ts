/**
 * Entitlement owners of a service-account user, under
 * `/api/v2/users/{user_id}/owners/entitlements`: create (idempotent), list, delete.
 */
import Router from '@koa/router';
import type { Context } from 'koa';
import { createEntitlementOwner, deleteEntitlementOwner, listEntitlementOwners, type EntitlementOwnerRef } from '../../domain/owners';
import { CreateEntitlementOwnerRequest } from '../../domain/schemas';
import { parseOrThrow } from '../../domain/validation';
import { readJsonObject } from '../body';
import type { AppDeps } from '../context';
import { governanceAccess, listBody, param, queryPage } from './governance-helpers';
import { actorOf } from '../auth';
import { type FieldViolation, invalidArgument, notFound } from '../../errors';

const COLLECTION = '/api/v2/users/:user_id/owners/entitlements';
const ITEM = `${COLLECTION}/:role_slug/:app_entitlement_ref_app_id/:app_entitlement_ref_id`;

function refOf(ctx: Context): EntitlementOwnerRef {
  return {
    userId: param(ctx, 'user_id'),
    roleSlug: param(ctx, 'role_slug'),
    appId: param(ctx, 'app_entitlement_ref_app_id'),
    entitlementId: param(ctx, 'app_entitlement_ref_id'),
  };
}

/** `appEntitlementRef` may be omitted or null; fields it gives must equal the path's. */
function checkBodyRef(body: unknown, ref: EntitlementOwnerRef): void {
  const given = parseOrThrow(CreateEntitlementOwnerRequest, body).appEntitlementRef;
  if (!given) return;
  const violations: FieldViolation[] = [];
  if (given.appId != null && given.appId !== ref.appId) {
    violations.push({ field: 'appEntitlementRef.appId', description: 'must equal app_entitlement_ref_app_id of the path' });
  }
  if (given.id != null && given.id !== ref.entitlementId) {
    violations.push({ field: 'appEntitlementRef.id', description: 'must equal app_entitlement_ref_id of the path' });
  }
  if (violations.length > 0) throw invalidArgument(violations);
}

export function createOwnersRouter(deps: AppDeps): Router {
  const router = new Router();
  const read = governanceAccess(deps, 'read');
  const write = governanceAccess(deps, 'write');

  router.post(ITEM, ...write, async (ctx) => {
    const ref = refOf(ctx);
    checkBodyRef(await readJsonObject(ctx), ref);
    ctx.body = await createEntitlementOwner(deps.db, ref, actorOf(ctx));
  });
  router.get(COLLECTION, ...read, async (ctx) => {
    const page = await listEntitlementOwners(deps.db, deps.pageTokens, param(ctx, 'user_id'), queryPage(ctx));
    ctx.body = listBody('userOwnerEntitlement', page);
  });
  router.delete(ITEM, ...write, async (ctx) => {
    if (!(await deleteEntitlementOwner(deps.db, refOf(ctx), actorOf(ctx)))) throw notFound('entitlement owner');
    ctx.body = {};
  });
  return router;
}
