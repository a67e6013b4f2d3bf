/**
 * Runs across automations, as the console's runs list and approvals inbox read them
 * (GET /api/v1/automation_executions), and the lanes of an automation's concurrency keys
 * (GET /api/v1/automations/{id}/lanes). The filters come from the query string and are checked
 * here (400 naming the parameter); the run engine answers them
 * from visibility; the automations' names come from the store.
 */
import type { Queryable } from '../store/queryable';
import { automationNames } from '../store/automations';
import { invalidArgument } from '../errors';
import { RUN_STATUSES, type RunStatus } from './runs';

export { RUN_STATUSES, type RunStatus };

export interface RunFilter {
  automationId?: string;
  /** Any of these statuses (absent: every status). */
  statuses?: RunStatus[];
  /** Only running runs with a step waiting for approval. */
  waitingForApproval?: true;
  /** Started at or after (RFC 3339, normalised to UTC). */
  startedAfter?: string;
  /** Started before. */
  startedBefore?: string;
  /** Only the run of this event id (exact). */
  eventId?: string;
  /** A prefix of the run id or of the event id (case-insensitive: as typed and in lower case). */
  q?: string;
}

const MAX_SEARCH = 200;

/** A lane of one concurrency key value: its running and queued runs, the oldest queued run's start. */
export interface LaneView {
  key: string;
  running: number;
  queued: number;
  oldestQueuedAt: string;
}

const MAX_AUTOMATION_ID = 200;
const RFC3339 = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/i;

function values(raw: unknown): string[] {
  if (raw === undefined) return [];
  return (Array.isArray(raw) ? raw : [raw]).filter((value): value is string => typeof value === 'string');
}

function single(query: Record<string, unknown>, field: string): string | undefined {
  const all = values(query[field]);
  if (all.length > 1) throw invalidArgument({ field, description: 'must be given once' });
  return all[0] === '' ? undefined : all[0];
}

function time(query: Record<string, unknown>, field: string): string | undefined {
  const text = single(query, field);
  if (text === undefined) return undefined;
  const ms = RFC3339.test(text) ? Date.parse(text) : NaN;
  if (Number.isNaN(ms))
    throw invalidArgument({ field, description: 'must be an RFC 3339 timestamp such as 2026-01-31T09:00:00Z' });
  return new Date(ms).toISOString();
}

/** The filters of the runs list's query string; 400 naming the parameter when one is malformed. */
export function readRunFilter(query: Record<string, unknown>): RunFilter {
  const filter: RunFilter = {};
  const automationId = single(query, 'automationId');
  if (automationId !== undefined) {
    if (automationId.length > MAX_AUTOMATION_ID || [...automationId].some((c) => c < ' ')) {
      throw invalidArgument({
        field: 'automationId',
        description: `must be an automation id (at most ${MAX_AUTOMATION_ID} characters)`,
      });
    }
    filter.automationId = automationId;
  }
  const statuses = values(query.status)
    .flatMap((value) => value.split(','))
    .filter((value) => value !== '');
  for (const status of statuses) {
    if (!(RUN_STATUSES as readonly string[]).includes(status)) {
      throw invalidArgument({ field: 'status', description: `must be one of ${RUN_STATUSES.join(', ')}` });
    }
  }
  if (statuses.length > 0) filter.statuses = [...new Set(statuses)] as RunStatus[];
  const waiting = single(query, 'waitingForApproval');
  if (waiting !== undefined) {
    if (waiting !== 'true')
      throw invalidArgument({ field: 'waitingForApproval', description: 'must be true (or absent)' });
    filter.waitingForApproval = true;
  }
  for (const field of ['eventId', 'q'] as const) {
    const text = single(query, field)?.trim();
    if (text === undefined || text === '') continue;
    if (text.length > MAX_SEARCH || [...text].some((c) => c < ' '))
      throw invalidArgument({
        field,
        description: `must be at most ${MAX_SEARCH} characters, without control characters`,
      });
    filter[field] = text;
  }
  const after = time(query, 'startedAfter');
  const before = time(query, 'startedBefore');
  if (after !== undefined) filter.startedAfter = after;
  if (before !== undefined) filter.startedBefore = before;
  if (after !== undefined && before !== undefined && after >= before) {
    throw invalidArgument({ field: 'startedBefore', description: 'must be later than startedAfter' });
  }
  return filter;
}

/** Each run with its automation's name: the store's current one, else (a deleted automation) the name it started under. */
export async function withAutomationNames<T extends { automationId: string; automationName: string }>(
  db: Queryable,
  runs: T[],
): Promise<T[]> {
  const names = await automationNames(
    db,
    runs.map((run) => run.automationId),
  );
  return runs.map((run) => ({ ...run, automationName: names.get(run.automationId) ?? run.automationName }));
}
