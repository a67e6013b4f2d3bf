/**
 * Grants: a user holding an entitlement, from request to revocation (docs/api.md#grants). The API
 * side (create, read, list, revoke, extend) writes the grant's row, its audit record and its
 * directory event in one transaction and tells the grant's workflow (one per grant, on the run
 * engine) inside it, so a change the engine did not take is not committed (503, nothing written).
 * The workflow side (provision, expire, deprovision: the activities of workflows/grant.ts) moves
 * the row on, each step conditional on the state it starts from, so a repeat changes nothing.
 *
 * Provisioning follows the entitlement's provisionerPolicy as it was when the grant was asked for,
 * deprovisioning its deprovisionerPolicy as it is when the grant is revoked or expires, one policy
 * step after the other (src/domain/provisioning-policy.ts: a multiStep's steps in written order).
 * `unconfigured` (or none) is done at once, in the same transaction; the connector members fail at
 * once; a `delegated` step is a child grant made in the step's transaction; `webhook` and `manual`
 * steps are calls the workflow makes and waits for (a receiver's answer or callback, a person's
 * task). A failed provision step undoes the steps done before it, in reverse order.
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
import { isString, pageOf, queryStates, queryValue } from './listing';
import type { Page, PageRequest, PageTokens } from './pagination';
import type { Grant } from './api-schemas';
import type { CallOutcome, GrantStep, ProvisioningCall } from '../contract/activities';
import { closeCallbackTokens } from '../store/provisioning-webhooks';
import * as tasks from '../store/provisioning-tasks';
import { derivedId } from '../ids';
import { policyMember, policySteps, policyStepAt, type PolicyObject, type PolicyStep } from './provisioning-policy';
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

export { policyMember };
/** The engine as a grant's changes use it. */
export type GrantEngine = Pick<RunEngine, 'startGrant' | 'signalGrant'>;
/** How many delegations a chain may hold (entitlement A's grant made by B's made by C's …). */
export const MAX_DELEGATIONS = 8;

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
  const merged = {
    ...next,
    startedAt: previous.startedAt,
    attempts: previous.attempts + next.attempts,
    detail: { ...previous.detail, ...next.detail },
  };
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
  engine: GrantEngine,
  body: z.output<typeof CreateGrantRequest>,
  actor: string,
  options: { id?: string } = {},
): Promise<CreatedGrant> {
  return db.transaction((tx) => createGrantIn(tx, engine, body, actor, options));
}

/**
 * createGrant in the caller's transaction. `durationMs` (a delegated child's: its parent's
 * duration) stands for the ask, bounded by the entitlement's durationGrant as an ask is.
 */
export async function createGrantIn(
  tx: Queryable,
  engine: GrantEngine,
  body: z.output<typeof CreateGrantRequest>,
  actor: string,
  options: { id?: string; durationMs?: number | null } = {},
): Promise<CreatedGrant> {
  {
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
    const askedMs =
      options.durationMs !== undefined
        ? (options.durationMs ?? undefined)
        : body.duration
          ? parseDuration(body.duration)
          : undefined;
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
  }
}

/** One grant, or 404. */
export async function getGrant(db: Queryable, id: string): Promise<GrantView> {
  const row = await store.findGrant(db, id);
  if (!row) throw notFound('grant', id);
  return toGrant(row);
}

