/**
 * `createEntitlementOwner` and `deleteEntitlementOwner`: four CEL fields give the ids; the effect
 * is an idempotent activity of its own (activities/owners.ts) with the step's retry policy. It
 * writes only the service's own store, so its first attempt runs as a local activity
 * (`firstAttemptLocal`); the rest, if it fails, as a regular activity. The activity evaluates the
 * four fields itself (`fromValues`, `evaluateAndPerform`): the step is one activity.
 */
import { z } from 'zod';
import {
  celSchema,
  defineEffect,
  defineStep,
  describeValue,
  type Effect,
  type EffectExpressions,
  type OwnershipRef,
  type StepEffects,
} from './kind';
import { StepError } from '../errors';

const FIELDS = ['userId', 'roleSlug', 'appId', 'entitlementId'] as const;

const schema = z
  .object({ userId: celSchema(), roleSlug: celSchema(), appId: celSchema(), entitlementId: celSchema() })
  .meta({ id: 'OwnershipStepFields', description: 'Every field is a CEL expression.' });

/** The ids from the four evaluated fields of `effect`'s step; each must be a non-empty string. */
function ownershipRef(effect: string): (values: Record<string, unknown>) => OwnershipRef {
  return (values) => {
    const ref: Record<string, string> = {};
    for (const name of FIELDS) {
      const value = values[name];
      if (typeof value !== 'string' || value === '')
        throw new StepError(`${effect}.${name}: must evaluate to a non-empty string, got ${describeValue(value)}`);
      ref[name] = value;
    }
    return ref as unknown as OwnershipRef;
  };
}

/** The ids, or (under EVALUATE_IN_EFFECT_PATCH, when the activity evaluates them itself) the fields' expressions and their context. */
type OwnershipEffectInput = OwnershipRef | EffectExpressions;

export const createEntitlementOwnerEffect = defineEffect<OwnershipEffectInput>()('createEntitlementOwner', {
  firstAttemptLocal: true,
  fromValues: ownershipRef('createEntitlementOwner'),
});
export const deleteEntitlementOwnerEffect = defineEffect<OwnershipEffectInput>()('deleteEntitlementOwner', {
  firstAttemptLocal: true,
  fromValues: ownershipRef('deleteEntitlementOwner'),
});

/** Evaluates the four ids (each must be a non-empty string), then performs `effect` with them. */
function perform(
  effect: Effect<string, OwnershipEffectInput>,
  body: z.output<typeof schema>,
  effects: StepEffects,
): Promise<Record<string, unknown>> {
  return effects.evaluateAndPerform(effect, { ...body }, `evaluate ${effect.name}`);
}

export const createEntitlementOwner = defineStep({
  kind: 'createEntitlementOwner',
  retryable: true,
  schema,
  effect: createEntitlementOwnerEffect,
  run: (body, effects) => perform(createEntitlementOwnerEffect, body, effects),
});

export const deleteEntitlementOwner = defineStep({
  kind: 'deleteEntitlementOwner',
  retryable: true,
  schema,
  effect: deleteEntitlementOwnerEffect,
  run: (body, effects) => perform(deleteEntitlementOwnerEffect, body, effects),
});
