/**
 * A cron expression as the schedule trigger takes it: five fields (minute, hour, day of month,
 * month, day of week; each `*`, a value, a range `a-b`, a list, with an optional step `/n`, months
 * and days also by their three-letter names) or one of the `@daily`-style names. Only the syntax is
 * checked here; the times it matches are the Temporal Schedule's to compute.
 */

export const CRON_NAMES = ['@yearly', '@annually', '@monthly', '@weekly', '@daily', '@midnight', '@hourly'] as const;

const MONTHS = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];
const DAYS = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];

interface FieldRule {
  name: string;
  min: number;
  max: number;
  /** Names for the values from `min` on. */
  names?: string[];
}

const FIELDS: FieldRule[] = [
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day of month', min: 1, max: 31 },
  { name: 'month', min: 1, max: 12, names: MONTHS },
  { name: 'day of week', min: 0, max: 7, names: DAYS },
];

function valueOf(token: string, rule: FieldRule): number | undefined {
  if (/^\d{1,2}$/.test(token)) {
    const value = Number(token);
    return value >= rule.min && value <= rule.max ? value : undefined;
  }
  const index = rule.names?.indexOf(token.toUpperCase()) ?? -1;
  return index >= 0 ? index + rule.min : undefined;
}

function checkPart(part: string, rule: FieldRule): boolean {
  const [range, step, ...rest] = part.split('/');
  if (rest.length > 0 || range === undefined || range === '') return false;
  if (step !== undefined && !(/^\d{1,2}$/.test(step) && Number(step) >= 1)) return false;
  if (range === '*') return true;
  const bounds = range.split('-');
  if (bounds.length > 2) return false;
  const values = bounds.map((token) => valueOf(token, rule));
  if (values.some((value) => value === undefined)) return false;
  return values.length === 1 || values[0]! <= values[1]!;
}

/** Undefined when `source` is a valid cron expression, else what is wrong with it. */
export function cronProblem(source: string): string | undefined {
  const text = source.trim();
  if (text.startsWith('@')) {
    return (CRON_NAMES as readonly string[]).includes(text.toLowerCase())
      ? undefined
      : `unknown name "${text}": use one of ${CRON_NAMES.join(', ')} or five fields`;
  }
  const fields = text.split(/\s+/);
  if (fields.length !== 5)
    return `must have 5 fields (minute hour day-of-month month day-of-week), not ${fields.length}`;
  for (const [index, field] of fields.entries()) {
    const rule = FIELDS[index]!;
    if (!field.split(',').every((part) => checkPart(part, rule)))
      return `the ${rule.name} field "${field}" does not parse (values ${rule.min}-${rule.max})`;
  }
  return undefined;
}

/** What a cron expression matches, field by field (the day of week 0-6 from Sunday). */
export interface CronFields {
  minute: Set<number>;
  hour: Set<number>;
  dayOfMonth: Set<number>;
  month: Set<number>;
  dayOfWeek: Set<number>;
}

const NAMED: Record<string, string> = {
  '@yearly': '0 0 1 1 *',
  '@annually': '0 0 1 1 *',
  '@monthly': '0 0 1 * *',
  '@weekly': '0 0 * * 0',
  '@daily': '0 0 * * *',
  '@midnight': '0 0 * * *',
  '@hourly': '0 * * * *',
};

/** The values of a valid cron expression (cronProblem undefined), as the Temporal Schedule matches them (every field). */
export function cronFields(source: string): CronFields {
  const text = source.trim();
  const fields = (NAMED[text.toLowerCase()] ?? text).split(/\s+/);
  const sets = fields.map((field, index) => {
    const rule = FIELDS[index]!;
    const values = new Set<number>();
    for (const part of field.split(',')) {
      const [range, step] = part.split('/');
      const every = step === undefined ? 1 : Number(step);
      let [from, to] = [rule.min, rule.max];
      if (range !== '*') {
        const bounds = range!.split('-').map((token) => valueOf(token, rule)!);
        from = bounds[0]!;
        to = bounds.length === 2 ? bounds[1]! : step === undefined ? from : rule.max;
      }
      for (let value = from; value <= to; value += every) values.add(value);
    }
    return values;
  });
  const dayOfWeek = new Set([...sets[4]!].map((day) => day % 7));
  return { minute: sets[0]!, hour: sets[1]!, dayOfMonth: sets[2]!, month: sets[3]!, dayOfWeek };
}
