/**
 * `concurrency`: at most `limit` runs per key value execute at a time; the rest are QUEUED and
 * start in the order their events were accepted. The run is admitted through its key's lane
 * (workflows/lane.ts, which reads the lane from the run's input: `RunFlow.queue`). At delivery
 * time the run takes a place in its key's lane in the store (src/store/lane-places.ts: one
 * statement, exact across API processes): at most `limit` + LANE_QUEUE_LIMIT places, so at most
 * LANE_QUEUE_LIMIT runs wait; past it the delivery answers 429 and records nothing. The run gives
 * its place back when it ends; a full lane first reconciles the places of runs that ended without
 * a word or never started. Once the run started, the intake asks its lane for a permit before
 * answering, so a key's events are admitted in order.
 */
import { z } from 'zod';
import { runWorkflowId, type RunFlow } from '../contract/run';
import { isObject } from '../json';
import { claimLaneCheck, freeLanePlaces, oldestLanePlaces, takeLanePlace } from '../store/lane-places';
import type { Db } from '../store/db';
import {
  type KeyView,
  defineFlowOption,
  expressionSchema,
  keyHash,
  keyValue,
  keyView,
  keyViewSchema,
  knownFields,
  START,
  validExpression,
  validInteger,
  type FlowEngine,
  type FlowRun,
} from './option';

export const CONCURRENCY_LIMITS = [1, 100] as const;

/** Retry-After of a delivery refused because its key's queue is full (a queue drains as runs finish: no exact time). */
export const LANE_QUEUE_RETRY_AFTER_SECONDS = 30;
/** A full lane's places are reconciled against the engine at most once per this interval (across API processes). */
export const LANE_RECONCILE_INTERVAL_MS = 10_000;
/** The oldest places one reconcile asks the engine about. */
const LANE_RECONCILE_BATCH = 256;
/**
 * A place whose run the engine does not know is freed only once it is this old: younger, its
 * delivery's start may still be on its way (far beyond the start timeout and the lane request).
 */
export const UNSTARTED_PLACE_MS = 60_000;

export const ConcurrencySettings = z
  .strictObject({
    limit: z.number().int().min(CONCURRENCY_LIMITS[0]).max(CONCURRENCY_LIMITS[1]),
    key: expressionSchema()
      .nullish()
      .meta({ description: 'The key runs are counted by; absent: one key for the whole automation.' }),
  })
  .meta({
    id: 'ConcurrencySettings',
    description:
      'At most `limit` runs per key value execute at a time; the rest are QUEUED and start in the order their events were accepted.',
  });

export interface ConcurrencySettings {
  /** Runs per key value that execute at a time, 1..100. */
  limit: number;
  /** CEL over ctx.trigger; null: one key for the whole automation. */
  key: string | null;
}

/** Workflow id of the lane that admits the runs of one automation with one concurrency key value. */
export function laneWorkflowId(automationId: string, key: string): string {
  return `lane:${automationId}:${keyHash(key)}`;
}

/** The lane that admits a run with these settings and this payload, or the key's evaluation error. */
function runQueueOf(settings: ConcurrencySettings, run: FlowRun): Partial<RunFlow> {
  const key = keyValue(settings.key, run.payload);
  if (!key.ok) return { error: { field: 'concurrency.key', message: key.error } };
  return {
    queue: {
      key: key.value,
      lane: laneWorkflowId(run.automationId, key.value),
      limit: settings.limit,
      requested: run.requested,
    },
  };
}

