/**
 * Grants: a user holding an entitlement, from request to revocation (docs/api.md#grants). The API
 * side (create, read, list, revoke, extend) writes the grant's row, its audit record and its
 * directory event in one transaction and tells the grant's workflow (one per grant, on the run
 * engine) inside it, so a change the engine did not take is not committed (503, nothing written).
 * The workflow side (provision, expire, deprovision: the activities of workflows/grant.ts) moves
 * the row on, each step conditional on the state it starts from, so a repeat changes nothing.
 *
 * Provisioning follows the entitlement's provisionerPolicy as it was when the grant was asked for,
 * deprovisioning its deprovisionerPolicy as it is when the grant is revoked or expires.
 * `unconfigured` (or none) is done at once, in the same transaction; the connector members fail at
 * once; the others are the workflow's.
 */
import { newId } from '../ids';
import { parseDuration } from '../duration';
import type { Db, Queryable } from '../store/db';
import * as store from '../store/grants';
import type { GrantRow, GrantState, ProvisioningEntry } from '../store/grants';
import { findEntitlementById, findLiveEntitlement } from '../store/entitlements';
import { findApp } from '../store/apps';
import { findUser } from '../store/users';
import { recordAudit } from '../store/audit';
import { FailedPreconditionError, invalidArgument, notFound } from '../errors';
import type { RunEngine } from './engine';
import { recordDirectoryEvent, type DirectoryEventType } from './directory-events';
import { toAppEntitlement } from './entitlement-record';
import { isString, pageOf } from './listing';
import type { Page, PageRequest, PageTokens } from './pagination';
import type { ProvisionPolicyValue } from './schemas';
import type { Grant } from './api-schemas';
import type { CallOutcome, GrantStep, ProvisioningCall } from '../contract/activities';
import { closeCallbackTokens } from '../store/provisioning-webhooks';
import type { z } from 'zod';
import type { CreateGrantRequest } from './api-schemas';

export const EXPIRY_ACTOR = 'system:expiry';
export const PROVISIONING_ACTOR = 'system:provisioning';
export const EXPIRED_REASON = 'expired';
/** A timer may fire a little before the store's clock says the time has come. */
const EXPIRY_TOLERANCE_MS = 1000;

const LIVE: readonly GrantState[] = ['PROVISIONING', 'GRANTED', 'DEPROVISIONING'];
/** The members that need a connector, which this service does not run: they fail at once. */
export const CONNECTOR_MEMBERS = ['connector', 'externalTicket', 'action', 'devicePlacement'] as const;

export type GrantView = z.output<typeof Grant>;

/** The API view of a stored grant. */
export function toGrant(row: GrantRow): GrantView {
  return {
    id: row.id,
    userId: row.userId,
    appId: row.appId,
    appEntitlementId: row.appEntitlementId,
    state: row.state,
    requestedBy: row.requestedBy,
    justification: row.justification,
    createdAt: row.createdAt,
    grantedAt: row.grantedAt,
    expiresAt: row.expiresAt,
    revokedAt: row.revokedAt,
    revokedBy: row.revokedBy,
    revokeReason: row.revokeReason,
    error: row.error,
    provisioning: row.provisioning,
  };
}

/** The member a policy sets (`unconfigured` for none). */
export function policyMember(policy: ProvisionPolicyValue | Record<string, unknown> | null | undefined): string {
  if (!policy) return 'unconfigured';
  for (const [key, value] of Object.entries(policy)) if (value !== null && value !== undefined) return key;
  return 'unconfigured';
}

export function connectorMessage(member: string): string {
  return `provisioning by ${member} needs a connector, which this service does not run`;
}

/**
 * The grant's duration in milliseconds: the ask bounded by the entitlement's durationGrant, or
 * durationGrant without an ask; null (standing access) with neither.
 */
export function effectiveDurationMs(askedMs: number | undefined, durationGrant: string | null): number | null {
  const max = durationGrant ? parseDuration(durationGrant) : undefined;
  if (max !== undefined && max > 0) return askedMs === undefined ? max : Math.min(askedMs, max);
  return askedMs ?? null;
}