/** The filters of `GET /api/v1/grants`; 400 naming the field for a bad one. */
export function readGrantFilter(query: Record<string, unknown>): store.GrantFilter {
  const filter: store.GrantFilter = {};
  const userId = queryValue(query.userId, 'userId');
  const appId = queryValue(query.appId, 'appId');
  const appEntitlementId = queryValue(query.appEntitlementId, 'appEntitlementId');
  if (userId !== undefined) filter.userId = userId;
  if (appId !== undefined) filter.appId = appId;
  if (appEntitlementId !== undefined) filter.appEntitlementId = appEntitlementId;
  const states = queryStates(query.state, store.GRANT_STATES);
  if (states.length > 0) filter.states = states;
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
  engine: GrantEngine,
  row: GrantRow,
  by: string,
  reason: string,
  action: 'grant.revoke' | 'grant.expire',
): Promise<GrantRow> {
  const entitlement = await findEntitlementById(tx, row.appEntitlementId);
  const policy = (entitlement ? toAppEntitlement(entitlement).deprovisionerPolicy : null) as PolicyObject | null;
  const started = await store.updateGrant(tx, row.id, LIVE, {
    state: 'DEPROVISIONING',
    revokedBy: by,
    revokeReason: reason,
    deprovisionerPolicy: policy,
  });
  if (!started) throw new FailedPreconditionError('the grant is not live');
  await audit(tx, by, action, started, { reason });
  if (row.state === 'PROVISIONING') {
    // The provisioning stops: its open tasks close as failed, its callback tokens stop working.
    await tasks.failOpenTasks(tx, row.id, 'provision', { by, comment: 'the grant was revoked' });
    await closeCallbackTokens(tx, row.id, 'provision');
  }
  // Access that was never granted has nothing to take back downstream yet: the workflow stops the provisioning.
  if (row.state === 'GRANTED' && policyMember(policy) === 'unconfigured') {
    return (await advanceDeprovision(tx, engine, started, 1)).row;
  }
  return started;
}

/**
 * Ends a DEPROVISIONING grant whose deprovision is done: REVOKED, with its event; then the
 * delegated children it made are revoked (by `grant:<id>`, for the same reason).
 */
async function finishDeprovision(tx: Queryable, engine: GrantEngine, row: GrantRow): Promise<GrantRow> {
  const revoked = await store.updateGrant(tx, row.id, ['DEPROVISIONING'], { state: 'REVOKED', revokedNow: true });
  if (!revoked) return row;
  const expired = revoked.revokeReason === EXPIRED_REASON && revoked.revokedBy === EXPIRY_ACTOR;
  await recordGrantEvent(tx, expired ? 'grant.expired' : 'grant.revoked', revoked.revokedBy ?? EXPIRY_ACTOR, revoked);
  for (const childId of madeChildren(revoked)) {
    await revokeChild(tx, engine, revoked, childId, revoked.revokeReason ?? 'revoked');
  }
  return revoked;
}

/** The ids of the delegated grants this grant made (not those it found and linked). */
function madeChildren(row: GrantRow): string[] {
  return row.provisioning
    .filter((e) => e.phase === 'provision' && e.policy === 'delegated' && typeof e.detail.grantId === 'string')
    .filter((e) => e.detail.linked !== true)
    .map((e) => e.detail.grantId as string);
}

/** Revokes a child this grant made, when it is still PROVISIONING or GRANTED. */
async function revokeChild(
  tx: Queryable,
  engine: GrantEngine,
  parent: GrantRow,
  childId: string,
  reason: string,
): Promise<void> {
  const child = await store.findGrant(tx, childId, { forUpdate: true });
  if (!child || (child.state !== 'PROVISIONING' && child.state !== 'GRANTED')) return;
  await beginDeprovision(tx, engine, child, `grant:${parent.id}`, reason, 'grant.revoke');
  await engine.signalGrant(child.id, { type: 'revoke' });
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
  engine: GrantEngine,
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
    const changed = await beginDeprovision(tx, engine, row, actor, reason, 'grant.revoke');
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
  engine: GrantEngine,
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
    await alignChildren(tx, engine, extended);
    return toGrant(extended);
  });
}

/**
 * Revokes the live grants of an entitlement that is being deleted (reason `entitlement deleted`,
 * by the deleter), in the deletion's transaction; the entitlement's row is locked by the caller.
 */
export async function revokeGrantsOfEntitlement(
  tx: Queryable,
  engine: GrantEngine,
  appEntitlementId: string,
  actor: string,
): Promise<number> {
  const rows = await store.lockLiveGrantsOf(tx, appEntitlementId);
  for (const row of rows) {
    if (row.state === 'DEPROVISIONING') continue;
    await beginDeprovision(tx, engine, row, actor, 'entitlement deleted', 'grant.revoke');
    await engine.signalGrant(row.id, { type: 'revoke' });
  }
  return rows.length;
}

