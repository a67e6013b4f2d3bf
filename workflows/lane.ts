/**
 * The lane of one automation and one concurrency key value: it admits that key's runs, at most
 * `limit` at a time, in the order their requests arrived (docs/api.md, "Flow control between runs").
 *
 * A run asks with the `acquire` signal (the API sends it, with signal-with-start, right after the
 * run's start, so requests arrive in acceptance order; the run repeats it itself if no permit came,
 * which is harmless: a request is idempotent per run id). The lane answers with the `grant` signal
 * to the run, and the run gives its permit back with `release` when it closes in any way it can
 * see (completed, failed, canceled — also while still queued). A run that closes without a word
 * (terminated, timed out) is found by the lane itself: a grant it sends fails because the run is
 * gone, and every HOLDER_CHECK_INTERVAL_MS the lane asks the server which of its holders have closed.
 * A holder closed that way is freed within HOLDER_CHECK_INTERVAL_MS plus one check (under 60 s).
 *
 * Each request costs the lane a few history events: it continues-as-new with its state when the
 * server suggests it (or at MAX_HISTORY_EVENTS), and completes after IDLE_TIMEOUT without holders or
 * waiters (a later request starts it again: signal-with-start).
 */
import {
  condition,
  continueAsNew,
  defineSignal,
  getExternalWorkflowHandle,
  proxyLocalActivities,
  setCurrentDetails,
  setHandler,
  workflowInfo,
  allHandlersFinished,
} from '@temporalio/workflow';
import type { AutomationActivities } from '../src/contract/activities';
import { LANE_ACQUIRE_SIGNAL, LANE_RELEASE_SIGNAL, RUN_GRANT_SIGNAL, type LaneAcquire, type LaneState } from '../src/contract/run';

export const acquireSignal = defineSignal<[LaneAcquire]>(LANE_ACQUIRE_SIGNAL);
export const releaseSignal = defineSignal<[{ runId: string }]>(LANE_RELEASE_SIGNAL);
export const grantSignal = defineSignal<[]>(RUN_GRANT_SIGNAL);

/** How often the lane asks which of its holders have closed. */
export const HOLDER_CHECK_INTERVAL_MS = 30_000;
/** How long an empty lane waits for a request before it completes. */
const IDLE_TIMEOUT = '5 minutes';
/** Continue-as-new beyond this many history events even when the server does not suggest it yet. */
const MAX_HISTORY_EVENTS = 4000;
/** Released run ids remembered (so a late duplicate request is not granted again). */
const MAX_RELEASED = 500;

type Activities = AutomationActivities;

const local = proxyLocalActivities<Activities>({
  startToCloseTimeout: '20 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '10 seconds' },
});

export async function lane(input: LaneState): Promise<void> {
  const state: LaneState = {
    automationId: input.automationId,
    limit: input.limit,
    holders: [...input.holders],
    waiting: [...input.waiting],
    released: [...input.released],
  };
  let pendingGrants = 0;
  let changed = true;
  // Workflow time (deterministic): the holder check runs on a fixed cadence, however busy the lane.
  let nextCheckAt = Date.now() + HOLDER_CHECK_INTERVAL_MS;

  const free = (runId: string): void => {
    state.holders = state.holders.filter((id) => id !== runId);
    state.waiting = state.waiting.filter((id) => id !== runId);
    if (!state.released.includes(runId)) {
      state.released.push(runId);
      if (state.released.length > MAX_RELEASED) state.released.splice(0, state.released.length - MAX_RELEASED);
    }
    changed = true;
  };

  const grant = (runId: string): void => {
    pendingGrants += 1;
    getExternalWorkflowHandle(runId)
      .signal(grantSignal)
      // The run is gone (terminated, timed out, past retention): its permit is free again.
      .catch(() => free(runId))
      .finally(() => {
        pendingGrants -= 1;
      });
  };

  setHandler(acquireSignal, ({ runId, limit }) => {
    state.limit = limit;
    changed = true;
    if (state.holders.includes(runId)) grant(runId); // a repeated request: the grant may have been missed
    else if (!state.waiting.includes(runId) && !state.released.includes(runId)) state.waiting.push(runId);
  });
  setHandler(releaseSignal, ({ runId }) => free(runId));

  for (;;) {
    while (state.holders.length < state.limit && state.waiting.length > 0) {
      const next = state.waiting.shift()!;
      state.holders.push(next);
      grant(next);
    }
    changed = false;
    setCurrentDetails(`holders: ${state.holders.length}/${state.limit}, waiting: ${state.waiting.length}\n${state.holders.join('\n')}`);
    const info = workflowInfo();
    if (info.continueAsNewSuggested || info.historyLength > MAX_HISTORY_EVENTS) {
      await condition(() => pendingGrants === 0 && allHandlersFinished());
      await continueAsNew<typeof lane>(state);
    }
    if (state.holders.length === 0 && state.waiting.length === 0) {
      if (!(await condition(() => changed, IDLE_TIMEOUT))) {
        await condition(() => pendingGrants === 0 && allHandlersFinished());
        if (state.holders.length === 0 && state.waiting.length === 0) return;
      }
      nextCheckAt = Date.now() + HOLDER_CHECK_INTERVAL_MS;
      continue;
    }
    if (state.holders.length > 0 && Date.now() >= nextCheckAt) {
      nextCheckAt = Date.now() + HOLDER_CHECK_INTERVAL_MS;
      const { closed } = await local.closedRuns({ runIds: [...state.holders] });
      for (const runId of closed) free(runId);
      continue;
    }
    await condition(() => changed, Math.max(1, nextCheckAt - Date.now()));
  }
}
