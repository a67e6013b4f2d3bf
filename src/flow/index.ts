/**
 * Flow control between runs (docs/api.md, "Flow control between runs"): the registry of flow
 * options. The API's schemas and validation, the automation view, the delivery intake, the dry run
 * and the rerun read the options only through this list, so a new option is one file in src/flow/
 * and one line in FLOW_OPTIONS (and a migration when it keeps state: its SQL goes to src/store).
 *
 * An option (`FlowOption`, src/flow/option.ts) is:
 * - `name`: the automation's field (request and response body, updateMask path, stored JSON key);
 * - `scope`: 'version' (saved with the draft, snapshotted on publish, read from the published
 *   version at delivery) or 'live' (a setting of the automation itself, read from the current
 *   record at delivery, e.g. a circuit breaker's state);
 * - `schema` (the OpenAPI component), `validate` (the domain's messages) and `stored` (read back);
 * - `decide`: the delivery-time decision over the delivery's facts, a value — start (adding to the
 *   run's input, optionally paused, with what to give back when a later option refuses), filtered,
 *   duplicate, or refused (429); options decide in the order of FLOW_OPTIONS, the first that does
 *   not start answers;
 * - `runFlow` and `started`: run time — what a rerun's input carries, and what follows the start
 *   (a lane request). The workflow reads only the run's input (`RunFlow`, src/contract/run.ts), so
 *   nothing here runs in the workflow sandbox;
 * - `dryRun`: its view over a sample payload, with its schema.
 */
import { z } from 'zod';
import { filter } from './filter';
import { rateLimit } from './rate-limit';
import { concurrency } from './concurrency';
import { START, type FlowDecision, type FlowDelivery, type FlowOption, type FlowRun } from './option';
import type { RunFlow } from '../contract/run';
import type { FieldViolation } from '../errors';
import { isObject } from '../json';

/** Every option, in the order they decide a delivery (the contract's: filter, rate limit, queue bound). */
export const FLOW_OPTIONS = [filter, rateLimit, concurrency] as const;

type Options = (typeof FLOW_OPTIONS)[number];
export type FlowField = Options['name'];
type SettingsOf<O> = O extends FlowOption<string, infer S, unknown> ? S : never;
type ViewOf<O> = O extends FlowOption<string, unknown, infer V> ? V : never;

/** An automation's flow control: every option's settings, null when unset. */
export type FlowControl = { [O in Options as O['name']]: SettingsOf<O> | null };
/** What the dry run shows of flow control for a sample payload. */
export type FlowControlDryRun = { [O in Options as O['name']]: ViewOf<O> | null };

export const FLOW_FIELDS = FLOW_OPTIONS.map((option) => option.name) as FlowField[];

const each = <T>(fn: (option: FlowOption) => T): Record<FlowField, T> =>
  Object.fromEntries((FLOW_OPTIONS as readonly FlowOption[]).map((option) => [option.name, fn(option)])) as Record<FlowField, T>;

/** The options' fields of a write body (null or absent: unset); a field that is no component keeps its description. */
export const flowInputSchemas = () =>
  each((option) => {
    const meta = option.schema.meta();
    return meta?.id === undefined && meta?.description !== undefined ? option.schema.nullish().meta({ description: meta.description }) : option.schema.nullish();
  });
/** The options' fields of the automation view. */
export const flowViewSchemas = () => each((option) => option.schema.nullable());
/** The dry run's `flowControl`. */
export const flowDryRunSchema = () => z.object(each((option) => option.dryRun.schema)).meta({ description: "The draft's flow control over the payload." });

/** A stored value (an older row or snapshot has none): every option present, null when unset. */
export function flowControlOf(value: unknown): FlowControl {
  const stored = isObject(value) ? value : {};
  return each((option) => option.stored(stored[option.name])) as FlowControl;
}

/** Validates one option's field of a write body (`prefix` is '' or 'automation.'); null/absent unsets it. */
export function validateFlowField<F extends FlowField>(name: F, value: unknown, prefix: string, violations: FieldViolation[]): FlowControl[F] {
  const option = (FLOW_OPTIONS as readonly FlowOption[]).find((candidate) => candidate.name === name)!;
  return option.validate(value, `${prefix}${name}`, violations) as FlowControl[F];
}