// ---------------------------------------------------------------- the workflow's steps

function stepOf(row: GrantRow | undefined, call?: ProvisioningCall): GrantStep {
  return { state: row?.state ?? 'REVOKED', expiresAt: row?.expiresAt ?? null, ...(call ? { call } : {}) };
}

/** The policy a call follows: the provisioner's for a provision and for undoing one, else the deprovisioner's. */
export function callPolicy(row: GrantRow, call: Pick<ProvisioningCall, 'phase' | 'undo'>): PolicyObject | null {
  return call.phase === 'provision' || call.undo ? row.provisionerPolicy : row.deprovisionerPolicy;
}

/** The webhook id of the `webhook` step a call makes. */
export function callWebhookId(row: GrantRow, call: Pick<ProvisioningCall, 'phase' | 'undo' | 'step'>): string {
  const step = policyStepAt(callPolicy(row, call), call.step);
  return typeof step?.settings.webhookId === 'string' ? step.settings.webhookId : '';
}

function entryOf(row: GrantRow, phase: ProvisioningEntry['phase'], step: string): ProvisioningEntry | undefined {
  return row.provisioning.find((e) => e.phase === phase && e.step === step);
}

/** `error` of a step of a multiStep names its path. */
function stepError(step: string, error: string): string {
  return step === '' ? error : `${step}: ${error}`;
}

/** What starting one policy step came to: done at once, failed at once, or a call the workflow makes. */
type Started =
  | { kind: 'done'; row: GrantRow }
  | { kind: 'failed'; row: GrantRow; error: string }
  | { kind: 'call'; row: GrantRow; call: ProvisioningCall };

async function record(tx: Queryable, row: GrantRow, next: ProvisioningEntry): Promise<GrantRow> {
  return (await store.updateGrant(tx, row.id, [row.state], { provisioning: withEntry(row.provisioning, next) }))!;
}

/** The users a manual step's task is assigned to, as the contract resolves its assignee. */
async function assigneesOf(tx: Queryable, row: GrantRow, settings: PolicyObject): Promise<string[]> {
  const strings = (value: unknown): string[] =>
    Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
  const assignee = settings.assignee as PolicyObject | null | undefined;
  if (!assignee) return strings(settings.userIds);
  const kind = policyMember(assignee);
  const of = (assignee[kind] ?? {}) as PolicyObject;
  if (kind === 'users') return strings(of.userIds);
  const fallback = strings(of.fallbackUserIds);
  if (kind === 'entitlementOwners') {
    const owners = await tasks.entitlementOwnerIds(tx, row.appId, row.appEntitlementId);
    return owners.length > 0 ? owners : fallback;
  }
  if (kind === 'group' && typeof of.appGroupId === 'string' && of.appGroupId !== '') {
    const members = await tasks.grantedUserIds(tx, of.appGroupId);
    return members.length > 0 ? members : fallback;
  }
  return fallback;
}

/** The entitlement ids of a grant's delegation chain, from the grant that started it to this one. */
async function delegationChain(tx: Queryable, row: GrantRow): Promise<string[]> {
  const chain = [row.appEntitlementId];
  let current: GrantRow | undefined = row;
  while (current && current.requestedBy.startsWith('grant:') && chain.length <= MAX_DELEGATIONS + 1) {
    current = await store.findGrant(tx, current.requestedBy.slice('grant:'.length));
    if (current) chain.unshift(current.appEntitlementId);
  }
  return chain;
}

