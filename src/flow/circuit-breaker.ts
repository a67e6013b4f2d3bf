/**
 * `circuitBreaker`: past `maxRuns` runs started in the last `period`, new runs are PAUSED until a
 * person resumes or cancels them (src/domain/circuit-breaker.ts). A live option: a setting of the
 * automation itself (PUT .../circuit-breaker), read from the current record at delivery, never
 * part of the draft or a version. Decided last, so that only runs about to start are counted
 * (filtered events and 429s are not): one statement per delivery (`breaker_take`, migration 21,
 * src/store/circuit-breaker.ts), keyed by the run's id, so a repeat of the same start counts
 * nothing and gets the same answer; automations without a breaker cost no statement.
 */
import { z } from 'zod';
import { runWorkflowId } from '../contract/run';
import { giveBackBreaker, takeBreaker } from '../store/circuit-breaker';
import { isObject } from '../json';
import { defineFlowOption, knownFields, START, validInteger } from './option';

export const BREAKER_MAX_RUNS = [1, 1_000_000] as const;
export const BREAKER_PERIOD_SECONDS = [60, 2_592_000] as const;
/** A resume's or cancel's reason, in characters. */
export const BREAKER_MAX_REASON = 500;

export interface CircuitBreakerSettings {
  /** Runs per `period`, 1..1,000,000; the run past it trips the breaker. */
  maxRuns: number;
  /** Whole seconds, "60s".."2592000s". */
  period: string;
}

/** Whole seconds of a period ("3600s"), or undefined when it is not one within the bounds. */
export function breakerPeriodSeconds(period: string): number | undefined {
  const match = /^(\d{1,7})s$/.exec(period);
  const seconds = match ? Number(match[1]) : NaN;
  return seconds >= BREAKER_PERIOD_SECONDS[0] && seconds <= BREAKER_PERIOD_SECONDS[1] ? seconds : undefined;
}

/** The window of a breaker in milliseconds. */
export function breakerPeriodMs(settings: CircuitBreakerSettings): number {
  return (breakerPeriodSeconds(settings.period) ?? BREAKER_PERIOD_SECONDS[0]) * 1000;
}

/** The automation view's field and the OpenAPI component (the PUT body, with its messages, is api-schemas' CircuitBreakerRequest). */
export const CircuitBreakerSettings = z
  .strictObject({
    maxRuns: z
      .number()
      .int()
      .min(BREAKER_MAX_RUNS[0])
      .max(BREAKER_MAX_RUNS[1])
      .meta({ description: 'Runs per period; the run past it trips the breaker.' }),
    period: z
      .string()
      .regex(/^\d{1,7}s$/)
      .meta({ description: 'The sliding window, whole seconds from "60s" to "2592000s" (30 days).' }),
  })
  .meta({
    id: 'CircuitBreakerSettings',
    description:
      'A live setting, not part of the draft (PUT/DELETE /api/v1/automations/{id}/circuit-breaker): past `maxRuns` runs started in the last `period`, new runs are PAUSED until a person resumes or cancels them.',
  });

export const circuitBreaker = defineFlowOption({
  name: 'circuitBreaker',
  scope: 'live',
  schema: CircuitBreakerSettings as unknown as z.ZodType<CircuitBreakerSettings>,
  validate(value, field, violations) {
    if (value === undefined || value === null) return null;
    if (!isObject(value)) {
      violations.push({ field, description: 'must be an object' });
      return null;
    }
    knownFields(value, ['maxRuns', 'period'], field, violations);
    const maxRuns = validInteger(value.maxRuns, BREAKER_MAX_RUNS, `${field}.maxRuns`, violations);
    if (typeof value.period !== 'string' || breakerPeriodSeconds(value.period) === undefined) {
      violations.push({
        field: `${field}.period`,
        description: `must be whole seconds from "${BREAKER_PERIOD_SECONDS[0]}s" to "${BREAKER_PERIOD_SECONDS[1]}s", e.g. "3600s"`,
      });
      return null;
    }
    return { maxRuns, period: value.period };
  },
  stored: (value) =>
    isObject(value) && typeof value.maxRuns === 'number' && typeof value.period === 'string'
      ? { maxRuns: value.maxRuns, period: value.period }
      : null,
  async decide(settings, delivery) {
    if (settings === null) return START;
    const { db, automationId } = delivery;
    const runId = runWorkflowId(delivery.listenerId, delivery.eventId);
    const taken = await takeBreaker(db, automationId, runId, settings.maxRuns, breakerPeriodMs(settings));
    // Gives back only what this delivery counted, never what a repeat's first delivery did.
    const giveBack = async () => {
      if (taken.inserted) await giveBackBreaker(db, automationId, runId);
    };
    if (taken.decision === 'counted') return { verdict: 'start', release: giveBack, unavailable: giveBack };
    return {
      verdict: 'start',
      paused: true,
      run: { paused: { since: delivery.receivedAt } },
      release: giveBack,
      // A paused run stays listed when the engine did not confirm its start (a start that timed out
      // may have been recorded after all: resume must find it); a paused run counts nothing.
    };
  },
});
