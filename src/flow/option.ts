/**
 * What a flow option is (the interface src/flow/index.ts documents and lists), and the pieces the
 * options share: CEL expressions over `ctx.trigger` checked when the automation is saved, and a
 * key's value over a payload.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { checkExpression, evaluate } from '../cel';
import type { RunFlow } from '../contract/run';
import type { RunQueue } from '../contract/run';
import type { LaneRequest } from '../contract/lanes';
import type { Db } from '../store/db';
import { CelEvaluationError, type FieldViolation } from '../errors';

/**
 * The run engine's calls that flow control makes at delivery time (the domain's RunEngine,
 * src/domain/engine.ts, extends this), each bounded by the delivery's start timeout. Each throws
 * WorkflowEngineUnavailableError when the engine does not answer in time.
 */
export interface FlowEngine {
  /**
   * Asks the lane of a run's concurrency key for a permit (signal-with-start; idempotent per run),
   * right after the run's start, so that requests reach the lane in the order events were accepted.
   * Without `taskQueue`, the engine's own.
   */
  requestLanePermit(request: Omit<LaneRequest, 'taskQueue'> & { taskQueue?: string }): Promise<void>;
  /**
   * Which of `runIds` have closed, and which the engine does not know (never started, or past
   * retention): the places of a full lane are reconciled with it (src/flow/concurrency.ts).
   */
  runsGone(runIds: readonly string[]): Promise<{ closed: string[]; unknown: string[] }>;
  /**
   * The lane a run was recorded for when it was started (its input's `flow.queue`), undefined for a
   * run without one: a repeat of its event asks that lane, never one computed from the repeat's body.
   */
  recordedQueue(runId: string): Promise<RunQueue | undefined>;
  /** The run started for this event, if there is one (the repeat check of a delivery that starts nothing). */
  runOf(listenerId: string, eventId: string): Promise<string | undefined>;
}

/** One delivery that passed every check before flow control, as the options see it. */
export interface FlowDelivery {
  db: Db;
  engine: FlowEngine;
  automationId: string;
  automationName: string;
  listenerId: string;
  eventId: string;
  /** RFC 3339 time the receiver accepted the event (the run's `receivedAt`). */
  receivedAt: string;
  payload: unknown;
  /** The listener has filtered events on record (a repeat of one is a 409 even after the filter went). */
  hasFilteredEvents: boolean;
  /** An earlier option found the run must fail at once (an expression that could not be evaluated): no lane, no queue. */
  runFails: boolean;
  /** The most runs of one concurrency key that may wait (LANE_QUEUE_LIMIT). */
  laneQueueLimit: number;
}

/**
 * What one option decided for a delivery; the first decision that is not `start` answers.
 * - `start`: the run may start. `run` is what the option adds to the run's input (`RunFlow`, read by
 *   the workflow); `paused` starts the run held until someone lets it go; `release` gives back what
 *   the decision took (a rate-limit share) when a later option refuses or the event is a repeat.
 * - `filtered`: recorded, no run (200). `duplicate`: a repeat of an event this listener received (409).
 * - `refused`: no run, nothing recorded (429 with Retry-After); the intake first gives back what
 *   earlier options took and answers 409 instead when the event already started a run.
 */
export type FlowDecision =
  | {
      verdict: 'start';
      run?: Partial<RunFlow>;
      paused?: boolean;
      release?: () => Promise<void>;
      /** Gives back what the decision took when the engine did not confirm the start (503). */
      unavailable?: () => Promise<void>;
    }
  | { verdict: 'filtered' }
  | { verdict: 'duplicate'; executionId: string | null }
  | { verdict: 'refused'; reason: string; message: string; retryAfterSeconds: number };

export const START: FlowDecision = { verdict: 'start' };

/** A run started by a person (rerun): no delivery, no filter; what the run's input carries. */
export interface FlowRun {
  automationId: string;
  payload: unknown;
  /** True when the starter asks the lane itself right after the start (in acceptance order). */
  requested: boolean;
}

