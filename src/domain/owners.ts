/**
 * Entitlement owners: a service-account user owns an app entitlement under a role slug. Used by
 * the API and by the automation activities, so both operations are idempotent: creating an
 * existing ownership returns it with its original createdAt; deleting reports whether it existed.
 */
import * as store from '../store/owners';
import type { Db } from '../store/db';
import type { Page, PageRequest, PageTokens } from './pagination';
import { getUser, SERVICE_USER } from './users';
import { toAppEntitlement } from './entitlement-record';
import { pageOf } from './listing';
import { ROLE_SLUG, type AppEntitlement } from './schemas';
import { type FieldViolation, invalidArgument, notFound } from '../errors';

export interface EntitlementOwnerRef {
  userId: string;
  roleSlug: string;
  appId: string;
  entitlementId: string;
}

export interface UserOwnerEntitlementRecord {
  appEntitlement: AppEntitlement;
  createdAt: string;
  roleSlug: string;
  userId: string;
}

const REF_FIELDS = ['userId', 'roleSlug', 'appId', 'entitlementId'] as const;

/** 400 unless every part of the reference is a non-empty string (callers may be CEL results). */
function checkRef(ref: EntitlementOwnerRef): void {
  const violations: FieldViolation[] = [];
  for (const field of REF_FIELDS) {
    const value: unknown = ref[field];
    if (typeof value !== 'string' || value === '')
      violations.push({ field, description: 'must be a non-empty string' });
  }
  if (violations.length === 0 && !ROLE_SLUG.test(ref.roleSlug)) {
    violations.push({ field: 'roleSlug', description: `must match ${ROLE_SLUG.source}` });
  }
  if (violations.length > 0) throw invalidArgument(violations);
}

/**
 * Records the ownership. 400: malformed reference, or the user is not a service account;
 * 404: unknown user, app, or entitlement (it must belong to the app and not be deleted).
 */
export async function createEntitlementOwner(
  db: Db,
  ref: EntitlementOwnerRef,
  actor = 'system',
): Promise<{ userOwnerEntitlement: UserOwnerEntitlementRecord }> {
  checkRef(ref);
  const found = await store.recordOwner(db, ref, SERVICE_USER, {
    actor,
    action: 'entitlement_owner.create',
    ...auditResource(ref),
  });
  if (found.userType === undefined) throw notFound('user', ref.userId);
  if (found.userType !== SERVICE_USER) {
    throw invalidArgument({ field: 'userId', description: `user must be a service account (${SERVICE_USER})` });
  }
  if (!found.appExists) throw notFound('app', ref.appId);
  if (!found.entitlement || !found.owner) throw notFound('app entitlement', `${ref.appId}/${ref.entitlementId}`);
  return {
    userOwnerEntitlement: {
      appEntitlement: toAppEntitlement(found.entitlement),
      createdAt: found.owner.createdAt,
      roleSlug: found.owner.roleSlug,
      userId: found.owner.userId,
    },
  };
}

/** Removes the ownership; false when it did not exist. 400 only for a malformed reference. */
export async function deleteEntitlementOwner(db: Db, ref: EntitlementOwnerRef, actor = 'system'): Promise<boolean> {
  for (const field of REF_FIELDS) {
    const value: unknown = ref[field];
    if (typeof value !== 'string') throw invalidArgument({ field, description: 'must be a string' });
  }
  return store.deleteOwner(db, ref, { actor, action: 'entitlement_owner.delete', ...auditResource(ref) });
}

/** Audit resource of an ownership: the entitlement, with the owner and role in the details. */
function auditResource(ref: EntitlementOwnerRef): {
  resourceType: string;
  resourceId: string;
  details: Record<string, unknown>;
} {
  return {
    resourceType: 'app_entitlement',
    resourceId: ref.entitlementId,
    details: { userId: ref.userId, roleSlug: ref.roleSlug, appId: ref.appId },
  };
}

function isOwnerCursor(value: unknown): value is store.OwnerCursor {
  return Array.isArray(value) && value.length === 3 && value.every((part) => typeof part === 'string');
}

/** The ownerships of a user whose entitlements are live; 404 unknown user. */
export async function listEntitlementOwners(
  db: Db,
  tokens: PageTokens,
  userId: string,
  page: PageRequest,
): Promise<Page<UserOwnerEntitlementRecord>> {
  await getUser(db, userId);
  return pageOf(tokens, page, {
    name: `owners:user:${userId}`,
    filter: {},
    isCursor: isOwnerCursor,
    fetch: (after, limit) => store.listOwnedEntitlements(db, userId, after, limit),
    keyOf: ({ owner }): store.OwnerCursor => [owner.roleSlug, owner.appId, owner.entitlementId],
    toItem: ({ owner, entitlement }) => ({
      appEntitlement: toAppEntitlement(entitlement),
      createdAt: owner.createdAt,
      roleSlug: owner.roleSlug,
      userId: owner.userId,
    }),
  });
}