function entry(
  phase: ProvisioningEntry['phase'],
  policy: string,
  state: ProvisioningEntry['state'],
  options: { step?: string; attempts?: number; error?: string | null; detail?: Record<string, unknown> } = {},
): ProvisioningEntry {
  const now = new Date().toISOString();
  return {
    phase,
    policy,
    step: options.step ?? '',
    state,
    attempts: options.attempts ?? 0,
    startedAt: now,
    finishedAt: state === 'PENDING' ? null : now,
    error: options.error ?? null,
    detail: options.detail ?? {},
  };
}

/** The grant's entries with `next` in place of the entry of the same phase and step (or added). */
function withEntry(list: readonly ProvisioningEntry[], next: ProvisioningEntry): ProvisioningEntry[] {
  const at = list.findIndex((e) => e.phase === next.phase && e.step === next.step);
  if (at < 0) return [...list, next];
  const previous = list[at]!;
  const merged = { ...next, startedAt: previous.startedAt, attempts: previous.attempts + next.attempts };
  return list.map((e, i) => (i === at ? merged : e));
}

/** Writes the grant's directory event: the user, the grant and its entitlement as the API shows them. */
async function recordGrantEvent(
  tx: Queryable,
  type: DirectoryEventType,
  actor: string,
  grant: GrantRow,
): Promise<void> {
  const user = await findUser(tx, grant.userId);
  const entitlement = await findEntitlementById(tx, grant.appEntitlementId);
  await recordDirectoryEvent(tx, {
    type,
    actor,
    user: user ? { ...user } : { id: grant.userId },
    grant: { ...toGrant(grant) },
    ...(entitlement ? { appEntitlement: { ...toAppEntitlement(entitlement) } } : {}),
  });
}

async function audit(
  tx: Queryable,
  actor: string,
  action: string,
  grant: GrantRow,
  details: Record<string, unknown> = {},
): Promise<void> {
  await recordAudit(tx, {
    actor,
    action,
    resourceType: 'grant',
    resourceId: grant.id,
    details: { userId: grant.userId, appEntitlementId: grant.appEntitlementId, state: grant.state, ...details },
  });
}

// ---------------------------------------------------------------- the API's changes

export interface CreatedGrant {
  grant: GrantView;
  created: boolean;
}

/**
 * Asks for a grant: the user's live grant of the entitlement when there is one (unchanged,
 * `created: false`), else a new one, started on the engine before the transaction commits.
 * 404 for an unknown user, app or entitlement (a deleted one, or one of another app).
 */
