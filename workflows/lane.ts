/**
 * The lane of one automation and one concurrency key value: it admits that key's runs, at most
 * `limit` at a time, in the order their requests arrived (docs/api.md#flow-control-between-runs).
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
 * Trust (under LANE_PROTOCOL_PATCH): an ask names the lane it is meant for, and a lane
 * ignores one naming another; a grant names the lane, and a run ignores one naming another; a
 * release of a run the lane neither holds nor queues changes nothing. An ask may carry the API's
 * queue bound (`maxWaiting`): the lane keeps the `queueFull` memo (information for the Web UI: the
 * bound the API enforces is its key's places in the store, src/store/lane-places.ts).
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
  patched,
  upsertMemo,
} from '@temporalio/workflow';
import type { AutomationActivities } from '../src/contract/activities';
import {
  LANE_ACQUIRE_SIGNAL,
  LANE_PROTOCOL_PATCH,
  LANE_QUEUE_FULL_MEMO,
  LANE_RELEASE_SIGNAL,
  RUN_GRANT_SIGNAL,
  type LaneAcquire,
  type LaneGrant,
  type LaneState,
} from '../src/contract/run';
import { admitWaiting, applyAsk, freeRun, queueFull, releaseApplies } from './lane-admission';

export const acquireSignal = defineSignal<[LaneAcquire]>(LANE_ACQUIRE_SIGNAL);
export const releaseSignal = defineSignal<[{ runId: string }]>(LANE_RELEASE_SIGNAL);
/** A lane's grant names the lane (grants of lanes without LANE_PROTOCOL_PATCH carry nothing). */
export const grantSignal = defineSignal<[grant?: LaneGrant]>(RUN_GRANT_SIGNAL);

/** How often the lane asks which of its holders have closed. */
export const HOLDER_CHECK_INTERVAL_MS = 30_000;
/** How long an empty lane waits for a request before it completes. */
const IDLE_TIMEOUT = '5 minutes';
/** Continue-as-new beyond this many history events even when the server does not suggest it yet. */
const MAX_HISTORY_EVENTS = 4000;

type Activities = AutomationActivities;

const local = proxyLocalActivities<Activities>({
  startToCloseTimeout: '20 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '10 seconds' },
});

export async function lane(input: LaneState): Promise<void> {
  const state: LaneState = {
    automationId: input.automationId,
    ...(input.lane !== undefined ? { lane: input.lane } : {}),
    limit: input.limit,
    ...(input.maxWaiting !== undefined ? { maxWaiting: input.maxWaiting } : {}),
    holders: [...input.holders],
    waiting: [...input.waiting],
    released: [...input.released],
  };
  // Under LANE_PROTOCOL_PATCH (docs/upgrades.md#live-patches) the lane names itself in its grants, ignores a release
  // or an ask not meant for it, and keeps the queueFull memo. Asked once, in the lane run's first activation
  // (a patch first asked after a local activity's result is not found again on replay): a lane
  // run started before keeps the old protocol until it continues-as-new or completes.
  const newProtocol = patched(LANE_PROTOCOL_PATCH);
  // Who this lane is, as its grants name it and asks must (a lane started without the patch knows it from its workflow id).
  const self = state.lane ?? workflowInfo().workflowId;
  // What the `queueFull` memo says now (it survives continue-as-new).
  let saysFull = workflowInfo().memo?.[LANE_QUEUE_FULL_MEMO] === true;
  let pendingGrants = 0;
  let changed = true;
  // Workflow time (deterministic): the holder check runs on a fixed cadence, however busy the lane.
  let nextCheckAt = Date.now() + HOLDER_CHECK_INTERVAL_MS;

  // Who is admitted, and what an ask or a release does, is decided in ./lane-admission (pure); the
  // lane sends the grants and keeps the memo.
  const free = (runId: string): void => {
    freeRun(state, runId);
    changed = true;
  };

  const grant = (runId: string): void => {
    pendingGrants += 1;
    const run = getExternalWorkflowHandle(runId);
    // A grant names its lane: a run takes a grant only from its own (workflows/automation.ts).
    (newProtocol ? run.signal(grantSignal, { lane: self }) : run.signal(grantSignal))
      // The run is gone (terminated, timed out, past retention): its permit is free again.
      .catch(() => free(runId))
      .finally(() => {
        pendingGrants -= 1;
      });
  };

  setHandler(acquireSignal, (ask) => {
    const outcome = applyAsk(state, ask, self, newProtocol);
    if (outcome === 'ignored') return;
    changed = true;
    if (outcome === 'regrant') grant(ask.runId); // a repeated request: the grant may have been missed
  });
  setHandler(releaseSignal, ({ runId }) => {
    if (releaseApplies(state, runId, newProtocol)) free(runId);
  });

  for (;;) {
    for (const next of admitWaiting(state)) grant(next);
    changed = false;
    const full = queueFull(state);
    if (newProtocol && full !== undefined) {
      // The memo says whether the queue is at the bound the asks carry (the API's 429 is the store's places).
      if (full !== saysFull) {
        upsertMemo({ [LANE_QUEUE_FULL_MEMO]: full });
        saysFull = full;
      }
    }
    setCurrentDetails(
      `holders: ${state.holders.length}/${state.limit}, waiting: ${state.waiting.length}\n${state.holders.join('\n')}`,
    );
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
