/**
 * The lanes of flow control as the activities see them: a port the Temporal adapter implements
 * (src/temporal/lanes.ts), so that the activities need not import the adapter.
 */

export interface LaneRequest {
  automationId: string;
  /** The lane's workflow id (src/flow/concurrency.ts laneWorkflowId). */
  lane: string;
  runId: string;
  limit: number;
  taskQueue: string;
  /** The most runs the lane may have waiting, as the asker is configured (LANE_QUEUE_LIMIT); a run's own repeat leaves it out. */
  maxWaiting?: number;
  /** For the Web UI: what the lane admits (never the key's value: it may be personal data). */
  automationName?: string;
}

export interface Lanes {
  /** Asks the lane for a permit for `request.runId` (idempotent per run id); starts the lane when needed. */
  requestPermit(request: LaneRequest): Promise<void>;
  /** Of `runIds`, those that are closed (or unknown). */
  closedRuns(runIds: string[]): Promise<string[]>;
}
