/**
 * `rateLimit`: at most `limit` runs start per `period` and key value; over it the delivery answers
 * 429 with Retry-After and records nothing. One statement per delivery (GCRA in
 * src/store/flow-control.ts, exact across API processes); a delivery that then turns out to be a
 * repeat, or is refused by a later option, gives its share back. A key that cannot be evaluated
 * counts under the automation-wide key ('').
 */
import { z } from 'zod';
import { returnRateLimit, takeRateLimit } from '../store/flow-control';
import { isObject } from '../json';
import {
  type KeyView,
  defineFlowOption,
  expressionSchema,
  keyHash,
  keyValue,
  keyView,
  keyViewSchema,
  knownFields,
  START,
  validExpression,
  validInteger,
} from './option';

export const RATE_LIMITS = [1, 10_000] as const;
export const RATE_PERIOD_SECONDS = [1, 86_400] as const;

export const RateLimitSettings = z
  .strictObject({
    limit: z.number().int().min(RATE_LIMITS[0]).max(RATE_LIMITS[1]),
    period: z
      .string()
      .regex(/^\d{1,6}s$/)
      .meta({ description: 'Whole seconds, "1s" to "86400s".' }),
    key: expressionSchema()
      .nullish()
      .meta({ description: 'The key deliveries are counted by; absent: one key for the whole automation.' }),
  })
  .meta({
    id: 'RateLimitSettings',
    description:
      'At most `limit` runs start per `period` and key value; over it the delivery answers 429 with Retry-After.',
  });

export interface RateLimitSettings {
  /** Runs per `period`, 1..10,000. */
  limit: number;
  /** Whole seconds, "1s".."86400s". */
  period: string;
  key: string | null;
}

/** The period of a rate limit in milliseconds. */
export function periodMs(settings: RateLimitSettings): number {
  return Number(settings.period.slice(0, -1)) * 1000;
}

function validPeriod(value: unknown, field: string, violations: { field: string; description: string }[]): string {
  const match = typeof value === 'string' ? /^(\d{1,6})s$/.exec(value) : null;
  const seconds = match ? Number(match[1]) : NaN;
  if (!(seconds >= RATE_PERIOD_SECONDS[0] && seconds <= RATE_PERIOD_SECONDS[1])) {
    violations.push({
      field,
      description: `must be whole seconds from "${RATE_PERIOD_SECONDS[0]}s" to "${RATE_PERIOD_SECONDS[1]}s", e.g. "60s"`,
    });
    return '1s';
  }
  return `${seconds}s`;
}

export const rateLimit = defineFlowOption<'rateLimit', RateLimitSettings, KeyView>({
  name: 'rateLimit',
  scope: 'version',
  schema: RateLimitSettings as unknown as z.ZodType<RateLimitSettings>,
  validate(value, field, violations) {
    if (value === undefined || value === null) return null;
    if (!isObject(value)) {
      violations.push({ field, description: 'must be an object' });
      return null;
    }
    knownFields(value, ['limit', 'period', 'key'], field, violations);
    return {
      limit: validInteger(value.limit, RATE_LIMITS, `${field}.limit`, violations),
      period: validPeriod(value.period, `${field}.period`, violations),
      key: validExpression(value.key, `${field}.key`, violations),
    };
  },
  stored: (value) => (isObject(value) ? (value as unknown as RateLimitSettings) : null),
  async decide(settings, delivery) {
    if (settings === null) return START;
    const key = keyValue(settings.key, delivery.payload);
    const hash = keyHash(key.ok ? key.value : '');
    const { db, automationId } = delivery;
    const decision = await takeRateLimit(db, automationId, hash, settings.limit, periodMs(settings));
    if (!decision.allowed) {
      const retryAfterSeconds = Math.max(1, Math.ceil(decision.retryAfterMs / 1000));
      return {
        verdict: 'refused',
        reason: 'rate_limited',
        message: `the automation's rate limit is exhausted for this event's key; retry after ${retryAfterSeconds} s with the same Webhook-Event-Id`,
        retryAfterSeconds,
      };
    }
    return {
      verdict: 'start',
      release: () => returnRateLimit(db, automationId, hash, settings.limit, periodMs(settings)),
    };
  },
  dryRun: {
    schema: keyViewSchema('The rate-limit key value the delivery would count under; null without a limit.'),
    view: keyView,
  },
});
