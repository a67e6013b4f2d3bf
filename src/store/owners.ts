/**
 * The entitlement_owners table: one row per (user, role slug, app, entitlement). Listings of a
 * user's ownerships are keyset pages over the rest of the primary key, joined with the live
 * entitlement they own (ownerships of deleted entitlements are not listed).
 */
import { iso, type Queryable } from './db';
import { AUDIT_COLUMNS, auditParams, auditPlaceholders, type AuditInput } from './audit';
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

/** What `recordOwner` found, and the ownership as it now is (undefined when a check failed and nothing was written). */
export interface OwnerRecording {
  /** The user's type; undefined when there is no such user. */
  userType: string | undefined;
  appExists: boolean;
  /** The entitlement, live and in the app; undefined when there is none such. */
  entitlement: EntitlementRow | undefined;
  owner: (OwnerRow & { created: boolean }) | undefined;
}

type RawRecording = Partial<RawEntitlementRow> & {
  userType: string | null;
  appExists: boolean;
  insertedAt: unknown;
  existingAt: unknown;
};

/**
 * Records the ownership in one statement, only when the user is of `userType`, the app exists and
 * the entitlement is live in it; its audit event is written with it, only when the row is new. A
 * repeat keeps the original createdAt. Answers what it found, for the caller to name what failed.
 * One statement instead of a transaction of five: one round trip to PostgreSQL, and about half the
 * time on either store (docs/performance.md#constants); a prepared one, since every ownership step runs it.
 */
export async function recordOwner(
  db: Queryable,
  ref: OwnerRef,
  userType: string,
  audit: AuditInput,
): Promise<OwnerRecording> {
  const rows = await db.query<RawRecording>(
    `WITH e AS (SELECT ${entitlementColumns()} FROM app_entitlements WHERE id = $4 AND app_id = $3 AND deleted_at IS NULL),
     facts AS (SELECT (SELECT type FROM users WHERE id = $1) AS "userType", EXISTS (SELECT 1 FROM apps WHERE id = $3) AS "appExists"),
     ins AS (
       INSERT INTO entitlement_owners (user_id, role_slug, app_id, entitlement_id)
       SELECT $1, $2, $3, $4 FROM facts WHERE facts."userType" = $5 AND facts."appExists" AND EXISTS (SELECT 1 FROM e)
       ON CONFLICT (user_id, role_slug, app_id, entitlement_id) DO NOTHING RETURNING created_at
     ),
     audit AS (INSERT INTO audit_events ${AUDIT_COLUMNS} SELECT ${auditPlaceholders(6)} FROM ins)
     SELECT facts.*, (SELECT created_at FROM ins) AS "insertedAt", (SELECT created_at FROM entitlement_owners WHERE ${KEY}) AS "existingAt", e.*
     FROM facts LEFT JOIN e ON true`,
    [...keyParams(ref), userType, ...auditParams(audit)],
    // Every run with an ownership step runs it: prepared once, it is not parsed and planned again.
    { prepare: 'record_owner' },
  );
  const { userType: foundType, appExists, insertedAt, existingAt, ...raw } = rows[0]!;
  const entitlement = raw.id ? toEntitlementRow(raw as RawEntitlementRow) : undefined;
  const recording = { userType: foundType ?? undefined, appExists, entitlement, owner: undefined };
  if (foundType !== userType || !appExists || !entitlement) return recording;
  if (insertedAt || existingAt)
    return { ...recording, owner: { ...ref, createdAt: iso(insertedAt ?? existingAt)!, created: Boolean(insertedAt) } };
  // Inserted by another transaction after this statement's snapshot was taken: read it now.
  const again = await db.query<{ createdAt: unknown }>(
    `SELECT created_at AS "createdAt" FROM entitlement_owners WHERE ${KEY}`,
    keyParams(ref),
  );
  return { ...recording, owner: { ...ref, createdAt: iso(again[0]!.createdAt)!, created: false } };
}

/** Removes the ownership and writes its audit event, in one statement; false (and no event) when there was no such ownership. */
export async function deleteOwner(db: Queryable, ref: OwnerRef, audit: AuditInput): Promise<boolean> {
  const rows = await db.query<{ deleted: unknown }>(
    `WITH del AS (DELETE FROM entitlement_owners WHERE ${KEY} RETURNING user_id),
     audit AS (INSERT INTO audit_events ${AUDIT_COLUMNS} SELECT ${auditPlaceholders(5)} FROM del)
     SELECT count(*) AS deleted FROM del`,
    [...keyParams(ref), ...auditParams(audit)],
  );
  return Number(rows[0]!.deleted) > 0;
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
      owner: {
        userId,
        roleSlug: ownerRoleSlug,
        appId: entitlement.appId,
        entitlementId: entitlement.id,
        createdAt: iso(ownerCreatedAt)!,
      },
      entitlement,
    };
  });
}
