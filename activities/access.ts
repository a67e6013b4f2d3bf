/**
 * The activities of the steps that change access: `grantEntitlements` and `revokeEntitlements`
 * (src/steps/grant-entitlements.ts, src/steps/revoke-entitlements.ts). Each first call evaluates
 * its step's fields (the step is one activity) and acts through src/domain/grants.ts, as a request
 * to the grants API would, with the run as the actor; each later call (`check`) reads the grants'
 * states again while the step waits.
 *
 * Idempotent across retries and worker crashes: a grant made by a step has an id derived from the
 * run (the run whose call keys the step carries: a retry from the failed step continues the
 * original run), the step and the entitlement — a repeat finds it instead of making a second; a
 * repeated revoke finds the grants it revoked (revokedBy is the run). An unknown user fails the step
 * without retry; an unknown or deleted entitlement is that entitlement's FAILED outcome, and the
 * others are still granted.
 */
import { ApplicationFailure } from '@temporalio/common';
import type { Db } from '../src/store/db';
import * as store from '../src/store/grants';
import { findUser } from '../src/store/users';
import { createGrant, revokeGrant, type GrantView } from '../src/domain/grants';
import type { RunEngine } from '../src/domain/engine';
import { STEP_VALUE_INVALID } from '../src/contract/run';
import { InvalidArgumentError, NotFoundError, FailedPreconditionError } from '../src/errors';
import { derivedId, uuidV7Time } from '../src/ids';
import type { CallKeyScope, EffectContext, EffectExpressions } from '../src/steps';
import {
  grantEntitlementsEffect,
  type EntitlementRef,
  type GrantCheck,
  type GrantEntitlementsRequest,
  type StepGrant,
} from '../src/steps/grant-entitlements';
import {
  revokeEntitlementsEffect,
  type RevokeCheck,
  type RevokedGrant,
  type RevokeEntitlementsRequest,
} from '../src/steps/revoke-entitlements';
import { activityRun } from './call-webhook';
import { evaluatedEffectInput } from './steps';

type Input<T> = T & Partial<EffectContext>;

/** The grants of a revoke-all: every live grant of the user (of one app) that is not a delegated child. */
const MAX_REVOKE_ALL = 1000;

/**
 * The id of the grant that `stepId` of the run `scope` makes of `ref`: a UUIDv7 at the run's start
 * (its run id's time) whose other bits hash the run, the step and the entitlement.
 */
export function stepGrantId(scope: CallKeyScope, stepId: string, ref: EntitlementRef): string {
  const seed = JSON.stringify([
    'grantEntitlements',
    scope.workflowId,
    scope.runId,
    stepId,
    ref.appId,
    ref.entitlementId,
  ]);
  return derivedId(seed, uuidV7Time(scope.runId) ?? 0);
}

function unknownUser(kind: string, userId: string): ApplicationFailure {
  return ApplicationFailure.create({
    type: STEP_VALUE_INVALID,
    message: `${kind}.userId: user ${userId} not found`,
    nonRetryable: true,
  });
}

function outcome(ref: EntitlementRef, grant: GrantView, created: boolean): StepGrant {
  return {
    ...ref,
    grantId: grant.id,
    state: grant.state,
    expiresAt: grant.expiresAt,
    created,
    ...(grant.error ? { error: grant.error } : {}),
  };
}

