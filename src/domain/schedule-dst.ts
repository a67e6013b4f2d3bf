/**
 * Daylight saving for cron schedules, as the contract says: a wall-clock time that a change skips
 * fires once, at the first instant after the gap (Berlin's 02:30 on 2027-03-28 at 01:00Z); one
 * that a change repeats fires once, at its first occurrence (02:30 on 2027-10-31 at 00:30Z).
 *
 * The Temporal Schedule computes a cron in its time zone otherwise: it never fires a skipped time,
 * and fires a repeated one at its second occurrence (both read from the server, test/integration/
 * schedules.test.ts). So for every change of the zone's offset within CORRECTION_HORIZON_DAYS of
 * now (before and after: backfills read the past), the wall times of that change that the cron
 * matches are left out of the zone's Schedule (`skip`) and their contract instants are fired by a
 * second Schedule in UTC (`add`). Reconciliation recomputes them, so the horizon moves with time.
 * An interval is counted from the Unix epoch and needs none.
 */
import type { ScheduleTrigger } from '../triggers';
import { cronFields, type CronFields } from '../triggers/cron';
import type { WallTime } from './engine';

export const CORRECTION_HORIZON_DAYS = 400;
const MINUTE = 60_000;
const DAY = 86_400_000;

/** One formatter per zone (making one costs far more than using it). */
const FORMATTERS = new Map<string, Intl.DateTimeFormat>();

function formatterOf(timeZone: string): Intl.DateTimeFormat {
  let formatter = FORMATTERS.get(timeZone);
  if (!formatter) {
    formatter = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
    });
    FORMATTERS.set(timeZone, formatter);
  }
  return formatter;
}

/** The zone's offset from UTC at `instantMs`, in minutes. */
export function offsetMinutes(timeZone: string, instantMs: number): number {
  const parts = formatterOf(timeZone).formatToParts(new Date(instantMs));
  const get = (type: string) => Number(parts.find((part) => part.type === type)?.value);
  const wall = Date.UTC(get('year'), get('month') - 1, get('day'), get('hour'), get('minute'));
  return Math.round((wall - Math.floor(instantMs / MINUTE) * MINUTE) / MINUTE);
}

/** A change of the zone's offset: the first instant of the new offset, the offsets before and after (minutes). */
export interface OffsetChange {
  atMs: number;
  before: number;
  after: number;
}

/** The zone's offset changes in [fromMs, toMs), to the minute. */
export function offsetChanges(timeZone: string, fromMs: number, toMs: number): OffsetChange[] {
  const changes: OffsetChange[] = [];
  const step = DAY / 4;
  let previous = offsetMinutes(timeZone, fromMs);
  for (let at = fromMs + step; at < toMs + step; at += step) {
    const offset = offsetMinutes(timeZone, at);
    if (offset === previous) continue;
    // The change lies in (at - step, at]: halve to the minute.
    let [low, high] = [at - step, at];
    while (high - low > MINUTE) {
      const middle = Math.floor((low + high) / 2 / MINUTE) * MINUTE;
      if (middle <= low) break;
      if (offsetMinutes(timeZone, middle) === previous) low = middle;
      else high = middle;
    }
    changes.push({ atMs: high, before: previous, after: offset });
    previous = offset;
  }
  return changes.filter((change) => change.atMs >= fromMs && change.atMs < toMs);
}

/** The wall-clock minute of `wallMs` (an instant shifted by the offset, read in UTC). */
function wallOf(wallMs: number): WallTime {
  const date = new Date(wallMs);
  return {
    year: date.getUTCFullYear(),
    month: date.getUTCMonth() + 1,
    day: date.getUTCDate(),
    hour: date.getUTCHours(),
    minute: date.getUTCMinutes(),
    second: 0,
  };
}

function matches(fields: CronFields, wallMs: number): boolean {
  const date = new Date(wallMs);
  return (
    fields.minute.has(date.getUTCMinutes()) &&
    fields.hour.has(date.getUTCHours()) &&
    fields.dayOfMonth.has(date.getUTCDate()) &&
    fields.month.has(date.getUTCMonth() + 1) &&
    fields.dayOfWeek.has(date.getUTCDay())
  );
}

