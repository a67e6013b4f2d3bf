/**
 * `createEntitlementOwner` and `deleteEntitlementOwner`: four CEL fields give the ids; the effect
 * is an idempotent activity of its own (activities/owners.ts) with the step's retry policy. It
 * writes only the service's own store, so its first attempt runs as a local activity
 * (`firstAttemptLocal`); the rest, if it fails, as a regular activity.
 */
import { z } from 'zod';
import { celSchema, defineEffect, defineStep, describeValue, type Effect, type OwnershipRef, type StepEffects } from './kind';
import { StepError } from '../errors';

const FIELDS = ['userId', 'roleSlug', 'appId', 'entitlementId'] as const;

const schema = z
  .object({ userId: celSchema(), roleSlug: celSchema(), appId: celSchema(), entitlementId: celSchema() })
  .meta({ id: 'OwnershipStepFields', description: 'Every field is a CEL expression.' });

export const createEntitlementOwnerEffect = defineEffect<OwnershipRef>()('createEntitlementOwner', { firstAttemptLocal: true });
export const deleteEntitlementOwnerEffect = defineEffect<OwnershipRef>()('deleteEntitlementOwner', { firstAttemptLocal: true });

/** Evaluates the four ids (each must be a non-empty string), then performs `effect` with them. */
async function perform(effect: Effect<string, OwnershipRef>, body: z.output<typeof schema>, effects: StepEffects): Promise<Record<string, unknown>> {
  const values = await effects.evaluate({ ...body }, `evaluate ${effect.name}`);
  const ref: Record<string, string> = {};
  for (const name of FIELDS) {
    const value = values[name];
    if (typeof value !== 'string' || value === '') throw new StepError(`${effect.name}.${name}: must evaluate to a non-empty string, got ${describeValue(value)}`);
    ref[name] = value;
  }
  return effects.perform(effect, ref as unknown as OwnershipRef);
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
