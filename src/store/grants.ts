/**
 * The grants table: a user holding an entitlement, from request to revocation. The partial unique
 * index `grants_live` keeps at most one live grant (PROVISIONING, GRANTED, DEPROVISIONING) per user
 * and entitlement, also under concurrent inserts; `grantCount` of an entitlement is counted from
 * `grants_open` (GRANTED and DEPROVISIONING) in the same statement that reads the entitlement
 * (OPEN_GRANT_COUNT), so it is exact after every committed change. Listings are keyset pages by
 * id, newest first (ids are time-ordered).
 */
import { iso, type Queryable } from './db';

export const GRANT_STATES = ['PROVISIONING', 'GRANTED', 'DEPROVISIONING', 'REVOKED', 'FAILED'] as const;
export type GrantState = (typeof GRANT_STATES)[number];

/** One entry of a grant's provisioning record (per phase and step path). */
export interface ProvisioningEntry {
  phase: 'provision' | 'deprovision';
  policy: string;
  step: string;
  state: 'PENDING' | 'DONE' | 'FAILED';
  attempts: number;
  startedAt: string | null;
  finishedAt: string | null;
  error: string | null;
  detail: Record<string, unknown>;
}

export interface GrantRow {
  id: string;
  userId: string;
  appId: string;
  appEntitlementId: string;
  state: GrantState;
  requestedBy: string;
  justification: string;
  /** The effective duration (the ask bounded by the entitlement's maximum), null for standing access. */
  durationMs: number | null;
  createdAt: string;
  grantedAt: string | null;
  expiresAt: string | null;
  revokedAt: string | null;
  revokedBy: string | null;
  revokeReason: string | null;
  error: string | null;
  /** The entitlement's provisionerPolicy when the grant was asked for. */
  provisionerPolicy: Record<string, unknown> | null;
  /** The entitlement's deprovisionerPolicy when the grant was revoked or expired. */
  deprovisionerPolicy: Record<string, unknown> | null;
  provisioning: ProvisioningEntry[];
}

export type NewGrant = Pick<
  GrantRow,
  | 'id'
  | 'userId'
  | 'appId'
  | 'appEntitlementId'
  | 'state'
  | 'requestedBy'
  | 'justification'
  | 'durationMs'
  | 'error'
  | 'provisionerPolicy'
  | 'provisioning'
> & {
  /** GRANTED at once: grantedAt is the insert's time and expiresAt that plus durationMs. */
  grantedNow: boolean;
};

const COLUMNS = `id, user_id AS "userId", app_id AS "appId", app_entitlement_id AS "appEntitlementId", state,
  requested_by AS "requestedBy", justification, duration_ms AS "durationMs", created_at AS "createdAt",
  granted_at AS "grantedAt", expires_at AS "expiresAt", revoked_at AS "revokedAt", revoked_by AS "revokedBy",
  revoke_reason AS "revokeReason", error, provisioner_policy AS "provisionerPolicy",
  deprovisioner_policy AS "deprovisionerPolicy", provisioning`;

/** The open grants of the entitlement row `t` (or of `app_entitlements`), as text: its grantCount. */
export function openGrantCount(t = 'app_entitlements'): string {
  return `(SELECT count(*) FROM grants g WHERE g.app_entitlement_id = ${t}.id AND g.state IN ('GRANTED', 'DEPROVISIONING'))::text`;
}

type RawRow = Record<keyof GrantRow, unknown>;

function json<T>(value: unknown): T {
  return (typeof value === 'string' ? JSON.parse(value) : value) as T;
}

function toRow(raw: RawRow): GrantRow {
  return {
    id: raw.id as string,
    userId: raw.userId as string,
    appId: raw.appId as string,
    appEntitlementId: raw.appEntitlementId as string,
    state: raw.state as GrantState,
    requestedBy: raw.requestedBy as string,
    justification: raw.justification as string,
    durationMs: raw.durationMs === null ? null : Number(raw.durationMs),
    createdAt: iso(raw.createdAt)!,
    grantedAt: iso(raw.grantedAt),
    expiresAt: iso(raw.expiresAt),
    revokedAt: iso(raw.revokedAt),
    revokedBy: raw.revokedBy as string | null,
    revokeReason: raw.revokeReason as string | null,
    error: raw.error as string | null,
    provisionerPolicy: json(raw.provisionerPolicy),
    deprovisionerPolicy: json(raw.deprovisionerPolicy),
    provisioning: json(raw.provisioning) ?? [],
  };
}