/** A delegated provision step: the child grant of the target for the same user (made, or the live one linked). */
async function startDelegation(
  tx: Queryable,
  engine: GrantEngine,
  row: GrantRow,
  step: PolicyStep,
  pending: ProvisioningEntry,
): Promise<Started> {
  const appId = typeof step.settings.appId === 'string' ? step.settings.appId : '';
  const target = typeof step.settings.entitlementId === 'string' ? step.settings.entitlementId : '';
  const chain = await delegationChain(tx, row);
  const path = [...chain, target || '?'].join(' -> ');
  const failed = (error: string): Started => ({ kind: 'failed', row, error });
  if (chain.includes(target)) return failed(`delegation comes back to an entitlement of its chain: ${path}`);
  if (chain.length > MAX_DELEGATIONS) return failed(`delegation chain longer than ${MAX_DELEGATIONS}: ${path}`);
  if (!target || !(await findLiveEntitlement(tx, appId, target))) {
    return failed(`delegation to an unknown entitlement: ${path}`);
  }
  let child = await store.findLiveGrant(tx, row.userId, target);
  const linked = child !== undefined;
  if (!child) {
    const id = derivedId(JSON.stringify(['delegated', row.id, step.step]), Date.parse(row.createdAt));
    const made = await createGrantIn(
      tx,
      engine,
      { userId: row.userId, appId, appEntitlementId: target, justification: `delegated by grant ${row.id}` },
      `grant:${row.id}`,
      { id, durationMs: row.durationMs },
    );
    child = (await store.findGrant(tx, made.grant.id))!;
  }
  const detail = { grantId: child.id, linked, attempt: 1 };
  const outcome = delegationOutcomeOf(child, linked);
  if (outcome === null) {
    const waiting = await record(tx, row, { ...pending, detail });
    return {
      kind: 'call',
      row: waiting,
      call: { phase: 'provision', step: step.step, attempt: 1, member: 'delegated' },
    };
  }
  if (!outcome.ok) return { kind: 'failed', row: await record(tx, row, { ...pending, detail }), error: outcome.error };
  const done = entry('provision', 'delegated', 'DONE', { step: step.step, attempts: 1, detail });
  return { kind: 'done', row: await record(tx, row, done) };
}

/** How a delegated step stands by its child: null while the child is being provisioned. */
function delegationOutcomeOf(child: GrantRow | undefined, linked: boolean): CallOutcome | null {
  if (!child) return { ok: false, error: 'the delegated grant does not exist' };
  if (child.state === 'PROVISIONING') return null;
  if (child.state === 'GRANTED' || (child.state === 'DEPROVISIONING' && !linked)) return { ok: true };
  if (child.state === 'FAILED') return { ok: false, error: `delegated grant ${child.id} failed: ${child.error ?? ''}` };
  return { ok: false, error: `delegated grant ${child.id} is ${child.state}` };
}

/**
 * Starts one step of a phase: the members this service does itself end here (done or failed), a
 * webhook or a task is a call. `undo` takes back a provision step that was done (a later one failed).
 */
async function startStep(
  tx: Queryable,
  engine: GrantEngine,
  row: GrantRow,
  phase: ProvisioningEntry['phase'],
  step: PolicyStep,
  attempt: number,
  undo = false,
): Promise<Started> {
  const call: ProvisioningCall = { phase, step: step.step, attempt, ...(undo ? { undo: true } : {}) };
  const detail = { attempt, ...(undo ? { undo: true } : {}) };
  const pending = entry(phase, step.member, 'PENDING', { step: step.step, attempts: 1, detail });
  if (step.member === 'unconfigured') {
    if (undo) return { kind: 'done', row };
    return { kind: 'done', row: await record(tx, row, entry(phase, 'unconfigured', 'DONE', { step: step.step })) };
  }
  if (step.member === 'webhook') return { kind: 'call', row, call: { ...call, member: 'webhook' } };
  if (step.member === 'manual') {
    const instructions = typeof step.settings.instructions === 'string' ? step.settings.instructions : '';
    const task = await tasks.openTask(tx, {
      id: newId(),
      grantId: row.id,
      phase,
      step: step.step,
      attempt,
      instructions: undo ? `Undo (a later provisioning step failed): ${instructions}` : instructions,
      assigneeUserIds: await assigneesOf(tx, row, step.settings),
    });
    const waiting = await record(tx, row, { ...pending, detail: { ...detail, taskId: task.id } });
    return { kind: 'call', row: waiting, call: { ...call, member: 'manual' } };
  }
  if (step.member === 'delegated') {
    if (phase === 'provision' && !undo) return startDelegation(tx, engine, row, step, pending);
    if (undo) {
      const made = entryOf(row, 'provision', step.step);
      if (typeof made?.detail.grantId === 'string' && made.detail.linked !== true) {
        await revokeChild(tx, engine, row, made.detail.grantId, 'a later provisioning step failed');
      }
    }
    // A delegated deprovision step: the children this grant made are revoked after its deprovision.
    const done = entry(phase, 'delegated', 'DONE', { step: step.step, detail });
    return { kind: 'done', row: await record(tx, row, done) };
  }
  const error = (CONNECTOR_MEMBERS as readonly string[]).includes(step.member)
    ? connectorMessage(step.member)
    : `${phase === 'provision' ? 'provisioning' : 'deprovisioning'} by ${step.member} is not available in this version of the service`;
  return { kind: 'failed', row, error };
}