export async function createGrant(
  db: Db,
  engine: RunEngine,
  body: z.output<typeof CreateGrantRequest>,
  actor: string,
  options: { id?: string } = {},
): Promise<CreatedGrant> {
  return db.transaction(async (tx) => {
    if (options.id) {
      // A grant whose id the caller derived (a run's step): a repeat of the call that made it.
      await store.lockGrantId(tx, options.id);
      const made = await store.findGrant(tx, options.id);
      if (made) return { grant: toGrant(made), created: true };
    }
    if (!(await findUser(tx, body.userId))) throw notFound('user', body.userId);
    if (!(await findApp(tx, body.appId))) throw notFound('app', body.appId);
    const entitlement = await findLiveEntitlement(tx, body.appId, body.appEntitlementId, { forShare: true });
    if (!entitlement) throw notFound('app entitlement', body.appEntitlementId);
    const live = await store.findLiveGrant(tx, body.userId, body.appEntitlementId);
    // (A concurrent repeat of the same derived call may have made it since our first read.)
    if (live) return { grant: toGrant(live), created: live.id === options.id };

    const view = toAppEntitlement(entitlement);
    const policy = view.provisionerPolicy as Record<string, unknown> | null;
    const member = policyMember(policy);
    const askedMs = body.duration ? parseDuration(body.duration) : undefined;
    const now = member === 'unconfigured';
    const connector = (CONNECTOR_MEMBERS as readonly string[]).includes(member);
    const error = connector ? connectorMessage(member) : null;
    const row = await store.insertGrant(tx, {
      id: options.id ?? newId(),
      userId: body.userId,
      appId: body.appId,
      appEntitlementId: body.appEntitlementId,
      state: now ? 'GRANTED' : connector ? 'FAILED' : 'PROVISIONING',
      requestedBy: actor,
      justification: body.justification ?? '',
      durationMs: effectiveDurationMs(askedMs, view.durationGrant),
      error,
      provisionerPolicy: policy,
      provisioning: now
        ? [entry('provision', 'unconfigured', 'DONE')]
        : connector
          ? [entry('provision', member, 'FAILED', { error })]
          : [],
      grantedNow: now,
    });
    if (!row) {
      // Another request made the live grant between our read and our insert (it has committed).
      const winner = await store.findLiveGrant(tx, body.userId, body.appEntitlementId);
      if (!winner) throw new FailedPreconditionError('the grant changed while it was asked for; ask again');
      // A concurrent repeat of the same derived call made it: that is this call's grant.
      return { grant: toGrant(winner), created: winner.id === options.id };
    }
    await audit(tx, actor, 'grant.create', row, { duration: body.duration ?? null });
    await recordGrantEvent(tx, 'grant.created', actor, row);
    if (row.state === 'GRANTED') await recordGrantEvent(tx, 'grant.granted', actor, row);
    if (row.state === 'FAILED') {
      await audit(tx, PROVISIONING_ACTOR, 'grant.fail', row, { error });
      await recordGrantEvent(tx, 'grant.failed', PROVISIONING_ACTOR, row);
    } else {
      await engine.startGrant(row.id);
    }
    return { grant: toGrant(row), created: true };
  });
}

/** One grant, or 404. */
export async function getGrant(db: Queryable, id: string): Promise<GrantView> {
  const row = await store.findGrant(db, id);
  if (!row) throw notFound('grant', id);
  return toGrant(row);
}

function one(value: unknown, field: string): string | undefined {
  if (value === undefined) return undefined;
  if (Array.isArray(value)) {
    if (value.length > 1) throw invalidArgument({ field, description: 'must be given at most once' });
    value = value[0];
  }
  if (typeof value !== 'string' || value === '') return undefined;
  if (value.length > 200) throw invalidArgument({ field, description: 'must be at most 200 characters' });
  return value;
}

/** The filters of `GET /api/v1/grants`; 400 naming the field for a bad one. */
export function readGrantFilter(query: Record<string, unknown>): store.GrantFilter {
  const filter: store.GrantFilter = {};
  const userId = one(query.userId, 'userId');
  const appId = one(query.appId, 'appId');
  const appEntitlementId = one(query.appEntitlementId, 'appEntitlementId');
  if (userId !== undefined) filter.userId = userId;
  if (appId !== undefined) filter.appId = appId;
  if (appEntitlementId !== undefined) filter.appEntitlementId = appEntitlementId;
  const states = query.state === undefined ? [] : Array.isArray(query.state) ? query.state : [query.state];
  for (const state of states) {
    if (!(store.GRANT_STATES as readonly unknown[]).includes(state)) {
      throw invalidArgument({ field: 'state', description: `must be one of ${store.GRANT_STATES.join(', ')}` });
    }
  }
  if (states.length > 0) filter.states = [...new Set(states as GrantState[])].sort();
  return filter;
}

/** Grants matching the filter, newest first. */
export function listGrants(
  db: Db,
  tokens: PageTokens,
  filter: store.GrantFilter,
  page: PageRequest,
): Promise<Page<GrantView>> {
  return pageOf(tokens, page, {
    name: 'grants',
    filter,
    isCursor: isString,
    fetch: (before, limit) => store.listGrants(db, filter, before, limit),
    keyOf: (row) => row.id,
    toItem: toGrant,
  });
}

/**
 * Starts the deprovisioning of a live grant under its row lock: DEPROVISIONING with who and why,
 * the entitlement's deprovisionerPolicy of now recorded; an unconfigured one is done at once
 * (REVOKED). The caller tells the engine.
 */
