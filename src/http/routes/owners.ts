/**
 * Entitlement owners of a service-account user, under
 * `/api/v2/users/{user_id}/owners/entitlements`: create (idempotent), list, delete.
 */
import type Router from '@koa/router';
import type { z } from 'zod';
import {
  createEntitlementOwner,
  deleteEntitlementOwner,
  listEntitlementOwners,
  type EntitlementOwnerRef,
} from '../../domain/owners';
import * as gov from '../../domain/schemas';

import type { AppDeps } from '../context';
import { ITEM_WRITE_ERRORS, mountOperations, operation, type PathParams, exactRouter } from '../operation';
import { GOVERNANCE_READ, GOVERNANCE_WRITE, listBody } from './governance-helpers';
import { type FieldViolation, invalidArgument, notFound } from '../../errors';

const COLLECTION = '/api/v2/users/{user_id}/owners/entitlements';
const ITEM = `${COLLECTION}/{role_slug}/{app_entitlement_ref_app_id}/{app_entitlement_ref_id}` as const;
const TAG = 'User Owner V2';

function refOf(params: PathParams<typeof ITEM>): EntitlementOwnerRef {
  return {
    userId: params.user_id,
    roleSlug: params.role_slug,
    appId: params.app_entitlement_ref_app_id,
    entitlementId: params.app_entitlement_ref_id,
  };
}

/** `appEntitlementRef` may be omitted or null; fields it gives must equal the path's. */
function checkBodyRef(body: z.output<typeof gov.CreateEntitlementOwnerRequest>, ref: EntitlementOwnerRef): void {
  const given = body.appEntitlementRef;
  if (!given) return;
  const violations: FieldViolation[] = [];
  if (given.appId != null && given.appId !== ref.appId) {
    violations.push({
      field: 'appEntitlementRef.appId',
      description: 'must equal app_entitlement_ref_app_id of the path',
    });
  }
  if (given.id != null && given.id !== ref.entitlementId) {
    violations.push({ field: 'appEntitlementRef.id', description: 'must equal app_entitlement_ref_id of the path' });
  }
  if (violations.length > 0) throw invalidArgument(violations);
}

export const OWNER_OPERATIONS = [
  operation({
    method: 'post',
    path: ITEM,
    operationId: 'svc.api.user.v2.UserOwnersV2.CreateEntitlementOwner',
    tag: TAG,
    access: GOVERNANCE_WRITE,
    summary: 'Create an entitlement ownership source for a service-account user (idempotent).',
    description:
      'appEntitlementRef may be omitted or null; fields it gives must equal the path. 404 for an unknown user, app or entitlement; 400 for a user that is not a service account.',
    body: { schema: gov.CreateEntitlementOwnerRequest, required: false, validation: 'schema' },
    ok: gov.UserOwnerEntitlementResponse,
    errors: ITEM_WRITE_ERRORS,
    handle: async (input, _ctx, deps) => {
      const ref = refOf(input.params);
      checkBodyRef(await input.body(), ref);
      return createEntitlementOwner(deps.db, ref, input.actor);
    },
  }),
  operation({
    method: 'get',
    path: COLLECTION,
    operationId: 'svc.api.user.v2.UserOwnersV2.ListEntitlementOwners',
    tag: TAG,
    paged: true,
    access: GOVERNANCE_READ,
    summary: 'List the entitlement ownerships of a user.',
    ok: gov.UserOwnerEntitlementList,
    errors: [400, 401, 403, 404, 500],
    handle: async (input, _ctx, deps) =>
      listBody(
        'userOwnerEntitlement',
        await listEntitlementOwners(deps.db, deps.pageTokens, input.params.user_id, input.page),
      ),
  }),
  operation({
    method: 'delete',
    path: ITEM,
    operationId: 'svc.api.user.v2.UserOwnersV2.DeleteEntitlementOwner',
    tag: TAG,
    access: GOVERNANCE_WRITE,
    summary: 'Delete an entitlement ownership source (404 if absent).',
    ok: gov.EmptyResponse,
    errors: [400, 401, 403, 404, 500],
    handle: async (input, _ctx, deps) => {
      if (!(await deleteEntitlementOwner(deps.db, refOf(input.params), input.actor)))
        throw notFound('entitlement owner');
      return {};
    },
  }),
];

export function createOwnersRouter(deps: AppDeps): Router {
  return mountOperations(exactRouter(), deps, OWNER_OPERATIONS);
}