/** A PROVISIONING grant becomes GRANTED: its event, its parent told, its children's expiry aligned. */
async function finishProvision(tx: Queryable, engine: GrantEngine, row: GrantRow): Promise<GrantStep> {
  const granted = await store.updateGrant(tx, row.id, ['PROVISIONING'], { state: 'GRANTED', grantNow: true });
  if (!granted) return stepOf(row);
  await recordGrantEvent(tx, 'grant.granted', PROVISIONING_ACTOR, granted);
  await tellParent(tx, engine, granted, { status: 'done', message: null });
  await alignChildren(tx, engine, granted);
  return stepOf(granted);
}

/** A PROVISIONING grant whose provisioning failed (and was undone) becomes FAILED. */
async function failGrant(tx: Queryable, engine: GrantEngine, row: GrantRow, error: string): Promise<GrantStep> {
  const failed = await store.updateGrant(tx, row.id, ['PROVISIONING'], { state: 'FAILED', error });
  if (!failed) return stepOf(row);
  await audit(tx, PROVISIONING_ACTOR, 'grant.fail', failed, { error });
  await recordGrantEvent(tx, 'grant.failed', PROVISIONING_ACTOR, failed);
  await tellParent(tx, engine, failed, { status: 'failed', message: error });
  return stepOf(failed);
}

/** Wakes the parent of a delegated child that is waiting for it (the parent reads the child's state itself). */
async function tellParent(
  tx: Queryable,
  engine: GrantEngine,
  child: GrantRow,
  outcome: { status: 'done' | 'failed'; message: string | null },
): Promise<void> {
  if (!child.requestedBy.startsWith('grant:')) return;
  const parent = await store.findGrant(tx, child.requestedBy.slice('grant:'.length));
  if (!parent || parent.state !== 'PROVISIONING') return;
  const waiting = parent.provisioning.find(
    (e) => e.phase === 'provision' && e.state === 'PENDING' && e.detail.grantId === child.id,
  );
  if (!waiting) return;
  await engine.signalGrant(parent.id, {
    type: 'callback',
    phase: 'provision',
    step: waiting.step,
    attempt: Number(waiting.detail.attempt ?? 1),
    ...outcome,
  });
}

/**
 * A delegated child lives as long as its parent: each GRANTED child this grant made gets the
 * parent's expiresAt (bounded by the child's own durationGrant), told to its workflow.
 */
