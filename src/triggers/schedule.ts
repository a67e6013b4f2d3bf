/**
 * The schedule trigger: a Temporal Schedule per published automation. `cron` (five fields or an
 * `@daily`-style name) or `interval` (at least 1 s, with an optional `offset`), exactly one; an IANA
 * `timezone` (default UTC); one of Temporal's six overlap policies (default SKIP); a catch-up window
 * of 10 s to 1 day (default 300 s); `enabled` pauses (false) and resumes (true) it.
 */
import type { FieldViolation } from '../errors';
import { cronProblem } from './cron';
import { defineTriggerKind, type StoredTriggerBase } from './kind';

export const OVERLAP_POLICIES = [
  'SKIP',
  'BUFFER_ONE',
  'BUFFER_ALL',
  'CANCEL_OTHER',
  'TERMINATE_OTHER',
  'ALLOW_ALL',
] as const;
export type OverlapPolicy = (typeof OVERLAP_POLICIES)[number];

export const DEFAULT_CATCHUP_WINDOW_SECONDS = 300;
export const CATCHUP_WINDOW_SECONDS = [10, 86_400] as const;
export const MIN_INTERVAL_SECONDS = 1;

export interface ScheduleTrigger extends StoredTriggerBase {
  kind: 'schedule';
  /** Exactly one of `cron` and `interval` is set. */
  cron: string | null;
  /** Seconds, as a duration string (`"3600s"`). */
  interval: string | null;
  /** Seconds after each interval boundary (`"0s"` unless given), only with `interval`. */
  offset: string | null;
  timezone: string;
  overlap: OverlapPolicy;
  catchupWindow: string;
  enabled: boolean;
}

const DURATION = /^\d{1,10}(\.\d{1,9})?s$/;

/** The seconds of a protobuf-JSON duration such as `"3600s"`, or undefined. */
export function durationSeconds(value: unknown): number | undefined {
  return typeof value === 'string' && DURATION.test(value) ? Number(value.slice(0, -1)) : undefined;
}

/** Whether the runtime knows the IANA time zone (the Temporal server reads the same tz database names). */
export function isTimeZone(name: string): boolean {
  if (name === 'UTC') return true;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: name });
    return /^[A-Za-z_]+(\/[A-Za-z0-9_+-]+)*$/.test(name);
  } catch {
    return false;
  }
}

function given(value: unknown): boolean {
  return value !== undefined && value !== null && value !== '';
}

export const schedule = defineTriggerKind<'schedule', ScheduleTrigger>({
  name: 'schedule',
  hasListener: false,
  owns: (stored): stored is ScheduleTrigger => stored.kind === 'schedule',
  validate(value, field, _config, violations: FieldViolation[]) {
    const stored: ScheduleTrigger = {
      kind: 'schedule',
      cron: null,
      interval: null,
      offset: null,
      timezone: 'UTC',
      overlap: 'SKIP',
      catchupWindow: `${DEFAULT_CATCHUP_WINDOW_SECONDS}s`,
      enabled: true,
    };
    if (given(value.cron) === given(value.interval)) {
      violations.push({ field: `${field}.cron`, description: 'exactly one of cron and interval is required' });
    } else if (given(value.cron)) {
      const problem = typeof value.cron === 'string' ? cronProblem(value.cron) : 'must be a string';
      if (problem) violations.push({ field: `${field}.cron`, description: problem });
      else stored.cron = (value.cron as string).trim();
    } else {
      const seconds = durationSeconds(value.interval);
      if (seconds === undefined || seconds < MIN_INTERVAL_SECONDS) {
        violations.push({
          field: `${field}.interval`,
          description: `must be a duration of at least ${MIN_INTERVAL_SECONDS}s, e.g. "3600s"`,
        });
      } else {
        stored.interval = `${seconds}s`;
        stored.offset = '0s';
        if (given(value.offset)) {
          const offset = durationSeconds(value.offset);
          if (offset === undefined || offset >= seconds)
            violations.push({
              field: `${field}.offset`,
              description: `must be a duration from "0s" to less than the interval (${seconds}s)`,
            });
          else stored.offset = `${offset}s`;
        }
      }
    }
    if (given(value.offset) && !given(value.interval) && given(value.cron))
      violations.push({ field: `${field}.offset`, description: 'is only for an interval' });
    if (given(value.timezone)) {
      if (typeof value.timezone !== 'string' || !isTimeZone(value.timezone))
        violations.push({
          field: `${field}.timezone`,
          description: 'must be an IANA time zone name such as "Europe/Berlin"',
        });
      else stored.timezone = value.timezone;
    }
    if (given(value.overlap)) {
      if (!(OVERLAP_POLICIES as readonly unknown[]).includes(value.overlap))
        violations.push({ field: `${field}.overlap`, description: `must be one of ${OVERLAP_POLICIES.join(', ')}` });
      else stored.overlap = value.overlap as OverlapPolicy;
    }
    if (given(value.catchupWindow)) {
      const seconds = durationSeconds(value.catchupWindow);
      const [min, max] = CATCHUP_WINDOW_SECONDS;
      if (seconds === undefined || seconds < min || seconds > max)
        violations.push({
          field: `${field}.catchupWindow`,
          description: `must be a duration from "${min}s" to "${max}s"`,
        });
      else stored.catchupWindow = `${seconds}s`;
    }
    if (value.enabled !== undefined && value.enabled !== null) {
      if (typeof value.enabled !== 'boolean')
        violations.push({ field: `${field}.enabled`, description: 'must be a boolean' });
      else stored.enabled = value.enabled;
    }
    return stored;
  },
  view(stored) {
    return {
      ...(stored.cron !== null ? { cron: stored.cron } : {}),
      ...(stored.interval !== null ? { interval: stored.interval, offset: stored.offset ?? '0s' } : {}),
      timezone: stored.timezone,
      overlap: stored.overlap,
      catchupWindow: stored.catchupWindow,
      enabled: stored.enabled,
    };
  },
  enabled: (stored) => stored.enabled,
});