/** Every option's field of a create body (absent = unset). */
export function validateFlowControl(body: Record<string, unknown>, prefix: string, violations: FieldViolation[]): FlowControl {
  return each((option) => option.validate(body[option.name], `${prefix}${option.name}`, violations)) as FlowControl;
}

export function dryRunFlowControl(stored: unknown, payload: unknown): FlowControlDryRun {
  const flow = flowControlOf(stored) as Record<string, unknown>;
  return each((option) => option.dryRun.view(flow[option.name] ?? null, payload)) as FlowControlDryRun;
}

/** What a run a person starts (rerun) carries for the published version's flow control; the filter does not apply. */
export function runFlowOf(stored: unknown, run: FlowRun): RunFlow | undefined {
  const flow = flowControlOf(stored) as Record<string, unknown>;
  let result: RunFlow | undefined;
  for (const option of FLOW_OPTIONS as readonly FlowOption[]) {
    const settings = flow[option.name];
    const part = settings === null || settings === undefined ? undefined : option.runFlow?.(settings, run);
    if (part) result = { ...result, ...part };
  }
  return result;
}

/** The settings a delivery is judged by: 'version' options from the published version, 'live' ones from the automation. */
export interface FlowSources {
  version: unknown;
  live: unknown;
}

/** What flow control decided for one delivery: the run's input and its follow-ups, or the answer without a run. */
export type DeliveryDecision =
  | { verdict: 'start'; flow: RunFlow | undefined; paused: boolean; release(): Promise<void>; started(executionId: string, repeat: boolean): Promise<void> }
  | Exclude<FlowDecision, { verdict: 'start' }>;

/**
 * Asks every option in order. A refusal gives back what earlier options took, and becomes the
 * 409 of the run the event already started, if any (a repeat is a 409 whatever its first delivery
 * became).
 */
export async function decideDelivery(sources: FlowSources, facts: Omit<FlowDelivery, 'runFails'>): Promise<DeliveryDecision> {
  const version = flowControlOf(sources.version) as Record<string, unknown>;
  const live = isObject(sources.live) ? sources.live : {};
  const delivery: FlowDelivery = { ...facts, runFails: false };
  const releases: (() => Promise<void>)[] = [];
  const release = async () => {
    for (const give of releases.splice(0).reverse()) await give();
  };
  const passed: { option: FlowOption; settings: unknown }[] = [];
  let flow: RunFlow | undefined;
  let paused = false;
  for (const option of FLOW_OPTIONS as readonly FlowOption[]) {
    const settings = option.scope === 'version' ? (version[option.name] ?? null) : option.stored(live[option.name]);
    const decision = settings === null ? await option.decide(null, delivery) : await option.decide(settings, delivery);
    if (decision.verdict === 'refused') {
      await release();
      const existing = await facts.engine.runOf?.(facts.listenerId, facts.eventId);
      if (existing !== undefined) return { verdict: 'duplicate', executionId: existing };
      return decision;
    }
    if (decision.verdict !== 'start') {
      await release();
      return decision;
    }
    if (decision.release) releases.push(decision.release);
    if (decision.paused) paused = true;
    if (settings !== null) passed.push({ option, settings });
    if (decision.run) {
      // The first expression that failed decides: the run fails at once, without a lane.
      flow = delivery.runFails ? flow : decision.run.error ? { error: decision.run.error } : { ...flow, ...decision.run };
      if (decision.run.error) delivery.runFails = true;
    }
  }
  return {
    verdict: 'start',
    flow,
    paused,
    release,
    started: async (executionId, repeat) => {
      for (const { option, settings } of passed) await option.started?.(settings, delivery, executionId, repeat);
    },
  };
}

export { START };
export type { FlowDecision, FlowDelivery, FlowEngine, FlowOption, FlowRun } from './option';
export { keyHash, keyValue } from './option';
export { filterVerdict } from './filter';
export { CONCURRENCY_LIMITS, ConcurrencySettings, LANE_QUEUE_RETRY_AFTER_SECONDS, laneWorkflowId } from './concurrency';
export { RATE_LIMITS, RATE_PERIOD_SECONDS, RateLimitSettings, periodMs } from './rate-limit';