export function createAccessActivities(deps: { db: Db; engine: RunEngine }) {
  const { db, engine } = deps;

  async function grant(input: Input<GrantEntitlementsRequest>, scope: CallKeyScope): Promise<StepGrant[]> {
    const actor = input.actor ?? 'system';
    if (!(await findUser(db, input.userId))) throw unknownUser('grantEntitlements', input.userId);
    const grants: StepGrant[] = [];
    for (const ref of input.entitlements) {
      const id = stepGrantId(scope, input.stepId ?? '', ref);
      const body = {
        userId: input.userId,
        appId: ref.appId,
        appEntitlementId: ref.entitlementId,
        ...(input.duration ? { duration: input.duration } : {}),
        ...(input.justification ? { justification: input.justification } : {}),
      };
      try {
        const made = await createGrant(db, engine, body, actor, { id });
        grants.push(outcome(ref, made.grant, made.created));
      } catch (err) {
        if (!(err instanceof NotFoundError || err instanceof InvalidArgumentError)) throw err;
        const error = err instanceof NotFoundError ? `${err.resource} ${err.id ?? ''} not found`.trim() : err.message;
        grants.push({ ...ref, grantId: null, state: 'FAILED', expiresAt: null, created: false, error });
      }
    }
    return grants;
  }

  async function recheck<T extends { grantId: string | null; state: string }>(entries: T[]): Promise<T[]> {
    return Promise.all(
      entries.map(async (entry) => {
        if (!entry.grantId) return entry;
        const row = await store.findGrant(db, entry.grantId);
        if (!row) return entry;
        const again = { ...entry, state: row.state } as T & { expiresAt?: string | null; error?: string };
        if ('expiresAt' in entry) again.expiresAt = row.expiresAt;
        if (row.error) again.error = row.error;
        else delete again.error;
        return again;
      }),
    );
  }

  async function revoke(
    input: Input<RevokeEntitlementsRequest>,
  ): Promise<{ revoked: RevokedGrant[]; notGranted: EntitlementRef[] }> {
    const actor = input.actor ?? 'system';
    if (!(await findUser(db, input.userId))) throw unknownUser('revokeEntitlements', input.userId);
    const revoked: RevokedGrant[] = [];
    const notGranted: EntitlementRef[] = [];
    const take = async (row: store.GrantRow): Promise<void> => {
      let state: string = row.state;
      if (row.state === 'PROVISIONING' || row.state === 'GRANTED') {
        try {
          state = (await revokeGrant(db, engine, row.id, input.reason, actor)).state;
        } catch (err) {
          // Failed between our read and the revoke: it holds no access.
          if (!(err instanceof FailedPreconditionError)) throw err;
          return;
        }
      }
      revoked.push({ grantId: row.id, appId: row.appId, entitlementId: row.appEntitlementId, state });
    };
    // What an earlier attempt of this run already revoked (a repeat after a lost answer finds it).
    const before = await store.listGrants(
      db,
      { userId: input.userId, revokedBy: actor, ...(input.appId ? { appId: input.appId } : {}) },
      undefined,
      MAX_REVOKE_ALL,
    );
    if (input.entitlements) {
      for (const ref of input.entitlements) {
        const live = await store.findLiveGrant(db, input.userId, ref.entitlementId);
        if (live && live.appId === ref.appId) {
          await take(live);
          continue;
        }
        const earlier = before.find((g) => g.appEntitlementId === ref.entitlementId && g.appId === ref.appId);
        if (earlier) await take(earlier);
        else notGranted.push(ref);
      }
    } else {
      const live = await store.listGrants(
        db,
        {
          userId: input.userId,
          states: ['PROVISIONING', 'GRANTED', 'DEPROVISIONING'],
          ...(input.appId ? { appId: input.appId } : {}),
        },
        undefined,
        MAX_REVOKE_ALL,
      );
      const seen = new Set<string>();
      for (const row of [...live, ...before]) {
        if (seen.has(row.id) || row.requestedBy.startsWith('grant:')) continue;
        seen.add(row.id);
        await take(row);
      }
    }
    return { revoked, notGranted };
  }

  return {
    async grantEntitlements(
      input: Input<GrantEntitlementsRequest | EffectExpressions | GrantCheck>,
    ): Promise<{ grants: StepGrant[] }> {
      if ('check' in input) return { grants: await recheck(input.check) };
      const request =
        'expressions' in input
          ? (evaluatedEffectInput(grantEntitlementsEffect, input) as GrantEntitlementsRequest)
          : input;
      return { grants: await grant({ ...request, ...contextOf(input) }, input.keysOf ?? activityRun()) };
    },

    async revokeEntitlements(
      input: Input<RevokeEntitlementsRequest | EffectExpressions | RevokeCheck>,
    ): Promise<{ revoked: RevokedGrant[]; notGranted: EntitlementRef[] }> {
      if ('check' in input) return { revoked: await recheck(input.check), notGranted: input.notGranted };
      const request =
        'expressions' in input
          ? (evaluatedEffectInput(revokeEntitlementsEffect, input) as RevokeEntitlementsRequest)
          : input;
      return revoke({ ...request, ...contextOf(input) });
    },
  };
}

function contextOf(input: Partial<EffectContext>): Partial<EffectContext> {
  return {
    ...(input.stepId !== undefined ? { stepId: input.stepId } : {}),
    ...(input.actor !== undefined ? { actor: input.actor } : {}),
  };
}