/** The corrections of a schedule trigger around `nowMs` (none for an interval or a zone without changes). */
export function dstCorrections(trigger: ScheduleTrigger, nowMs: number): { skip: WallTime[]; add: string[] } {
  const skip: WallTime[] = [];
  const add = new Set<string>();
  if (trigger.cron === null || trigger.timezone === 'UTC') return { skip, add: [] };
  const fields = cronFields(trigger.cron);
  const horizon = CORRECTION_HORIZON_DAYS * DAY;
  const from = Math.floor((nowMs - horizon) / MINUTE) * MINUTE;
  for (const change of offsetChanges(trigger.timezone, from, nowMs + horizon)) {
    const shift = (change.after - change.before) * MINUTE;
    if (shift > 0) {
      // A gap: the wall times [at + before, at + after) do not exist; each matched one fires at `at`,
      // unless the cron matches the first wall time after the gap itself (then it fires there anyway).
      const gapStart = change.atMs + change.before * MINUTE;
      let matched = false;
      for (let wall = gapStart; wall < gapStart + shift; wall += MINUTE) {
        if (!matches(fields, wall)) continue;
        matched = true;
        skip.push(wallOf(wall));
      }
      if (matched && !matches(fields, change.atMs + change.after * MINUTE))
        add.add(new Date(change.atMs).toISOString());
    } else if (shift < 0) {
      // A repeat: the wall times [at + after, at + before) occur twice; each matched one fires at its
      // first occurrence (wall − before), and the zone's Schedule leaves the wall time out.
      const repeatStart = change.atMs + change.after * MINUTE;
      for (let wall = repeatStart; wall < repeatStart - shift; wall += MINUTE) {
        if (!matches(fields, wall)) continue;
        skip.push(wallOf(wall));
        add.add(new Date(wall - change.before * MINUTE).toISOString());
      }
    }
  }
  return { skip, add: [...add].sort() };
}

/** Beyond this many days ahead the next times are not looked for (a cron that matches a rarer day shows fewer). */
const NEXT_RUNS_HORIZON_DAYS = 400;

/**
 * The next `count` times a schedule trigger fires after `nowMs`, by the contract's rules (the
 * daylight-saving ones above; an interval from the Unix epoch), computed here for a draft that has
 * no Temporal Schedule yet (a dry run). A Schedule's own times come from the server.
 */
export function nextRunsOf(trigger: ScheduleTrigger, nowMs: number, count: number): string[] {
  const times: number[] = [];
  if (trigger.interval !== null) {
    const every = Math.round(Number(trigger.interval.slice(0, -1)) * 1000);
    const offset = Math.round(Number((trigger.offset ?? '0s').slice(0, -1)) * 1000);
    let next = Math.floor((nowMs - offset) / every) * every + offset;
    while (times.length < count) {
      if (next > nowMs) times.push(next);
      next += every;
    }
    return times.map((ms) => new Date(ms).toISOString());
  }
  const fields = cronFields(trigger.cron!);
  const end = nowMs + NEXT_RUNS_HORIZON_DAYS * DAY;
  const changes = trigger.timezone === 'UTC' ? [] : offsetChanges(trigger.timezone, nowMs, end);
  let offset = trigger.timezone === 'UTC' ? 0 : offsetMinutes(trigger.timezone, nowMs);
  let change = 0;
  for (let at = Math.floor(nowMs / MINUTE) * MINUTE + MINUTE; at < end && times.length < count; at += MINUTE) {
    const due = changes[change];
    if (due && at >= due.atMs) {
      const shift = (due.after - due.before) * MINUTE;
      // A gap: any matched wall time in it fires once, at the first instant after it.
      if (shift > 0 && !matches(fields, due.atMs + due.after * MINUTE)) {
        const gapStart = due.atMs + due.before * MINUTE;
        for (let wall = gapStart; wall < gapStart + shift; wall += MINUTE)
          if (matches(fields, wall)) {
            times.push(due.atMs);
            break;
          }
      }
      offset = due.after;
      change += 1;
      if (times.length >= count) break;
    }
    // A repeat's second occurrences are left out: the first one fired.
    const previous = changes[change - 1];
    if (
      previous &&
      previous.after < previous.before &&
      at < previous.atMs + (previous.before - previous.after) * MINUTE
    )
      continue;
    if (matches(fields, at + offset * MINUTE)) times.push(at);
  }
  return [...new Set(times)]
    .sort((a, b) => a - b)
    .slice(0, count)
    .map((ms) => new Date(ms).toISOString());
}
