/** The circuit breaker's bounds (docs/api.md, "Circuit breaker"), shared by its schema and its rules. */
import type { CircuitBreakerSettings } from '../contract/flow-control';

export const BREAKER_MAX_RUNS = [1, 1_000_000] as const;
export const BREAKER_PERIOD_SECONDS = [60, 2_592_000] as const;
/** A resume's or cancel's reason, in characters. */
export const BREAKER_MAX_REASON = 500;

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
