/**
 * Flow control between runs (docs/api.md#flow-control-between-runs): the registry of flow
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
import { circuitBreaker } from './circuit-breaker';
import { START, type FlowDecision, type FlowDelivery, type FlowOption, type FlowRun } from './option';
import type { RunFlow } from '../contract/run';
import type { FieldViolation } from '../errors';
import { isObject } from '../json';

/** The options saved with the draft and snapshotted with each version, in the order they decide a delivery (the contract's: filter, rate limit, queue bound). */
export const VERSION_OPTIONS = [filter, rateLimit, concurrency] as const;
/**
 * The live options: settings of the automation itself, written through their own operations (not
 * the draft's body or updateMask), shown beside the draft. They decide after the version's: the
 * circuit breaker counts only runs about to start (a filtered event or a 429 is not one).
 */
export const LIVE_OPTIONS = [circuitBreaker] as const;
/** Every option, in the order they decide a delivery. */
export const FLOW_OPTIONS = [...VERSION_OPTIONS, ...LIVE_OPTIONS] as const;

type Options = (typeof VERSION_OPTIONS)[number];
type LiveOptions = (typeof LIVE_OPTIONS)[number];
export type LiveFlowField = LiveOptions['name'];
export type FlowField = Options['name'];
type SettingsOf<O> = O extends FlowOption<string, infer S, unknown> ? S : never;
type ViewOf<O> = O extends FlowOption<string, unknown, infer V> ? V : never;

/** An automation's flow control of its draft or a version: every version option's settings, null when unset. */
export type FlowControl = { [O in Options as O['name']]: SettingsOf<O> | null };
/** An automation's live flow options: each one's settings, null when unset. */
export type LiveFlowControl = { [O in LiveOptions as O['name']]: SettingsOf<O> | null };
/** What the dry run shows of flow control for a sample payload. */
export type FlowControlDryRun = { [O in Options as O['name']]: ViewOf<O> | null };

export const FLOW_FIELDS = VERSION_OPTIONS.map((option) => option.name) as FlowField[];

const each = <T>(fn: (option: FlowOption) => T): Record<FlowField, T> =>
  Object.fromEntries((VERSION_OPTIONS as readonly FlowOption[]).map((option) => [option.name, fn(option)])) as Record<
    FlowField,
    T
  >;
const eachLive = <T>(fn: (option: FlowOption) => T): Record<LiveFlowField, T> =>
  Object.fromEntries((LIVE_OPTIONS as readonly FlowOption[]).map((option) => [option.name, fn(option)])) as Record<
    LiveFlowField,
    T
  >;

/** The options' fields of a write body (null or absent: unset); a field that is no component keeps its description. */
export const flowInputSchemas = () =>
  each((option) => {
    const meta = option.schema.meta();
    return meta?.id === undefined && meta?.description !== undefined
      ? option.schema.nullish().meta({ description: meta.description })
      : option.schema.nullish();
  });
/** The options' fields of the automation view: the draft's, then the live ones beside it. */
export const flowViewSchemas = () => ({
  ...each((option) => option.schema.nullable()),
  ...eachLive((option) => option.schema.nullable()),
});
/** The dry run's `flowControl` (the version options'). */
export const flowDryRunSchema = () =>
  z.object(each((option) => option.dryRun!.schema)).meta({ description: "The draft's flow control over the payload." });

/** A stored value (an older row or snapshot has none): every option present, null when unset. */
export function flowControlOf(value: unknown): FlowControl {
  const stored = isObject(value) ? value : {};
  return each((option) => option.stored(stored[option.name])) as FlowControl;
}

/** The live options' stored values as settings (the automation's `live_flow`). */
export function liveFlowControlOf(value: unknown): LiveFlowControl {
  const stored = isObject(value) ? value : {};
  return eachLive((option) => option.stored(stored[option.name])) as LiveFlowControl;
}

/** Validates one option's field of a write body (`prefix` is '' or 'automation.'); null/absent unsets it. */
export function validateFlowField<F extends FlowField>(
  name: F,
  value: unknown,
  prefix: string,
  violations: FieldViolation[],
): FlowControl[F] {
  const option = (VERSION_OPTIONS as readonly FlowOption[]).find((candidate) => candidate.name === name)!;
  return option.validate(value, `${prefix}${name}`, violations) as FlowControl[F];
}

/** Every option's field of a create body (absent = unset). */
export function validateFlowControl(
  body: Record<string, unknown>,
  prefix: string,
  violations: FieldViolation[],
): FlowControl {
  return each((option) => option.validate(body[option.name], `${prefix}${option.name}`, violations)) as FlowControl;
}

