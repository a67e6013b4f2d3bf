/**
 * Flow control between runs: an automation's `filter`, `concurrency` and `rateLimit` (docs/api.md,
 * "Flow control between runs"). Saved with the draft, snapshotted with each published version, and
 * read from the run's version: the receiver evaluates the filter and the keys on the delivery path
 * (src/delivery/intake.ts), the dry run shows them, and the run is admitted through its key's lane
 * (workflows/lane.ts). Expressions are CEL over `ctx.trigger`, compiled when the automation is saved.
 */
import { createHash } from 'node:crypto';
import { checkExpression, evaluate } from '../cel';

import type { RunFlow } from '../contract/run';
import type { ConcurrencySettings, FlowControl, RateLimitSettings } from '../contract/flow-control';
import { CelEvaluationError, type FieldViolation } from '../errors';
import { isObject } from '../json';

export type { ConcurrencySettings, FlowControl, RateLimitSettings };

export const FLOW_FIELDS = ['filter', 'concurrency', 'rateLimit'] as const;
export type FlowField = (typeof FLOW_FIELDS)[number];

export const NO_FLOW_CONTROL: FlowControl = { filter: null, concurrency: null, rateLimit: null };
export const CONCURRENCY_LIMITS = [1, 100] as const;
export const RATE_LIMITS = [1, 10_000] as const;
export const RATE_PERIOD_SECONDS = [1, 86_400] as const;

/** A stored value (an older row or snapshot has none): every field present, null when unset. */
export function flowControlOf(value: unknown): FlowControl {
  const stored = isObject(value) ? value : {};
  return {
    filter: typeof stored.filter === 'string' ? stored.filter : null,
    concurrency: isObject(stored.concurrency) ? (stored.concurrency as unknown as ConcurrencySettings) : null,
    rateLimit: isObject(stored.rateLimit) ? (stored.rateLimit as unknown as RateLimitSettings) : null,
  };
}

/** True when the automation has any of the three. */
export function hasFlowControl(flow: FlowControl | undefined): boolean {
  return !!flow && (flow.filter !== null || flow.concurrency !== null || flow.rateLimit !== null);
}

function expression(value: unknown, field: string, violations: FieldViolation[]): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string' || value.trim() === '') {
    violations.push({ field, description: 'must be a non-empty CEL expression' });
    return null;
  }
  const problem = checkExpression(value);
  if (problem !== undefined) {
    violations.push({ field, description: problem });
    return null;
  }
  return value;
}

function integer(value: unknown, [min, max]: readonly [number, number], field: string, violations: FieldViolation[]): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    violations.push({ field, description: `must be an integer from ${min} to ${max}` });
    return min;
  }
  return value;
}

function known(value: Record<string, unknown>, names: string[], field: string, violations: FieldViolation[]): void {
  for (const name of Object.keys(value)) if (!names.includes(name)) violations.push({ field: `${field}.${name}`, description: 'is not a known field' });
}

/** Validates one of the three fields (`prefix` is '' or 'automation.'); null/absent unsets it. */
export function validateFlowField<F extends FlowField>(name: F, value: unknown, prefix: string, violations: FieldViolation[]): FlowControl[F] {
  const field = `${prefix}${name}`;
  if (name === 'filter') return expression(value, field, violations) as FlowControl[F];
  if (value === undefined || value === null) return null as FlowControl[F];
  if (!isObject(value)) {
    violations.push({ field, description: 'must be an object' });
    return null as FlowControl[F];
  }
  if (name === 'concurrency') {
    known(value, ['limit', 'key'], field, violations);
    const settings: ConcurrencySettings = {
      limit: integer(value.limit, CONCURRENCY_LIMITS, `${field}.limit`, violations),
      key: expression(value.key, `${field}.key`, violations),
    };
    return settings as FlowControl[F];
  }
  known(value, ['limit', 'period', 'key'], field, violations);
  const settings: RateLimitSettings = {
    limit: integer(value.limit, RATE_LIMITS, `${field}.limit`, violations),
    period: periodOf(value.period, `${field}.period`, violations),
    key: expression(value.key, `${field}.key`, violations),
  };
  return settings as FlowControl[F];
}

function periodOf(value: unknown, field: string, violations: FieldViolation[]): string {
  const match = typeof value === 'string' ? /^(\d{1,6})s$/.exec(value) : null;
  const seconds = match ? Number(match[1]) : NaN;
  if (!(seconds >= RATE_PERIOD_SECONDS[0] && seconds <= RATE_PERIOD_SECONDS[1])) {
    violations.push({ field, description: `must be whole seconds from "${RATE_PERIOD_SECONDS[0]}s" to "${RATE_PERIOD_SECONDS[1]}s", e.g. "60s"` });
    return '1s';
  }
  return `${seconds}s`;
}

