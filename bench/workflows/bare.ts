/**
 * The benchmark's baseline workflows: three no-op activities in a row, nothing else (`bare`), and
 * a workflow that returns at once (`empty`, the engine's own round trip: start → first workflow
 * task → completion → result, the floor no run on this server and client can beat). `npm run
 * bench` compares the automation workflow (POST → three steps → result) against both, on the same
 * server.
 * Deterministic: imports only @temporalio/workflow and types.
 */
import { proxyActivities } from '@temporalio/workflow';
import type { BareActivities } from '../bare-activities';

const acts = proxyActivities<BareActivities>({ startToCloseTimeout: '30 seconds' });

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
