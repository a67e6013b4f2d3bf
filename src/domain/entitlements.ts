/**
 * App entitlements: create, get, update (with an update mask), soft delete, list under an app and
 * search. Every write is validated whole before anything is written.
 */
import { newId } from '../ids';
import * as store from '../store/entitlements';
import type { Db, Queryable } from '../store/db';
import type { Page, PageRequest, PageTokens } from './pagination';
import { getApp } from './apps';
import { fieldsOf, toAppEntitlement, toColumns, withDefaults, type EntitlementFields } from './entitlement-record';
import { parseEntitlementWrite } from './entitlement-validation';
import { isString, pageOf } from './listing';
import type {
  SearchEntitlementsFilter,
  AppEntitlement,
  AppEntitlementInput,
  UpdateAppEntitlementRequest,
} from './schemas';
import type { z } from 'zod';
import { invalidArgument, notFound } from '../errors';
import type { RunEngine } from './engine';
import { revokeGrantsOfEntitlement } from './grants';

/**
 * `appId` is a writable field of the record (docs/api.md#app-entitlements), but an entitlement stays under the app
 * of its path.
 */
function checkAppId(fields: EntitlementFields, appId: string, field: string): void {
  if (fields.appId !== '' && fields.appId !== appId) {
    throw invalidArgument({ field, description: 'must be empty or equal to the app_id of the path' });
  }
}

/**
 * Creates an entitlement under `appId` from the flat body of writable fields, parsed by
 * AppEntitlementInput after the app was found (getApp: 404 before any field is checked).
 */
export async function createEntitlement(
  db: Db,
  appId: string,
  input: z.output<typeof AppEntitlementInput>,
): Promise<AppEntitlement> {
  const fields = withDefaults(input);
  checkAppId(fields, appId, 'appId');
  return toAppEntitlement(await store.insertEntitlement(db, newId(), appId, toColumns(fields)));
}

/** The live entitlement `id` of app `appId`, or 404. */
export async function getEntitlement(db: Queryable, appId: string, id: string): Promise<AppEntitlement> {
  const row = await store.findLiveEntitlement(db, appId, id);
  if (!row) throw notFound('app entitlement');
  return toAppEntitlement(row);
}

/**
 * `{appEntitlement, updateMask}` (parsed by UpdateAppEntitlementRequest): the masked fields take the
 * given values (absent = default), the others keep theirs; the merged record is validated as a
 * whole under the row lock, so two updates never pass each other's checks.
 */
export async function updateEntitlement(
  db: Db,
  appId: string,
  id: string,
  body: z.output<typeof UpdateAppEntitlementRequest>,
): Promise<AppEntitlement> {
  const patch: Record<string, unknown> = body.appEntitlement ?? {};
  return db.transaction(async (tx) => {
    const existing = await store.findLiveEntitlement(tx, appId, id, { forUpdate: true });
    if (!existing) throw notFound('app entitlement');
    const merged: Record<string, unknown> = { ...fieldsOf(existing) };
    for (const field of body.updateMask) merged[field] = patch[field];
    const fields = parseEntitlementWrite(merged, 'appEntitlement');
    checkAppId(fields, appId, 'appEntitlement.appId');
    const row = await store.updateEntitlement(tx, appId, id, toColumns(fields, existing.record));
    if (!row) throw notFound('app entitlement');
    return toAppEntitlement(row);
  });
}

/**
 * Soft delete; 404 when there is no live entitlement `id` under `appId`. Its open grants are
 * revoked first (reason `entitlement deleted`, by the deleter), in the same transaction.
 */
export async function deleteEntitlement(
  db: Db,
  engine: RunEngine,
  appId: string,
  id: string,
  actor: string,
): Promise<void> {
  await db.transaction(async (tx) => {
    if (!(await store.findLiveEntitlement(tx, appId, id, { forUpdate: true }))) throw notFound('app entitlement');
    await revokeGrantsOfEntitlement(tx, engine, id, actor);
    if (!(await store.softDeleteEntitlement(tx, appId, id))) throw notFound('app entitlement');
  });
}

/** The live entitlements of an app, by id; 404 unknown app. */
export async function listAppEntitlements(
  db: Db,
  tokens: PageTokens,
  appId: string,
  page: PageRequest,
): Promise<Page<AppEntitlement>> {
  await getApp(db, appId);
  return pageOf(tokens, page, {
    name: `entitlements:app:${appId}`,
    filter: {},
    isCursor: isString,
    fetch: (after, limit) => store.searchEntitlements(db, { appIds: [appId], afterId: after, limit }),
    keyOf: (row) => row.id,
    toItem: toAppEntitlement,
  });
}

/** `{query, alias, appIds}` (parsed by SearchEntitlementsRequest) over all live entitlements, by id. */
export async function searchEntitlements(
  db: Db,
  tokens: PageTokens,
  input: z.output<typeof SearchEntitlementsFilter>,
  page: PageRequest,
): Promise<Page<AppEntitlement>> {
  const filter = {
    query: input.query ?? '',
    alias: input.alias ?? '',
    appIds: [...new Set(input.appIds ?? [])].sort(),
  };
  return pageOf(tokens, page, {
    name: 'entitlements:search',
    filter,
    isCursor: isString,
    fetch: (after, limit) => store.searchEntitlements(db, { ...filter, afterId: after, limit }),
    keyOf: (row) => row.id,
    toItem: toAppEntitlement,
  });
}
