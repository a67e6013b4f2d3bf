/**
 * The entitlement_owners table: one row per (user, role slug, app, entitlement). Listings of a
 * user's ownerships are keyset pages over the rest of the primary key, joined with the live
 * entitlement they own (ownerships of deleted entitlements are not listed).
 */
import { iso, type Queryable } from './db';
import { entitlementColumns, toEntitlementRow, type EntitlementRow, type RawEntitlementRow } from './entitlements';

export interface OwnerRef {
  userId: string;
  roleSlug: string;
  appId: string;
  entitlementId: string;
}

export interface OwnerRow extends OwnerRef {
  createdAt: string;
}

/** Keyset cursor of a user's ownership listing: the primary key after user_id. */
export type OwnerCursor = [roleSlug: string, appId: string, entitlementId: string];

const KEY = 'user_id = $1 AND role_slug = $2 AND app_id = $3 AND entitlement_id = $4';
const keyParams = (ref: OwnerRef): string[] => [ref.userId, ref.roleSlug, ref.appId, ref.entitlementId];

/** Inserts the ownership unless it exists, then reads it: the original createdAt on a repeat. */
export async function upsertOwner(db: Queryable, ref: OwnerRef): Promise<OwnerRow & { created: boolean }> {
  const inserted = await db.query(
    `INSERT INTO entitlement_owners (user_id, role_slug, app_id, entitlement_id) VALUES ($1, $2, $3, $4)
     ON CONFLICT (user_id, role_slug, app_id, entitlement_id) DO NOTHING RETURNING user_id`,
    keyParams(ref),
  );
  const rows = await db.query<{ createdAt: unknown }>(`SELECT created_at AS "createdAt" FROM entitlement_owners WHERE ${KEY}`, keyParams(ref));
  return { ...ref, createdAt: iso(rows[0]!.createdAt)!, created: inserted.length > 0 };
}

/** False when there was no such ownership. */
export async function deleteOwner(db: Queryable, ref: OwnerRef): Promise<boolean> {
  const rows = await db.query(`DELETE FROM entitlement_owners WHERE ${KEY} RETURNING user_id`, keyParams(ref));
  return rows.length > 0;
}

export interface OwnedEntitlementRow {
  owner: OwnerRow;
  entitlement: EntitlementRow;
}

type RawOwned = RawEntitlementRow & { ownerRoleSlug: string; ownerCreatedAt: unknown };

/** Up to `limit` ownerships of `userId` after `after`, ordered by (role slug, app id, entitlement id). */
export async function listOwnedEntitlements(
  db: Queryable,
  userId: string,
  after: OwnerCursor | undefined,
  limit: number,
): Promise<OwnedEntitlementRow[]> {
  const params: unknown[] = [userId];
  let keyset = '';
  if (after) {
    params.push(...after);
    keyset = 'AND (o.role_slug, o.app_id, o.entitlement_id) > ($2, $3, $4)';
  }
  params.push(limit);
  const rows = await db.query<RawOwned>(
    `SELECT o.role_slug AS "ownerRoleSlug", o.created_at AS "ownerCreatedAt", ${entitlementColumns('e')}
     FROM entitlement_owners o
     JOIN app_entitlements e ON e.id = o.entitlement_id AND e.app_id = o.app_id AND e.deleted_at IS NULL
     WHERE o.user_id = $1 ${keyset}
     ORDER BY o.role_slug, o.app_id, o.entitlement_id
     LIMIT $${params.length}`,
    params,
  );
  return rows.map(({ ownerRoleSlug, ownerCreatedAt, ...raw }) => {
    const entitlement = toEntitlementRow(raw);
    return {
      owner: { userId, roleSlug: ownerRoleSlug, appId: entitlement.appId, entitlementId: entitlement.id, createdAt: iso(ownerCreatedAt)! },
      entitlement,
    };
  });
}