async function beginDeprovision(
  tx: Queryable,
  row: GrantRow,
  by: string,
  reason: string,
  action: 'grant.revoke' | 'grant.expire',
): Promise<GrantRow> {
  const entitlement = await findEntitlementById(tx, row.appEntitlementId);
  const policy = (entitlement ? toAppEntitlement(entitlement).deprovisionerPolicy : null) as Record<
    string,
    unknown
  > | null;
  const started = await store.updateGrant(tx, row.id, LIVE, {
    state: 'DEPROVISIONING',
    revokedBy: by,
    revokeReason: reason,
    deprovisionerPolicy: policy,
  });
  if (!started) throw new FailedPreconditionError('the grant is not live');
  await audit(tx, by, action, started, { reason });
  // Access that was never granted has nothing to take back downstream yet: the workflow stops the provisioning.
  if (row.state === 'GRANTED' && policyMember(policy) === 'unconfigured') return finishDeprovision(tx, started);
  return started;
}

/** Ends a DEPROVISIONING grant whose deprovision is done: REVOKED, with its event. */
async function finishDeprovision(tx: Queryable, row: GrantRow, done?: ProvisioningEntry): Promise<GrantRow> {
  const revoked = await store.updateGrant(tx, row.id, ['DEPROVISIONING'], {
    state: 'REVOKED',
    revokedNow: true,
    provisioning: withEntry(row.provisioning, done ?? entry('deprovision', 'unconfigured', 'DONE')),
  });
  if (!revoked) return row;
  const expired = revoked.revokeReason === EXPIRED_REASON && revoked.revokedBy === EXPIRY_ACTOR;
  await recordGrantEvent(tx, expired ? 'grant.expired' : 'grant.revoked', revoked.revokedBy ?? EXPIRY_ACTOR, revoked);
  return revoked;
}

function lastDeprovisionFailed(row: GrantRow): boolean {
  return row.provisioning.some((e) => e.phase === 'deprovision' && e.state === 'FAILED');
}

/**
 * Revokes a grant (idempotent: a REVOKED grant answers unchanged; a DEPROVISIONING one too, unless
 * its deprovision failed: then it is tried again). 409 for a FAILED grant.
 */
export async function revokeGrant(
  db: Db,
  engine: RunEngine,
  id: string,
  reason: string,
  actor: string,
): Promise<GrantView> {
  return db.transaction(async (tx) => {
    const row = await store.findGrant(tx, id, { forUpdate: true });
    if (!row) throw notFound('grant', id);
    if (row.state === 'REVOKED') return toGrant(row);
    if (row.state === 'FAILED') throw new FailedPreconditionError('a FAILED grant holds no access to revoke');
    if (row.state === 'DEPROVISIONING') {
      if (!lastDeprovisionFailed(row)) return toGrant(row);
      await audit(tx, actor, 'grant.revoke', row, { reason, retry: true });
      await engine.signalGrant(id, { type: 'retry' });
      return toGrant(row);
    }
    const changed = await beginDeprovision(tx, row, actor, reason, 'grant.revoke');
    await engine.signalGrant(id, { type: 'revoke' });
    return toGrant(changed);
  });
}

/**
 * Moves a GRANTED grant's expiry to now + the duration (bounded by durationGrant). 400 when it
 * would end sooner than the current expiresAt (or end standing access); 409 when not GRANTED.
 */
