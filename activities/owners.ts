/**
 * Entitlement-ownership activities. Each evaluates its step's four fields (under EVALUATE_IN_EFFECT_PATCH;
 * runs started without it send the ids) and makes or removes the ownership: the step is one activity. Both are
 * idempotent, so a retry after a lost response is harmless: creating an existing ownership returns
 * the original record, deleting an absent one succeeds. A missing user, app or entitlement, or a
 * user that is not a service account, will not fix itself, so those fail without retry; anything
 * else (database down, ...) is retried.
 */
import { ApplicationFailure } from '@temporalio/common';
import type { Db } from '../src/store/db';
import * as owners from '../src/domain/owners';
import type { CreatedOwnership, OwnershipInput, OwnershipRef } from '../src/contract/activities';
import { InvalidArgumentError, NotFoundError } from '../src/errors';
import type { Effect, EffectExpressions } from '../src/steps';
import { createEntitlementOwnerEffect, deleteEntitlementOwnerEffect } from '../src/steps/owners';
import { evaluatedEffectInput } from './steps';

/** Failure types of ownership activities (non-retryable). */
export const OWNERSHIP_NOT_FOUND = 'OwnershipNotFound';
export const OWNERSHIP_INVALID = 'OwnershipInvalid';

export function createOwnershipActivities(deps: { db: Db }) {
  return {
    /** Records `userId` as owner of the entitlement under `roleSlug`; returns the record. */
    async createEntitlementOwner(input: OwnershipInput | OwnershipExpressions): Promise<CreatedOwnership> {
      const ref = refOf(createEntitlementOwnerEffect, input);
      try {
        const { userOwnerEntitlement } = await owners.createEntitlementOwner(deps.db, pick(ref), ref.actor ?? 'system');
        return { ...pick(ref), createdAt: userOwnerEntitlement.createdAt };
      } catch (err) {
        throw toFailure(err, 'createEntitlementOwner', ref);
      }
    },

    /** Removes the ownership; `deleted` is false when it did not exist (still a success). */
    async deleteEntitlementOwner(input: OwnershipInput | OwnershipExpressions): Promise<{ deleted: boolean }> {
      const ref = refOf(deleteEntitlementOwnerEffect, input);
      try {
        return { deleted: await owners.deleteEntitlementOwner(deps.db, pick(ref), ref.actor ?? 'system') };
      } catch (err) {
        throw toFailure(err, 'deleteEntitlementOwner', ref);
      }
    },
  };
}

/** What the workflow sends under EVALUATE_IN_EFFECT_PATCH: the step's four fields, evaluated here (the step is one activity). */
type OwnershipExpressions = EffectExpressions & Pick<OwnershipInput, 'stepId' | 'actor'>;

/** The ownership's ids and who acts: as sent, or evaluated from the step's fields (evaluatedEffectInput). */
function refOf(effect: Effect<string, object>, input: OwnershipInput | OwnershipExpressions): OwnershipInput {
  if (!('expressions' in input)) return input;
  const ref = pick(evaluatedEffectInput(effect, input) as OwnershipRef);
  return { stepId: input.stepId, actor: input.actor, ...ref };
}

function pick(ref: OwnershipRef): OwnershipRef {
  return { userId: ref.userId, roleSlug: ref.roleSlug, appId: ref.appId, entitlementId: ref.entitlementId };
}

/** Not found and invalid argument are permanent; everything else (the store unavailable, ...) is left to the retry policy. */
function toFailure(err: unknown, operation: string, ref: OwnershipRef): unknown {
  if (err instanceof NotFoundError || err instanceof InvalidArgumentError) {
    const notFound = err instanceof NotFoundError;
    return ApplicationFailure.create({
      type: notFound ? OWNERSHIP_NOT_FOUND : OWNERSHIP_INVALID,
      message: `${operation}: ${describeFailure(err, ref)}`,
      nonRetryable: true,
      details: [{ reason: notFound ? 'not_found' : 'invalid_argument', ...pick(ref) }],
    });
  }
  return err;
}

/** `user "svc-9" not found` rather than the domain's bare `user not found`. */
function describeFailure(err: NotFoundError | InvalidArgumentError, ref: OwnershipRef): string {
  if (err instanceof NotFoundError && err.id !== undefined)
    return `${err.resource} ${JSON.stringify(err.id)} not found`;
  const target = `user ${JSON.stringify(ref.userId)}, role ${JSON.stringify(ref.roleSlug)}, app ${JSON.stringify(ref.appId)}, entitlement ${JSON.stringify(ref.entitlementId)}`;
  return `${err.message} (${target})`;
}