/** The three fields of a create body (absent = unset). */
export function validateFlowControl(body: Record<string, unknown>, prefix: string, violations: FieldViolation[]): FlowControl {
  return {
    filter: validateFlowField('filter', body.filter, prefix, violations),
    concurrency: validateFlowField('concurrency', body.concurrency, prefix, violations),
    rateLimit: validateFlowField('rateLimit', body.rateLimit, prefix, violations),
  };
}

/** The period of a rate limit in milliseconds. */
export function periodMs(settings: RateLimitSettings): number {
  return Number(settings.period.slice(0, -1)) * 1000;
}

/** What a flow expression gave: a value, or why it could not be evaluated. */
export type Evaluated<T> = { ok: true; value: T } | { ok: false; error: string };

function failed(err: unknown): { ok: false; error: string } {
  if (err instanceof CelEvaluationError) return { ok: false, error: err.message };
  throw err;
}

/** The filter's verdict over a payload; a non-bool result is an error. */
export function filterVerdict(filter: string, payload: unknown): Evaluated<boolean> {
  try {
    const value = evaluate(filter, { trigger: payload, steps: {} });
    if (typeof value !== 'boolean') return { ok: false, error: `must evaluate to a bool, not ${describe(value)}` };
    return { ok: true, value };
  } catch (err) {
    return failed(err);
  }
}

/**
 * A key's value over a payload, as text: a string as is, a number or a bool in its JSON spelling;
 * null, a list or a map is an error (a key names one subject). No key expression: the empty key.
 */
export function keyValue(key: string | null, payload: unknown): Evaluated<string> {
  if (key === null) return { ok: true, value: '' };
  try {
    const value = evaluate(key, { trigger: payload, steps: {} });
    if (typeof value === 'string') return { ok: true, value };
    if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return { ok: true, value: String(value) };
    return { ok: false, error: `must evaluate to a string, a number or a bool, not ${describe(value)}` };
  } catch (err) {
    return failed(err);
  }
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  return typeof value === 'object' ? 'a map' : `a ${typeof value}`;
}

/** A key value's fixed-size name: rows and workflow ids never carry the (possibly personal) value itself. */
export function keyHash(value: string): string {
  return createHash('sha256').update(value).digest('hex').slice(0, 32);
}

/** Workflow id of the lane that admits the runs of one automation with one concurrency key value. */
export function laneWorkflowId(automationId: string, key: string): string {
  return `lane:${automationId}:${keyHash(key)}`;
}

/**
 * What a run of a version with these settings starts with, for this payload: the lane that admits
 * it (`requested`: the starter asks the lane itself right after the start), or the concurrency
 * key's evaluation error. Undefined without a concurrency limit.
 */
export function runQueueOf(automationId: string, flow: FlowControl | undefined, payload: unknown, requested: boolean): RunFlow | undefined {
  if (!flow?.concurrency) return undefined;
  const key = keyValue(flow.concurrency.key, payload);
  if (!key.ok) return { error: { field: 'concurrency.key', message: key.error } };
  return { queue: { key: key.value, lane: laneWorkflowId(automationId, key.value), limit: flow.concurrency.limit, requested } };
}

/** What the dry run shows of flow control for a sample payload. */
export interface FlowControlDryRun {
  /** The filter's verdict (true: a run starts); null when it could not be evaluated (then `error`). Absent filter: null. */
  filter: { matches: boolean | null; error: string | null } | null;
  /** The concurrency key's value for the payload ('' without a key expression). */
  concurrency: { key: string | null; error: string | null } | null;
  rateLimit: { key: string | null; error: string | null } | null;
}

export function dryRunFlowControl(flow: FlowControl, payload: unknown): FlowControlDryRun {
  const key = (settings: { key: string | null } | null) => {
    if (!settings) return null;
    const value = keyValue(settings.key, payload);
    return value.ok ? { key: value.value, error: null } : { key: null, error: value.error };
  };
  let filter: FlowControlDryRun['filter'] = null;
  if (flow.filter !== null) {
    const verdict = filterVerdict(flow.filter, payload);
    filter = verdict.ok ? { matches: verdict.value, error: null } : { matches: null, error: verdict.error };
  }
  return { filter, concurrency: key(flow.concurrency), rateLimit: key(flow.rateLimit) };
}