export async function extendGrant(
  db: Db,
  engine: RunEngine,
  id: string,
  duration: string,
  actor: string,
): Promise<GrantView> {
  return db.transaction(async (tx) => {
    const row = await store.findGrant(tx, id, { forUpdate: true });
    if (!row) throw notFound('grant', id);
    if (row.state !== 'GRANTED')
      throw new FailedPreconditionError(`only a GRANTED grant can be extended (it is ${row.state})`);
    const entitlement = await findEntitlementById(tx, row.appEntitlementId);
    const max = entitlement ? toAppEntitlement(entitlement).durationGrant : null;
    const ms = effectiveDurationMs(parseDuration(duration), max)!;
    if (row.expiresAt === null) {
      throw invalidArgument({
        field: 'duration',
        description: 'the grant is standing access (no expiresAt): an extension would end it',
      });
    }
    if (Date.now() + ms < Date.parse(row.expiresAt)) {
      throw invalidArgument({
        field: 'duration',
        description: `would end before the current expiresAt (${row.expiresAt})`,
      });
    }
    const extended = (await store.updateGrant(tx, id, ['GRANTED'], { expiresInMs: ms }))!;
    await audit(tx, actor, 'grant.extend', extended, { duration, expiresAt: extended.expiresAt });
    await engine.signalGrant(id, { type: 'extend', expiresAt: extended.expiresAt! });
    return toGrant(extended);
  });
}

/**
 * Revokes the live grants of an entitlement that is being deleted (reason `entitlement deleted`,
 * by the deleter), in the deletion's transaction; the entitlement's row is locked by the caller.
 */
export async function revokeGrantsOfEntitlement(
  tx: Queryable,
  engine: RunEngine,
  appEntitlementId: string,
  actor: string,
): Promise<number> {
  const rows = await store.lockLiveGrantsOf(tx, appEntitlementId);
  for (const row of rows) {
    if (row.state === 'DEPROVISIONING') continue;
    await beginDeprovision(tx, row, actor, 'entitlement deleted', 'grant.revoke');
    await engine.signalGrant(row.id, { type: 'revoke' });
  }
  return rows.length;
}

// ---------------------------------------------------------------- the workflow's steps

function stepOf(row: GrantRow | undefined, call?: ProvisioningCall): GrantStep {
  return { state: row?.state ?? 'REVOKED', expiresAt: row?.expiresAt ?? null, ...(call ? { call } : {}) };
}

/** The webhook id of a `webhook` policy. */
export function webhookIdOf(policy: Record<string, unknown> | null): string {
  const webhook = policy?.webhook as { webhookId?: string | null } | null | undefined;
  return webhook?.webhookId ?? '';
}

/**
 * Runs the provisioning of a PROVISIONING grant. The members this service provisions by itself
 * (unconfigured) are done when the grant is made; those it cannot run fail here with
 * `system:provisioning` as the actor.
 */
export async function provisionGrant(db: Db, id: string): Promise<GrantStep> {
  return db.transaction(async (tx) => {
    const row = await store.findGrant(tx, id, { forUpdate: true });
    if (!row || row.state !== 'PROVISIONING') return stepOf(row);
    const member = policyMember(row.provisionerPolicy);
    if (member === 'webhook') return stepOf(row, { phase: 'provision', step: '', attempt: 1 });
    const error = `provisioning by ${member} is not available in this version of the service`;
    const failed = (await store.updateGrant(tx, id, ['PROVISIONING'], {
      state: 'FAILED',
      error,
      provisioning: withEntry(row.provisioning, entry('provision', member, 'FAILED', { error })),
    }))!;
    await audit(tx, PROVISIONING_ACTOR, 'grant.fail', failed, { error });
    await recordGrantEvent(tx, 'grant.failed', PROVISIONING_ACTOR, failed);
    return stepOf(failed);
  });
}

/** Expires a GRANTED grant whose expiresAt has come (by the store's clock); else answers its state. */
export async function expireGrant(db: Db, id: string): Promise<GrantStep> {
  return db.transaction(async (tx) => {
    const row = await store.findGrant(tx, id, { forUpdate: true });
    if (!row || row.state !== 'GRANTED' || row.expiresAt === null) return stepOf(row);
    if (!(await store.hasExpired(tx, id, EXPIRY_TOLERANCE_MS))) return stepOf(row);
    return stepOf(await beginDeprovision(tx, row, EXPIRY_ACTOR, EXPIRED_REASON, 'grant.expire'));
  });
}

/**
 * Runs the deprovisioning of a DEPROVISIONING grant by the policy recorded when it began:
 * unconfigured (or none) is done at once; one this service cannot run is recorded as failed and
 * the grant stays DEPROVISIONING (counted, listed, retried by a revoke).
 */
