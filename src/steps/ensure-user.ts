/**
 * `ensureUser`: the user with an email (case-insensitive; the oldest if several), made when absent,
 * so that the steps after it can grant that user access → output `{"userId", "created"}`. `email`
 * and `displayName` are CEL; `type` is a literal (default `USER_TYPE_HUMAN`). The effect is an
 * idempotent activity of its own (activities/users.ts) that evaluates the fields itself: one user
 * per lower-cased email even when two runs ask at once or an attempt is retried after a crash. It
 * writes only the service's own store, so its first attempt runs as a local activity.
 */
import { z } from 'zod';
import { celSchema, defineEffect, defineStep, describeValue, type EffectExpressions } from './kind';
import { StepError } from '../errors';

export const ENSURE_USER_TYPES = ['USER_TYPE_HUMAN', 'USER_TYPE_SERVICE'] as const;

const schema = z
  .object({
    email: celSchema().meta({ description: 'CEL giving the email address (compared case-insensitively).' }),
    displayName: celSchema()
      .nullish()
      .meta({ description: 'CEL giving the display name of a user made by the step (default: the email).' }),
    type: z
      .enum(ENSURE_USER_TYPES, { error: `must be one of ${ENSURE_USER_TYPES.join(', ')}` })
      .nullish()
      .meta({ description: 'The type of a user made by the step. Default USER_TYPE_HUMAN.' }),
  })
  .meta({ id: 'EnsureUserStep', description: 'Finds or makes the user with an email.' });

/** What the activity makes or finds, from the evaluated fields. */
export interface EnsureUserRequest {
  email: string;
  displayName: string;
  type: (typeof ENSURE_USER_TYPES)[number];
}

const EMAIL = /^[^\s@]+@[^\s@]+$/;

function request(values: Record<string, unknown>): EnsureUserRequest {
  const { email, displayName, type } = values;
  if (typeof email !== 'string' || !EMAIL.test(email))
    throw new StepError(`ensureUser.email: must evaluate to an email address, got ${describeValue(email)}`);
  if (displayName !== undefined && (typeof displayName !== 'string' || displayName.trim() === ''))
    throw new StepError(
      `ensureUser.displayName: must evaluate to a non-empty string, got ${describeValue(displayName)}`,
    );
  return {
    email,
    displayName: (displayName as string | undefined) ?? email,
    type: (type as EnsureUserRequest['type'] | undefined) ?? 'USER_TYPE_HUMAN',
  };
}

export const ensureUserEffect = defineEffect<EnsureUserRequest | EffectExpressions>()('ensureUser', {
  firstAttemptLocal: true,
  fromValues: request,
});

export const ensureUser = defineStep({
  kind: 'ensureUser',
  retryable: true,
  schema,
  effect: ensureUserEffect,
  run: (body, effects) => {
    const expressions: Record<string, string> = { email: body.email };
    if (body.displayName) expressions.displayName = body.displayName;
    // A literal, checked by the schema against the two names: safe to quote as a CEL string.
    if (body.type) expressions.type = `'${body.type}'`;
    return effects.evaluateAndPerform(ensureUserEffect, expressions, 'evaluate ensureUser');
  },
});
