/**
 * App entitlements under `/api/v1/apps/{app_id}/entitlements` (create, list, get, update, soft
 * delete) and `POST /api/v1/search/entitlements` (a read).
 */
import type Router from '@koa/router';
import { getApp } from '../../domain/apps';
import * as entitlements from '../../domain/entitlements';
import { readPageRequest } from '../../domain/pagination';
import * as gov from '../../domain/schemas';
import type { AppDeps } from '../context';
import {
  ITEM_READ_ERRORS,
  ITEM_WRITE_ERRORS,
  mountOperations,
  operation,
  WRITE_ERRORS,
  exactRouter,
} from '../operation';
import { GOVERNANCE_READ, GOVERNANCE_WRITE, listBody } from './governance-helpers';

const COLLECTION = '/api/v1/apps/{app_id}/entitlements';
const ITEM = `${COLLECTION}/{id}` as const;
const TAG = 'App Entitlements';

// An unknown app or entitlement is a 404 before any field is checked: the body is read after the
// app is found; an update's merged record is checked by the domain under the row lock.
export const ENTITLEMENT_OPERATIONS = [
  operation({
    method: 'post',
    path: COLLECTION,
    operationId: 'entitlements.create',
    tag: TAG,
    access: GOVERNANCE_WRITE,
    summary: 'Create an entitlement under an app; the body is the flat writable AppEntitlement fields.',
    body: { schema: gov.AppEntitlementInput, required: true, validation: 'schema' },
    ok: gov.AppEntitlementResponse,
    errors: ITEM_WRITE_ERRORS,
    handle: async (input, _ctx, deps) => {
      await getApp(deps.db, input.params.app_id);
      return { appEntitlement: await entitlements.createEntitlement(deps.db, input.params.app_id, await input.body()) };
    },
  }),
  operation({
    method: 'get',
    path: COLLECTION,
    operationId: 'entitlements.list',
    tag: TAG,
    paged: true,
    access: GOVERNANCE_READ,
    summary: 'List the entitlements of an app.',
    ok: gov.AppEntitlementList,
    errors: [400, 401, 403, 404, 500],
    handle: async (input, _ctx, deps) =>
      listBody(
        'appEntitlement',
        await entitlements.listAppEntitlements(deps.db, deps.pageTokens, input.params.app_id, input.page),
      ),
  }),
  operation({
    method: 'get',
    path: ITEM,
    operationId: 'entitlements.get',
    tag: TAG,
    access: GOVERNANCE_READ,
    summary: 'Get an entitlement.',
    ok: gov.AppEntitlementResponse,
    errors: ITEM_READ_ERRORS,
    handle: async (input, _ctx, deps) => ({
      appEntitlement: await entitlements.getEntitlement(deps.db, input.params.app_id, input.params.id),
    }),
  }),
  operation({
    method: 'post',
    path: ITEM,
    operationId: 'entitlements.update',
    tag: TAG,
    access: GOVERNANCE_WRITE,
    summary: 'Update an entitlement: only the fields of updateMask change (no mask: all writable fields).',
    body: { schema: gov.UpdateAppEntitlementRequest, required: true, validation: 'schema' },
    ok: gov.AppEntitlementResponse,
    errors: ITEM_WRITE_ERRORS,
    handle: async (input, _ctx, deps) => {
      const body = await input.body();
      return {
        appEntitlement: await entitlements.updateEntitlement(deps.db, input.params.app_id, input.params.id, body),
      };
    },
  }),
  operation({
    method: 'delete',
    path: ITEM,
    operationId: 'entitlements.delete',
    tag: TAG,
    access: GOVERNANCE_WRITE,
    summary: 'Soft-delete an entitlement (deletedAt set; gone from lists).',
    ok: gov.EmptyResponse,
    errors: ITEM_READ_ERRORS,
    handle: async (input, _ctx, deps) => {
      await entitlements.deleteEntitlement(deps.db, deps.engine, input.params.app_id, input.params.id, input.actor);
      return {};
    },
  }),
  operation({
    method: 'post',
    path: '/api/v1/search/entitlements',
    operationId: 'entitlements.search',
    tag: TAG,
    access: GOVERNANCE_READ,
    summary:
      'Search entitlements: query over displayName / slug / description, exact alias, app ids; paged by page_size / page_token in the body.',
    // The page fields never fail (readPageRequest reads them, with their aliases).
    body: { schema: gov.SearchEntitlementsRequest, required: false, validation: 'schema' },
    ok: gov.AppEntitlementList,
    errors: WRITE_ERRORS,
    handle: async (input, _ctx, deps) => {
      const body = await input.body();
      return listBody(
        'appEntitlement',
        await entitlements.searchEntitlements(deps.db, deps.pageTokens, body, readPageRequest(body)),
      );
    },
  }),
];

export function createEntitlementsRouter(deps: AppDeps): Router {
  return mountOperations(exactRouter(), deps, ENTITLEMENT_OPERATIONS);
}