async function alignChildren(tx: Queryable, engine: GrantEngine, parent: GrantRow): Promise<void> {
  if (parent.expiresAt === null) return;
  for (const childId of madeChildren(parent)) {
    const child = await store.findGrant(tx, childId, { forUpdate: true });
    if (!child || child.state !== 'GRANTED') continue;
    const entitlement = await findEntitlementById(tx, child.appEntitlementId);
    const maxMs = effectiveDurationMs(undefined, entitlement ? toAppEntitlement(entitlement).durationGrant : null);
    const target =
      maxMs === null
        ? parent.expiresAt
        : new Date(Math.min(Date.parse(parent.expiresAt), Date.now() + maxMs)).toISOString();
    if (child.expiresAt === target) continue;
    const moved = await store.updateGrant(tx, child.id, ['GRANTED'], { expiresAt: target });
    if (moved) await engine.signalGrant(child.id, { type: 'extend', expiresAt: moved.expiresAt! });
  }
}

/**
 * The call of a step that is out already (PENDING), answered again to a repeat (a second workflow
 * for the grant): the same call, with its key. Only a provision step waits on a delegated child;
 * taking a step back waits on a person's task or a webhook.
 */
function repeatCall(
  phase: ProvisioningCall['phase'],
  step: Pick<PolicyStep, 'step' | 'member'>,
  attempt: number,
  undo = false,
): ProvisioningCall {
  const member =
    step.member === 'manual'
      ? 'manual'
      : step.member === 'delegated' && phase === 'provision' && !undo
        ? 'delegated'
        : 'webhook';
  return { phase, step: step.step, attempt, member, ...(undo ? { undo: true } : {}) };
}

/**
 * Runs a PROVISIONING grant's provision steps from the first not done: on to the next while each
 * ends at once; a call the workflow makes next; GRANTED after the last; a failure undoes.
 */
async function advanceProvision(tx: Queryable, engine: GrantEngine, row: GrantRow): Promise<GrantStep> {
  let current = row;
  for (const step of policySteps(current.provisionerPolicy)) {
    const seen = entryOf(current, 'provision', step.step);
    if (seen?.state === 'DONE') continue;
    if (seen?.state === 'PENDING') return stepOf(current, repeatCall('provision', step, 1));
    const started = await startStep(tx, engine, current, 'provision', step, 1);
    if (started.kind === 'call') return stepOf(started.row, started.call);
    if (started.kind === 'failed') return failProvision(tx, engine, started.row, step, started.error);
    current = started.row;
  }
  return finishProvision(tx, engine, current);
}

/** Records a provision step's failure and undoes the steps done before it (then FAILED). */
async function failProvision(
  tx: Queryable,
  engine: GrantEngine,
  row: GrantRow,
  step: Pick<PolicyStep, 'step' | 'member'>,
  error: string,
): Promise<GrantStep> {
  const seen = entryOf(row, 'provision', step.step);
  const failedEntry = entry('provision', seen?.policy ?? step.member, 'FAILED', {
    step: step.step,
    attempts: seen ? 0 : 1,
    error,
  });
  const failing = (await store.updateGrant(tx, row.id, ['PROVISIONING'], {
    error: stepError(step.step, error),
    provisioning: withEntry(row.provisioning, failedEntry),
  }))!;
  return advanceUndo(tx, engine, failing);
}

/** Takes back, last first, each provision step that was done; FAILED when none is left. */
async function advanceUndo(tx: Queryable, engine: GrantEngine, row: GrantRow): Promise<GrantStep> {
  let current = row;
  const done = policySteps(current.provisionerPolicy)
    .filter((s) => entryOf(current, 'provision', s.step)?.state === 'DONE')
    .reverse();
  for (const step of done) {
    const seen = entryOf(current, 'deprovision', step.step);
    if (seen?.state === 'DONE' || seen?.state === 'FAILED') continue;
    if (seen?.state === 'PENDING') return stepOf(current, repeatCall('deprovision', step, 1, true));
    const started = await startStep(tx, engine, current, 'deprovision', step, 1, true);
    if (started.kind === 'call') return stepOf(started.row, started.call);
    current = started.row;
  }
  return failGrant(tx, engine, current, current.error ?? 'the provisioning failed');
}

/**
 * Runs a DEPROVISIONING grant's deprovision steps (in written order) from the first not done:
 * REVOKED after the last; a failed step is recorded and the grant stays DEPROVISIONING (counted,
 * listed, retried by a revoke: the next attempt).
 */
