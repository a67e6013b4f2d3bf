/**
 * The `ensureUser` step's activity: evaluates the step's fields (the step is one activity) and finds
 * or makes the user of that email (src/domain/users.ts, one user per lower-cased email under
 * concurrent runs). Idempotent: a retry after a lost answer finds the user the first attempt made.
 * A value that will not do (not an email, an invalid name) fails without retry; anything else (the
 * store unavailable, ...) is left to the step's retry policy.
 */
import { ApplicationFailure } from '@temporalio/common';
import type { Db } from '../src/store/db';
import { ensureUser as ensureUserIn } from '../src/domain/users';
import { STEP_VALUE_INVALID } from '../src/contract/run';
import { InvalidArgumentError } from '../src/errors';
import type { EffectExpressions } from '../src/steps';
import { ensureUserEffect, type EnsureUserRequest } from '../src/steps/ensure-user';
import { evaluatedEffectInput } from './steps';

type EnsureUserInput = (EnsureUserRequest | EffectExpressions) & { stepId?: string; actor?: string };

export function createUserActivities(deps: { db: Db }) {
  return {
    async ensureUser(input: EnsureUserInput): Promise<{ userId: string; created: boolean }> {
      const wanted = requestOf(input);
      try {
        const { user, created } = await ensureUserIn(deps.db, wanted, input.actor ?? 'system');
        return { userId: user.id, created };
      } catch (err) {
        if (err instanceof InvalidArgumentError)
          throw ApplicationFailure.create({
            type: STEP_VALUE_INVALID,
            message: `ensureUser: ${err.message}`,
            nonRetryable: true,
          });
        throw err;
      }
    },
  };
}

/** The request as sent, or evaluated from the step's fields (a bad value fails without retry). */
function requestOf(input: EnsureUserInput): EnsureUserRequest {
  if (!('expressions' in input)) return { email: input.email, displayName: input.displayName, type: input.type };
  return evaluatedEffectInput(ensureUserEffect, input) as EnsureUserRequest;
}