export interface FlowOption<Name extends string = string, Settings = unknown, View = unknown> {
  /** The automation's field (API body, response, updateMask path, stored JSON key). */
  readonly name: Name;
  /**
   * 'version': saved with the draft and snapshotted with each published version; a delivery reads
   * the published version's value. 'live': a setting of the automation itself, read at delivery
   * time from the current record (an edit applies at once, publish or not).
   */
  readonly scope: 'version' | 'live';
  /** The settings as the API takes and shows them (the OpenAPI component); null unsets. */
  readonly schema: z.ZodType<Settings>;
  /** Validates a value of a write body (the domain's messages under `field`); null or absent unsets. */
  validate(value: unknown, field: string, violations: FieldViolation[]): Settings | null;
  /** The stored value as settings (older rows and snapshots have none: null). */
  stored(value: unknown): Settings | null;
  /** The delivery-time decision; called for every delivery, with null settings when the option is unset. */
  decide(settings: Settings | null, delivery: FlowDelivery): Promise<FlowDecision>;
  /**
   * Run time: what a run a person starts (rerun) carries in its input for these settings. The
   * workflow code reads `RunFlow` from the run's input (deterministic: workflows/), never this file.
   */
  runFlow?(settings: Settings, run: FlowRun): Partial<RunFlow> | undefined;
  /** After the start (`executionId`) or the repeat (409 of `executionId`) of a run this option let through. */
  started?(settings: Settings, delivery: FlowDelivery, executionId: string, repeat: boolean): Promise<void>;
  /** The dry run: what the option would do with a sample payload (null when unset); a live option has none. */
  readonly dryRun?: { schema: z.ZodType<View | null>; view(settings: Settings | null, payload: unknown): View | null };
}

/** Declares an option, typed (src/flow/index.ts lists it). */
export function defineFlowOption<Name extends string, Settings, View>(
  option: FlowOption<Name, Settings, View>,
): FlowOption<Name, Settings, View> {
  return option;
}

/** A CEL expression field: null when absent, a violation when not a non-empty expression that compiles. */
export function validExpression(value: unknown, field: string, violations: FieldViolation[]): string | null {
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

export function validInteger(
  value: unknown,
  [min, max]: readonly [number, number],
  field: string,
  violations: FieldViolation[],
): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    violations.push({ field, description: `must be an integer from ${min} to ${max}` });
    return min;
  }
  return value;
}

/** Each field of `value` not in `names` is a violation of its own. */
export function knownFields(
  value: Record<string, unknown>,
  names: string[],
  field: string,
  violations: FieldViolation[],
): void {
  for (const name of Object.keys(value))
    if (!names.includes(name)) violations.push({ field: `${field}.${name}`, description: 'is not a known field' });
}

/** What a flow expression gave: a value, or why it could not be evaluated. */
export type Evaluated<T> = { ok: true; value: T } | { ok: false; error: string };

export function failed(err: unknown): { ok: false; error: string } {
  if (err instanceof CelEvaluationError) return { ok: false, error: err.message };
  throw err;
}

export function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  return typeof value === 'object' ? 'a map' : `a ${typeof value}`;
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
    if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint')
      return { ok: true, value: String(value) };
    return { ok: false, error: `must evaluate to a string, a number or a bool, not ${describeValue(value)}` };
  } catch (err) {
    return failed(err);
  }
}

/** A key value's fixed-size name: rows and workflow ids never carry the (possibly personal) value itself. */
export function keyHash(value: string): string {
  return createHash('sha256').update(value).digest('hex').slice(0, 32);
}

/** The dry-run view of a key: its value for the payload, or why it could not be evaluated. */
export interface KeyView {
  key: string | null;
  error: string | null;
}

export function keyView(settings: { key: string | null } | null, payload: unknown): KeyView | null {
  if (!settings) return null;
  const value = keyValue(settings.key, payload);
  return value.ok ? { key: value.value, error: null } : { key: null, error: value.error };
}

/** The schema of a CEL expression field over ctx.trigger. */
export const expressionSchema = () =>
  z.string().regex(/\S/).meta({ description: 'A CEL expression over ctx.trigger.' });

/** The dry-run view of a key expression. */
export const keyViewSchema = (description: string): z.ZodType<KeyView | null> =>
  z.object({ key: z.string().nullable(), error: z.string().nullable() }).nullable().meta({ description });