async function advanceDeprovision(
  tx: Queryable,
  engine: GrantEngine,
  row: GrantRow,
  attempt: number,
): Promise<{ row: GrantRow; call?: ProvisioningCall }> {
  let current = row;
  for (const step of policySteps(current.deprovisionerPolicy)) {
    const seen = entryOf(current, 'deprovision', step.step);
    if (seen?.state === 'DONE') continue;
    if (seen?.state === 'PENDING' && Number(seen.detail.attempt ?? 1) === attempt)
      return { row: current, call: repeatCall('deprovision', step, attempt) };
    const started = await startStep(tx, engine, current, 'deprovision', step, attempt);
    if (started.kind === 'call') return { row: started.row, call: started.call };
    if (started.kind === 'failed') {
      const failed = entry('deprovision', step.member, 'FAILED', {
        step: step.step,
        attempts: 1,
        error: started.error,
        detail: { attempt },
      });
      return { row: await record(tx, started.row, failed) };
    }
    current = started.row;
  }
  return { row: await finishDeprovision(tx, engine, current) };
}

/**
 * Runs the provisioning of a PROVISIONING grant from where it stands (a repeat finds the call
 * under way); the members this service cannot run fail with `system:provisioning` as the actor.
 */
export async function provisionGrant(db: Db, engine: GrantEngine, id: string): Promise<GrantStep> {
  return db.transaction(async (tx) => {
    const row = await store.findGrant(tx, id, { forUpdate: true });
    if (!row || row.state !== 'PROVISIONING') return stepOf(row);
    if (row.error !== null) return advanceUndo(tx, engine, row);
    return advanceProvision(tx, engine, row);
  });
}

/**
 * Expires a GRANTED grant whose expiresAt has come (by the store's clock) and starts its
 * deprovision (the answer carries its first call, if any); else answers its state.
 */
export async function expireGrant(db: Db, engine: GrantEngine, id: string): Promise<GrantStep> {
  return db.transaction(async (tx) => {
    const row = await store.findGrant(tx, id, { forUpdate: true });
    if (!row || row.state !== 'GRANTED' || row.expiresAt === null) return stepOf(row);
    if (!(await store.hasExpired(tx, id, EXPIRY_TOLERANCE_MS))) return stepOf(row);
    const started = await beginDeprovision(tx, engine, row, EXPIRY_ACTOR, EXPIRED_REASON, 'grant.expire');
    if (started.state !== 'DEPROVISIONING') return stepOf(started);
    // The deprovision's first step in the same transaction: the workflow makes its call next.
    const next = await advanceDeprovision(tx, engine, started, 1);
    return stepOf(next.row, next.call);
  });
}

/**
 * Runs the deprovisioning of a DEPROVISIONING grant by the policy recorded when it began (attempt
 * n: a person's retry is a new attempt); what was still being provisioned stops.
 */
export async function deprovisionGrant(db: Db, engine: GrantEngine, id: string, attempt = 1): Promise<GrantStep> {
  return db.transaction(async (tx) => {
    const row = await store.findGrant(tx, id, { forUpdate: true });
    if (!row || row.state !== 'DEPROVISIONING') return stepOf(row);
    await closeCallbackTokens(tx, id, 'provision');
    await tasks.failOpenTasks(tx, id, 'provision', {
      by: row.revokedBy ?? PROVISIONING_ACTOR,
      comment: 'the grant was revoked',
    });
    const next = await advanceDeprovision(tx, engine, row, attempt);
    return stepOf(next.row, next.call);
  });
}

/** Counts a call of a webhook in the grant's entry of its phase and step (PENDING while it is out). */
export async function recordCallStarted(db: Db, id: string, call: ProvisioningCall): Promise<GrantRow | undefined> {
  return db.transaction(async (tx) => {
    const row = await store.findGrant(tx, id, { forUpdate: true });
    if (!row) return undefined;
    const pending = entry(call.phase, 'webhook', 'PENDING', {
      step: call.step,
      attempts: 1,
      detail: { attempt: call.attempt, ...(call.undo ? { undo: true } : {}) },
    });
    return store.updateGrant(tx, id, [row.state], { provisioning: withEntry(row.provisioning, pending) });
  });
}