export async function deprovisionGrant(db: Db, id: string, attempt = 1): Promise<GrantStep> {
  return db.transaction(async (tx) => {
    const row = await store.findGrant(tx, id, { forUpdate: true });
    if (!row || row.state !== 'DEPROVISIONING') return stepOf(row);
    await closeCallbackTokens(tx, id, 'provision');
    const member = policyMember(row.deprovisionerPolicy);
    if (member === 'unconfigured') return stepOf(await finishDeprovision(tx, row));
    if (member === 'webhook') return stepOf(row, { phase: 'deprovision', step: '', attempt });
    const error = (CONNECTOR_MEMBERS as readonly string[]).includes(member)
      ? connectorMessage(member)
      : `deprovisioning by ${member} is not available in this version of the service`;
    const failed = await store.updateGrant(tx, id, ['DEPROVISIONING'], {
      provisioning: withEntry(row.provisioning, entry('deprovision', member, 'FAILED', { error })),
    });
    return stepOf(failed);
  });
}

/** The policy a call's phase follows. */
export function phasePolicy(row: GrantRow, phase: ProvisioningCall['phase']): Record<string, unknown> | null {
  return phase === 'provision' ? row.provisionerPolicy : row.deprovisionerPolicy;
}

/** Counts a call of a webhook in the grant's entry of its phase and step (PENDING while it is out). */
export async function recordCallStarted(db: Db, id: string, call: ProvisioningCall): Promise<GrantRow | undefined> {
  return db.transaction(async (tx) => {
    const row = await store.findGrant(tx, id, { forUpdate: true });
    if (!row) return undefined;
    const pending = entry(call.phase, 'webhook', 'PENDING', {
      step: call.step,
      attempts: 1,
      detail: { attempt: call.attempt },
    });
    return store.updateGrant(tx, id, [row.state], { provisioning: withEntry(row.provisioning, pending) });
  });
}

/**
 * Records how a webhook call ended and moves the grant on: a provision done → GRANTED (its
 * expiresAt from now), failed → FAILED; a deprovision done → REVOKED, failed → stays
 * DEPROVISIONING with the error in its entry. A grant revoked meanwhile only gets the entry.
 */
export async function finishProvisioningCall(
  db: Db,
  id: string,
  call: ProvisioningCall,
  outcome: CallOutcome,
): Promise<GrantStep> {
  return db.transaction(async (tx) => {
    const row = await store.findGrant(tx, id, { forUpdate: true });
    if (!row) return stepOf(row);
    const done = entry(call.phase, 'webhook', outcome.ok ? 'DONE' : 'FAILED', {
      step: call.step,
      error: outcome.ok ? null : outcome.error,
      detail: { attempt: call.attempt },
    });
    const provisioning = withEntry(row.provisioning, done);
    if (call.phase === 'provision') {
      if (row.state !== 'PROVISIONING') {
        return stepOf(await store.updateGrant(tx, id, [row.state], { provisioning }));
      }
      if (outcome.ok) {
        const granted = (await store.updateGrant(tx, id, ['PROVISIONING'], {
          state: 'GRANTED',
          grantNow: true,
          provisioning,
        }))!;
        await recordGrantEvent(tx, 'grant.granted', PROVISIONING_ACTOR, granted);
        return stepOf(granted);
      }
      const failed = (await store.updateGrant(tx, id, ['PROVISIONING'], {
        state: 'FAILED',
        error: outcome.error,
        provisioning,
      }))!;
      await audit(tx, PROVISIONING_ACTOR, 'grant.fail', failed, { error: outcome.error });
      await recordGrantEvent(tx, 'grant.failed', PROVISIONING_ACTOR, failed);
      return stepOf(failed);
    }
    if (row.state !== 'DEPROVISIONING') return stepOf(row);
    if (outcome.ok) return stepOf(await finishDeprovision(tx, row, done));
    return stepOf(await store.updateGrant(tx, id, ['DEPROVISIONING'], { provisioning }));
  });
}
