/**
 * A run's request to the lane of its concurrency key (workflows/lane.ts), as the workflow hands it
 * to its `requestLanePermit` activity and the API sends it after a start (src/domain/engine.ts).
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
