/**
 * `createEntitlementOwner` and `deleteEntitlementOwner`: four CEL fields give the ids; the effect
 * is an idempotent activity of its own with the step's retry policy.
 */
import { z } from 'zod';
import { celSchema, defineStep, describeValue, type OwnershipRef, type StepCheck, type StepEffects } from './kind';
import { StepError } from '../errors';

const FIELDS = ['userId', 'roleSlug', 'appId', 'entitlementId'] as const;

const schema = z
  .object({ userId: celSchema(), roleSlug: celSchema(), appId: celSchema(), entitlementId: celSchema() })
  .meta({ id: 'OwnershipStepFields', description: 'Every field is a CEL expression.' });

function validate(body: Record<string, unknown>, check: StepCheck): z.output<typeof schema> {
  const result: Record<string, string> = {};
  for (const name of FIELDS) result[name] = check.cel(body[name], `${check.at}.${name}`);
  return result as z.output<typeof schema>;
}

/** Evaluates the four ids; each must be a non-empty string. */
async function evaluateRef(kind: string, body: z.output<typeof schema>, effects: StepEffects): Promise<OwnershipRef> {
  const values = await effects.evaluate({ ...body }, `evaluate ${kind}`);
  const ref: Record<string, string> = {};
  for (const name of FIELDS) {
    const value = values[name];
    if (typeof value !== 'string' || value === '') throw new StepError(`${kind}.${name}: must evaluate to a non-empty string, got ${describeValue(value)}`);
    ref[name] = value;
  }
  return ref as unknown as OwnershipRef;
}

export const createEntitlementOwner = defineStep({
  kind: 'createEntitlementOwner',
  retryable: true,
  schema,
  validate,
  async run(body, effects) {
    return effects.createEntitlementOwner(await evaluateRef('createEntitlementOwner', body, effects));
  },
});

export const deleteEntitlementOwner = defineStep({
  kind: 'deleteEntitlementOwner',
  retryable: true,
  schema,
  validate,
  async run(body, effects) {
    return effects.deleteEntitlementOwner(await evaluateRef('deleteEntitlementOwner', body, effects));
  },
});