/** How a delegated step's child stands now (null: still being provisioned). */
export async function delegationOutcome(db: Db, id: string, call: ProvisioningCall): Promise<CallOutcome | null> {
  const row = await store.findGrant(db, id);
  if (!row) return { ok: false, error: 'the grant no longer exists' };
  const seen = entryOf(row, call.phase, call.step);
  if (!seen || seen.state !== 'PENDING')
    return seen?.state === 'DONE' ? { ok: true } : { ok: false, error: seen?.error ?? 'stopped' };
  const childId = seen.detail.grantId;
  return delegationOutcomeOf(
    typeof childId === 'string' ? await store.findGrant(db, childId) : undefined,
    seen.detail.linked === true,
  );
}

/**
 * Records how a call ended (a webhook's answer or callback, a task closed, a child granted) and
 * moves the grant on: the next step, GRANTED, an undo then FAILED; a deprovision's next step or
 * REVOKED, or, failed, DEPROVISIONING with the error in its entry. A grant revoked meanwhile only
 * gets the entry.
 */
export async function finishProvisioningCall(
  db: Db,
  engine: GrantEngine,
  id: string,
  call: ProvisioningCall,
  outcome: CallOutcome,
): Promise<GrantStep> {
  return db.transaction(async (tx) => {
    const row = await store.findGrant(tx, id, { forUpdate: true });
    if (!row) return stepOf(row);
    const seen = entryOf(row, call.phase, call.step);
    if (seen && seen.state !== 'PENDING' && Number(seen.detail.attempt ?? 1) === call.attempt) {
      // Recorded already (a repeat of this activity): where the grant stands.
      return row.state === 'PROVISIONING' || row.state === 'DEPROVISIONING' ? resume(tx, engine, row) : stepOf(row);
    }
    const done = entry(call.phase, call.member ?? 'webhook', outcome.ok ? 'DONE' : 'FAILED', {
      step: call.step,
      error: outcome.ok ? null : outcome.error,
      detail: { attempt: call.attempt, ...(call.undo ? { undo: true } : {}) },
    });
    const recorded = (await store.updateGrant(tx, id, [row.state], {
      provisioning: withEntry(row.provisioning, done),
    }))!;
    if (call.undo) return recorded.state === 'PROVISIONING' ? advanceUndo(tx, engine, recorded) : stepOf(recorded);
    if (call.phase === 'provision') {
      if (recorded.state !== 'PROVISIONING') return stepOf(recorded);
      if (outcome.ok) return advanceProvision(tx, engine, recorded);
      return failProvision(tx, engine, recorded, { step: call.step, member: done.policy }, outcome.error);
    }
    if (recorded.state !== 'DEPROVISIONING' || !outcome.ok) return stepOf(recorded);
    const next = await advanceDeprovision(tx, engine, recorded, call.attempt);
    return stepOf(next.row, next.call);
  });
}

/** Where a grant under way stands after a repeated record: its next call, if any. */
async function resume(tx: Queryable, engine: GrantEngine, row: GrantRow): Promise<GrantStep> {
  if (row.state === 'PROVISIONING')
    return row.error !== null ? advanceUndo(tx, engine, row) : advanceProvision(tx, engine, row);
  const attempt = Math.max(
    1,
    ...row.provisioning.filter((e) => e.phase === 'deprovision').map((e) => Number(e.detail.attempt ?? 1)),
  );
  const last = row.provisioning.filter((e) => e.phase === 'deprovision');
  if (last.some((e) => e.state === 'FAILED')) return stepOf(row);
  const next = await advanceDeprovision(tx, engine, row, attempt);
  return stepOf(next.row, next.call);
}