/**
 * Inserts the grant unless the user holds a live grant of the entitlement: then nothing is
 * written and undefined comes back (under concurrency the insert waits for the other
 * transaction, so the loser sees the winner's row once it commits).
 */
export async function insertGrant(db: Queryable, grant: NewGrant): Promise<GrantRow | undefined> {
  const rows = await db.query<RawRow>(
    `INSERT INTO grants (id, user_id, app_id, app_entitlement_id, state, requested_by, justification, duration_ms,
       granted_at, expires_at, error, provisioner_policy, provisioning)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8::bigint,
       CASE WHEN $9::boolean THEN now() END,
       CASE WHEN $9::boolean AND $8::bigint IS NOT NULL THEN now() + make_interval(secs => $8::bigint / 1000.0) END,
       $10, $11::jsonb, $12::jsonb)
     ON CONFLICT (user_id, app_entitlement_id) WHERE state IN ('PROVISIONING', 'GRANTED', 'DEPROVISIONING') DO NOTHING
     RETURNING ${COLUMNS}`,
    [
      grant.id,
      grant.userId,
      grant.appId,
      grant.appEntitlementId,
      grant.state,
      grant.requestedBy,
      grant.justification,
      grant.durationMs,
      grant.grantedNow,
      grant.error,
      grant.provisionerPolicy === null ? null : JSON.stringify(grant.provisionerPolicy),
      JSON.stringify(grant.provisioning),
    ],
  );
  return rows[0] && toRow(rows[0]);
}

/** The live grant of a user and entitlement, if any. */
export async function findLiveGrant(
  db: Queryable,
  userId: string,
  appEntitlementId: string,
): Promise<GrantRow | undefined> {
  const rows = await db.query<RawRow>(
    `SELECT ${COLUMNS} FROM grants WHERE user_id = $1 AND app_entitlement_id = $2
       AND state IN ('PROVISIONING', 'GRANTED', 'DEPROVISIONING')`,
    [userId, appEntitlementId],
  );
  return rows[0] && toRow(rows[0]);
}

/**
 * Holds, until the transaction ends, the lock of one grant id that a caller derived (a run's step):
 * two repeats of that call take turns, and the second finds what the first made.
 */
export async function lockGrantId(db: Queryable, id: string): Promise<void> {
  await db.query(`SELECT pg_advisory_xact_lock(hashtext('grants.id:' || $1))`, [id]);
}

/** One grant; `forUpdate` locks it in a transaction. */
export async function findGrant(
  db: Queryable,
  id: string,
  options: { forUpdate?: boolean } = {},
): Promise<GrantRow | undefined> {
  const rows = await db.query<RawRow>(
    `SELECT ${COLUMNS} FROM grants WHERE id = $1${options.forUpdate ? ' FOR UPDATE' : ''}`,
    [id],
  );
  return rows[0] && toRow(rows[0]);
}

/** The live grants of an entitlement, locked (an entitlement's deletion revokes them). */
export async function lockLiveGrantsOf(db: Queryable, appEntitlementId: string): Promise<GrantRow[]> {
  const rows = await db.query<RawRow>(
    `SELECT ${COLUMNS} FROM grants WHERE app_entitlement_id = $1
       AND state IN ('PROVISIONING', 'GRANTED', 'DEPROVISIONING') ORDER BY id FOR UPDATE`,
    [appEntitlementId],
  );
  return rows.map(toRow);
}

/** What a change of state writes; fields left out keep their values. */
export interface GrantChange {
  state?: GrantState;
  /** Sets grantedAt to now and expiresAt to now + durationMs. */
  grantNow?: boolean;
  /** Sets expiresAt to now + this many milliseconds. */
  expiresInMs?: number;
  /** Sets expiresAt to this time (ISO). */
  expiresAt?: string;
  revokedNow?: boolean;
  revokedBy?: string;
  revokeReason?: string;
  error?: string | null;
  deprovisionerPolicy?: Record<string, unknown> | null;
  provisioning?: ProvisioningEntry[];
}

