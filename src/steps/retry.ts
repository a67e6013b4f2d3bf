/**
 * The `retry` policy of a step whose effect runs in an activity: its schema is its validator on
 * save (./validate.ts), its type and its OpenAPI component. Deterministic code only.
 */
import { z } from 'zod';
import { parseDuration } from '../duration';
import { durationWithin, integerFrom } from './kind';

/** Retry policy of effectful steps when the step does not set one. */
export const RETRY_DEFAULTS = {
  maximumAttempts: 10,
  initialInterval: '1s',
  maximumInterval: '30s',
  backoffCoefficient: 2,
} as const;
/** Bounds of a step `retry` policy, checked when the automation is saved. */
export const RETRY_LIMITS = {
  maximumAttempts: [1, 20],
  backoffCoefficient: [1, 10],
  maxIntervalSeconds: 3600,
} as const;

const [minAttempts, maxAttempts] = RETRY_LIMITS.maximumAttempts;
const [minCoefficient, maxCoefficient] = RETRY_LIMITS.backoffCoefficient;
const coefficientError = `must be a number from ${minCoefficient} to ${maxCoefficient}`;
const interval = () => durationWithin(RETRY_LIMITS.maxIntervalSeconds, '"1s" or "0.5s"').nullish();

/** `{maximumAttempts 1..20, initialInterval, maximumInterval (durations, ≤ 1 h, maximum not below initial), backoffCoefficient 1..10}`, all optional. */
export const retrySchema = z
  .strictObject({
    maximumAttempts: integerFrom(minAttempts, maxAttempts).nullish(),
    initialInterval: interval(),
    maximumInterval: interval(),
    backoffCoefficient: z
      .number({ error: coefficientError })
      .min(minCoefficient, { error: coefficientError })
      .max(maxCoefficient, { error: coefficientError })
      .nullish(),
  })
  .superRefine((retry, ctx) => {
    const initial = retry.initialInterval ?? RETRY_DEFAULTS.initialInterval;
    const initialMs = parseDuration(initial);
    const maximumMs = retry.maximumInterval ? parseDuration(retry.maximumInterval) : undefined;
    if (maximumMs !== undefined && initialMs !== undefined && maximumMs < initialMs) {
      ctx.addIssue({
        code: 'custom',
        path: ['maximumInterval'],
        message: `must not be shorter than initialInterval (${initial})`,
      });
    }
  })
  .meta({
    id: 'StepRetryPolicy',
    description: `Retry policy of an effectful step; intervals at most ${RETRY_LIMITS.maxIntervalSeconds}s.`,
  });
