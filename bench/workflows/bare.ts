/**
 * The benchmark's baseline workflows: three no-op activities in a row, nothing else (`bare`); the
 * same three as local activities (`localThree`: the cheapest shape a run of three steps, each an
 * activity, can take); four (`localFour`: the automation's shape, the version's load and three
 * steps); and a workflow that returns at once (`empty`, the engine's own round trip: start → first
 * workflow task → completion → result, the floor no run on this server and client can beat). `npm
 * run bench` compares the automation workflow (POST → three steps → result) against them, on the
 * same server.
 * Deterministic: imports only @temporalio/workflow and types.
 */
import { patched, proxyActivities, proxyLocalActivities, sleep, workflowInfo } from '@temporalio/workflow';
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import type { BareActivities } from '../bare-activities';

const acts = proxyActivities<BareActivities>({ startToCloseTimeout: '30 seconds' });
const locals = proxyLocalActivities<BareActivities>({ startToCloseTimeout: '30 seconds' });

/** Runs the three no-ops, passing the trigger payload along as the automation's steps do. */
export async function bare(input: { trigger: unknown }): Promise<string> {
  await acts.noopOne(input.trigger);
  await acts.noopTwo(input.trigger);
  await acts.noopThree(input.trigger);
  return 'done';
}

/** Returns at once: one workflow task, no activity. */
export async function empty(): Promise<string> {
  return 'done';
}

/** The three no-ops as local activities, in one workflow task: the floor of a three-step run whose steps are activities. */
export async function localThree(input: { trigger: unknown }): Promise<string> {
  await locals.noopOne(input.trigger);
  await locals.noopTwo(input.trigger);
  await locals.noopThree(input.trigger);
  return 'done';
}

/**
 * Four no-op local activities: the automation's own shape (the version's load, then three steps,
 * each an activity), nothing evaluated, checked or stored. Started by `bench/stack.ts`'s bare start
 * endpoint, it is the floor of the automation's POST → result on this server and client.
 */
export async function localFour(input: { trigger: unknown }): Promise<string> {
  await locals.noopOne(input.trigger);
  await locals.noopTwo(input.trigger);
  await locals.noopThree(input.trigger);
  await locals.noopOne(input.trigger);
  return 'done';
}

/**
 * `localFour` with the product's one store write in it: the version's load, a step, the ownership
 * statement on the automation's store (`ownOnly`), a step, each a no-op local activity but that
 * one. The floor of the automation's shape once the store write it cannot do without is counted.
 */
export async function localFourWithStore(input: { trigger: unknown }): Promise<string> {
  await locals.noopOne(input.trigger);
  await locals.noopTwo(input.trigger);
  await locals.ownOnly(input.trigger);
  await locals.noopThree(input.trigger);
  return 'done';
}

/**
 * `localFourWithStore` with what every run of the product records beside its steps: one patch
 * marker (with the `TemporalChangeVersion` upsert the core SDK adds to it), as the automation's
 * upgrade discipline asks of each new run (docs/upgrades.md#patching-a-change), and a summary on each local activity
 * (the Web UI's names for the steps). Started with the API's start options (search attributes, memo,
 * static summary) by bench/e2e.ts, it is the floor of a run with everything the product must record
 * and write, and none of its own work (no checks, no store reads, no CEL, no interpreter).
 */
export async function localFourAsProduct(input: { trigger: unknown }): Promise<string> {
  patched('bench-product-floor');
  const step = (summary: string) => ({ summary });
  await locals.noopOne.executeWithOptions(step('load automation'), [input.trigger]);
  await locals.noopTwo.executeWithOptions(step('step one'), [input.trigger]);
  await locals.ownOnly.executeWithOptions(step('step two: ownership'), [input.trigger]);
  await locals.noopThree.executeWithOptions(step('step three'), [input.trigger]);
  return 'done';
}

/**
 * The floor of a grant's time to GRANTED (bench/grants.ts): one activity that writes one row of
 * the store, and returns its time (ms since the epoch).
 */
export async function rowNow(): Promise<number> {
  return acts.recordRow();
}

/**
 * The floor of a grant's expiry (bench/grants.ts): a durable timer until `at` (ms since the epoch),
 * then one activity that writes one row; answers the write's time.
 */
export async function timerThenRow(input: { at: number }): Promise<number> {
  const waitMs = input.at - Date.now();
  if (waitMs > 0) await sleep(waitMs);
  return acts.recordRow();
}

/** The search attribute a Schedule sets on its action: the time it was scheduled for. */
const ScheduledStartTimeKey = defineSearchAttributeKey('TemporalScheduledStartTime', SearchAttributeType.DATETIME);

/**
 * The floor of a schedule automation's lateness (bench/schedules.ts): the action of a bare Temporal
 * Schedule, one activity; answers the scheduled time (ms since the epoch, the Schedule's search
 * attribute) and the time its activity started.
 */
export async function scheduledStamp(): Promise<{ scheduledAt: number; activityAt: number }> {
  const at = workflowInfo().typedSearchAttributes.get(ScheduledStartTimeKey);
  const activityAt = await acts.stampNow();
  return { scheduledAt: at ? new Date(at).getTime() : Number.NaN, activityAt };
}