/** Applies `change` to grant `id` when its state is one of `from`; undefined when it is not (nothing written). */
export async function updateGrant(
  db: Queryable,
  id: string,
  from: readonly GrantState[],
  change: GrantChange,
): Promise<GrantRow | undefined> {
  const values: unknown[] = [id, [...from]];
  const param = (value: unknown): string => {
    values.push(value);
    return `$${values.length}`;
  };
  const sets: string[] = [];
  if (change.state !== undefined) sets.push(`state = ${param(change.state)}`);
  if (change.grantNow) {
    sets.push(
      'granted_at = now()',
      'expires_at = CASE WHEN duration_ms IS NULL THEN NULL ELSE now() + make_interval(secs => duration_ms / 1000.0) END',
    );
  }
  if (change.expiresInMs !== undefined) {
    sets.push(`expires_at = now() + make_interval(secs => ${param(change.expiresInMs)}::bigint / 1000.0)`);
  }
  if (change.expiresAt !== undefined) sets.push(`expires_at = ${param(change.expiresAt)}::timestamptz`);
  if (change.revokedNow) sets.push('revoked_at = now()');
  if (change.revokedBy !== undefined) sets.push(`revoked_by = ${param(change.revokedBy)}`);
  if (change.revokeReason !== undefined) sets.push(`revoke_reason = ${param(change.revokeReason)}`);
  if (change.error !== undefined) sets.push(`error = ${param(change.error)}`);
  if (change.deprovisionerPolicy !== undefined) {
    sets.push(
      `deprovisioner_policy = ${param(change.deprovisionerPolicy === null ? null : JSON.stringify(change.deprovisionerPolicy))}::jsonb`,
    );
  }
  if (change.provisioning !== undefined)
    sets.push(`provisioning = ${param(JSON.stringify(change.provisioning))}::jsonb`);
  if (sets.length === 0) return findGrant(db, id);
  const rows = await db.query<RawRow>(
    `UPDATE grants SET ${sets.join(', ')} WHERE id = $1 AND state = ANY($2::text[]) RETURNING ${COLUMNS}`,
    values,
  );
  return rows[0] && toRow(rows[0]);
}

/** Whether the grant's expiresAt has come (by the store's clock, with `toleranceMs` of slack). */
export async function hasExpired(db: Queryable, id: string, toleranceMs: number): Promise<boolean> {
  const rows = await db.query<{ due: boolean }>(
    `SELECT expires_at <= now() + make_interval(secs => $2::bigint / 1000.0) AS due FROM grants WHERE id = $1`,
    [id, toleranceMs],
  );
  return rows[0]?.due === true;
}

export interface GrantFilter {
  userId?: string;
  appId?: string;
  appEntitlementId?: string;
  states?: readonly GrantState[];
  /** Who revoked it (`automation:<id>:<event id>` for a run's step). */
  revokedBy?: string;
}

/** Up to `limit` grants matching `filter` with ids before `beforeId`, newest first. */
export async function listGrants(
  db: Queryable,
  filter: GrantFilter,
  beforeId: string | undefined,
  limit: number,
): Promise<GrantRow[]> {
  const values: unknown[] = [];
  const param = (value: unknown): string => {
    values.push(value);
    return `$${values.length}`;
  };
  const where: string[] = [];
  if (filter.userId !== undefined) where.push(`user_id = ${param(filter.userId)}`);
  if (filter.appId !== undefined) where.push(`app_id = ${param(filter.appId)}`);
  if (filter.appEntitlementId !== undefined) where.push(`app_entitlement_id = ${param(filter.appEntitlementId)}`);
  if (filter.revokedBy !== undefined) where.push(`revoked_by = ${param(filter.revokedBy)}`);
  if (filter.states && filter.states.length > 0) where.push(`state = ANY(${param([...filter.states])}::text[])`);
  if (beforeId !== undefined) where.push(`id < ${param(beforeId)}`);
  const rows = await db.query<RawRow>(
    `SELECT ${COLUMNS} FROM grants ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY id DESC LIMIT ${param(limit)}`,
    values,
  );
  return rows.map(toRow);
}