export function dryRunFlowControl(stored: unknown, payload: unknown): FlowControlDryRun {
  const flow = flowControlOf(stored) as Record<string, unknown>;
  return each((option) => option.dryRun!.view(flow[option.name] ?? null, payload)) as FlowControlDryRun;
}

/** What a run a person starts (rerun) carries for the published version's flow control; the filter does not apply. */
export function runFlowOf(stored: unknown, run: FlowRun): RunFlow | undefined {
  const flow = flowControlOf(stored) as Record<string, unknown>;
  let result: RunFlow | undefined;
  for (const option of VERSION_OPTIONS as readonly FlowOption[]) {
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
  | {
      verdict: 'start';
      flow: RunFlow | undefined;
      paused: boolean;
      release(): Promise<void>;
      /** The engine did not confirm the start (503): gives back what the options' `unavailable` say. */
      unavailable(): Promise<void>;
      started(executionId: string, repeat: boolean): Promise<void>;
    }
  | Exclude<FlowDecision, { verdict: 'start' }>;

const nothing = async (): Promise<void> => undefined;
/** The decision of a delivery no option has anything to say about: start, nothing to give back or follow up. */
const PLAIN_START: DeliveryDecision = Object.freeze({
  verdict: 'start',
  flow: undefined,
  paused: false,
  release: nothing,
  unavailable: nothing,
  started: nothing,
});

/**
 * Asks every option in order. A refusal gives back what earlier options took, and becomes the
 * 409 of the run the event already started, if any (a repeat is a 409 whatever its first delivery
 * became).
 */
export async function decideDelivery(
  sources: FlowSources,
  facts: Omit<FlowDelivery, 'runFails'>,
): Promise<DeliveryDecision> {
  const version = isObject(sources.version) ? sources.version : {};
  const live = isObject(sources.live) ? sources.live : {};
  const settingsOf = (FLOW_OPTIONS as readonly FlowOption[]).map((option) =>
    option.stored((option.scope === 'version' ? version : live)[option.name]),
  );
  // Nothing to ask (no option set, and no filtered event of this listener to answer a repeat of):
  // every option's decision without settings is START (test/unit/flow-registry.test.ts), so the
  // plain decision, without a turn per option.
  if (!facts.hasFilteredEvents && settingsOf.every((settings) => settings === null)) return PLAIN_START;
  const delivery: FlowDelivery = { ...facts, runFails: false };
  const releases: (() => Promise<void>)[] = [];
  const release = async () => {
    for (const give of releases.splice(0).reverse()) await give();
  };
  const onUnavailable: (() => Promise<void>)[] = [];
  const passed: { option: FlowOption; settings: unknown }[] = [];
  let flow: RunFlow | undefined;
  let paused = false;
  for (const [i, option] of (FLOW_OPTIONS as readonly FlowOption[]).entries()) {
    const settings = settingsOf[i]!;
    const decision = settings === null ? await option.decide(null, delivery) : await option.decide(settings, delivery);
    if (decision.verdict === 'refused') {
      await release();
      const existing = await facts.engine.runOf(facts.listenerId, facts.eventId);
      if (existing !== undefined) return { verdict: 'duplicate', executionId: existing };
      return decision;
    }
    if (decision.verdict !== 'start') {
      await release();
      return decision;
    }
    if (decision.release) releases.push(decision.release);
    if (decision.unavailable) onUnavailable.push(decision.unavailable);
    if (decision.paused) paused = true;
    if (settings !== null) passed.push({ option, settings });
    if (decision.run) {
      // The first expression that failed decides: the run fails at once, without a lane.
      flow = delivery.runFails
        ? flow
        : decision.run.error
          ? { error: decision.run.error }
          : { ...flow, ...decision.run };
      if (decision.run.error) delivery.runFails = true;
    }
  }
  return {
    verdict: 'start',
    flow,
    paused,
    release,
    unavailable: async () => {
      for (const give of onUnavailable.splice(0).reverse()) await give();
    },
    // A paused run asks nothing now (no lane: the resume asks it, in acceptance order).
    started: async (executionId, repeat) => {
      if (paused) return;
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
export {
  BREAKER_MAX_REASON,
  BREAKER_MAX_RUNS,
  BREAKER_PERIOD_SECONDS,
  breakerPeriodMs,
  breakerPeriodSeconds,
  CircuitBreakerSettings,
} from './circuit-breaker';
