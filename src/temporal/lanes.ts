/**
 * The client side of lanes (workflows/lane.ts): asking a key's lane for a permit for a run, with
 * signal-with-start (the lane is started when it is not running), and telling which runs have
 * closed. Used by the API right after it starts a run, and by the run's activities.
 */
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { LANE_ACQUIRE_SIGNAL, LANE_QUEUE_FULL_MEMO, type LaneAcquire, type LaneState } from '../contract/run';
import type { LaneRequest, Lanes } from '../contract/lanes';

export type { LaneRequest };

/** Asks the lane for a permit for `runId` (idempotent per run id); starts the lane when needed. */
export async function requestLanePermit(client: Client, request: LaneRequest): Promise<void> {
  const initial: LaneState = {
    automationId: request.automationId,
    lane: request.lane,
    limit: request.limit,
    holders: [],
    waiting: [],
    released: [],
  };
  // By the workflow type's name (workflows/lane.ts `lane`, whose one argument is a LaneState), so
  // that this module, an activity's dependency, does not import the workflow code.
  await client.workflow.signalWithStart<(state: LaneState) => Promise<void>, [LaneAcquire]>('lane', {
    workflowId: request.lane,
    taskQueue: request.taskQueue,
    args: [initial],
    signal: LANE_ACQUIRE_SIGNAL,
    // The ask names its lane: a lane ignores an ask meant for another (workflows/lane.ts).
    signalArgs: [
      {
        runId: request.runId,
        limit: request.limit,
        lane: request.lane,
        ...(request.maxWaiting ? { maxWaiting: request.maxWaiting } : {}),
      } satisfies LaneAcquire,
    ],
    staticSummary: `lane of ${request.automationName ?? `automation ${request.automationId}`} (concurrency ${request.limit})`,
  });
}

/**
 * True when the lane says its queue is at its bound (the `queueFull` memo it keeps, read without a
 * worker); false when the lane is not running.
 */
export async function laneQueueFull(client: Client, lane: string): Promise<boolean> {
  try {
    const description = await client.workflow.getHandle(lane).describe();
    return description.status.name === 'RUNNING' && description.memo?.[LANE_QUEUE_FULL_MEMO] === true;
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return false;
    throw err;
  }
}

/** Of `runIds`, those that are closed (or unknown: past retention, never started). */
export async function closedRuns(client: Client, runIds: string[]): Promise<string[]> {
  const closed: string[] = [];
  await Promise.all(
    runIds.map(async (runId) => {
      try {
        const description = await client.workflow.getHandle(runId).describe();
        if (description.status.name !== 'RUNNING') closed.push(runId);
      } catch (err) {
        if (err instanceof WorkflowNotFoundError) closed.push(runId);
        else throw err;
      }
    }),
  );
  return runIds.filter((id) => closed.includes(id));
}

/** The lanes port (src/contract/lanes.ts) on a Temporal client. */
export function temporalLanes(client: Client): Lanes {
  return {
    requestPermit: (request) => requestLanePermit(client, request),
    closedRuns: (runIds) => closedRuns(client, runIds),
  };
}