export const concurrency = defineFlowOption<'concurrency', ConcurrencySettings, KeyView>({
  name: 'concurrency',
  scope: 'version',
  schema: ConcurrencySettings as unknown as z.ZodType<ConcurrencySettings>,
  validate(value, field, violations) {
    if (value === undefined || value === null) return null;
    if (!isObject(value)) {
      violations.push({ field, description: 'must be an object' });
      return null;
    }
    knownFields(value, ['limit', 'key'], field, violations);
    return {
      limit: validInteger(value.limit, CONCURRENCY_LIMITS, `${field}.limit`, violations),
      key: validExpression(value.key, `${field}.key`, violations),
    };
  },
  stored: (value) => (isObject(value) ? (value as unknown as ConcurrencySettings) : null),
  runFlow: runQueueOf,
  async decide(settings, delivery) {
    // A run that fails at once (an earlier expression) is not queued.
    if (settings === null || delivery.runFails) return START;
    const run = runQueueOf(settings, {
      automationId: delivery.automationId,
      payload: delivery.payload,
      requested: true,
    });
    const queue = run.queue;
    if (!queue) return { verdict: 'start', run };
    const { db, engine } = delivery;
    // The run's id is the event's: a repeat of an accepted event finds its own place and is let through (to its 409).
    const runId = runWorkflowId(delivery.listenerId, delivery.eventId);
    const cap = settings.limit + delivery.laneQueueLimit;
    let taken = await takeLanePlace(db, queue.lane, runId, cap);
    if (!taken.admitted && (await reconcileLane(db, engine, queue.lane)) > 0)
      taken = await takeLanePlace(db, queue.lane, runId, cap);
    if (!taken.admitted) {
      return {
        verdict: 'refused',
        reason: 'queue_full',
        message: `the queue of this event's concurrency key is full; retry after ${LANE_QUEUE_RETRY_AFTER_SECONDS} s with the same Webhook-Event-Id`,
        retryAfterSeconds: LANE_QUEUE_RETRY_AFTER_SECONDS,
      };
    }
    // Gives back only the place this delivery took (a repeat, a later refusal), never its first delivery's.
    // A start the engine did not confirm (503) keeps its place: it may have been recorded after all
    // (the sender's retry finds the place; a run that never started is reconciled).
    return {
      verdict: 'start',
      run,
      release: async () => {
        if (taken.inserted) await freeLanePlaces(db, queue.lane, [runId]);
      },
    };
  },
  /**
   * The lane request, in acceptance order: before the answer, so a sender that sends a key's events
   * one after the other gets them admitted in that order (when it fails the answer is 503: the run
   * is recorded, the sender's retry gets the 409, which asks again). A repeat asks too — its first
   * delivery may have ended between the start and its request — and asks the lane the run was
   * recorded for, never one computed from the repeat's body (which may name another key). A lane
   * ignores a request it already has.
   */
  async started(settings, delivery, executionId, repeat) {
    const { engine } = delivery;
    let queue: { lane: string; limit: number } | undefined;
    if (repeat) queue = await engine.recordedQueue(executionId);
    else if (!delivery.runFails)
      queue = runQueueOf(settings, {
        automationId: delivery.automationId,
        payload: delivery.payload,
        requested: true,
      }).queue;
    if (!queue) return;
    await engine.requestLanePermit({
      automationId: delivery.automationId,
      lane: queue.lane,
      runId: executionId,
      limit: queue.limit,
      automationName: delivery.automationName,
    });
  },
  dryRun: {
    schema: keyViewSchema(
      'The concurrency key value the run would queue under ("" without a key); null without a limit.',
    ),
    view: keyView,
  },
});

/**
 * Frees the places of a full lane whose runs have closed (terminated or timed out: no code of the
 * run gave the place back) or were never started (a delivery that stopped between its place and
 * its start), at most once per LANE_RECONCILE_INTERVAL_MS per lane. Answers how many were freed; an
 * engine that does not answer frees nothing (the delivery is refused as the lane is full).
 */
export async function reconcileLane(db: Db, engine: FlowEngine, lane: string): Promise<number> {
  if (!(await claimLaneCheck(db, lane, LANE_RECONCILE_INTERVAL_MS))) return 0;
  const places = await oldestLanePlaces(db, lane, LANE_RECONCILE_BATCH);
  let gone: { closed: string[]; unknown: string[] };
  try {
    gone = await engine.runsGone(places.map((place) => place.runId));
  } catch {
    return 0;
  }
  const old = new Set(places.filter((place) => place.ageMs >= UNSTARTED_PLACE_MS).map((place) => place.runId));
  return freeLanePlaces(db, lane, [...gone.closed, ...gone.unknown.filter((runId) => old.has(runId))]);
}
