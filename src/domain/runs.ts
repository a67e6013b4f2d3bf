/**
 * The runs port: how the delivery intake starts automation runs and the API asks after them. The
 * Temporal adapter implements it (src/temporal/runs.ts `TemporalRuns`).
 */
import type { AutomationRunInput, RunQueue } from '../contract/run';
import type { LaneRequest } from '../contract/lanes';

export { DuplicateEventError, WorkflowEngineUnavailableError } from '../errors';

export interface StartedRun {
  /** The run's id (its workflow id; the HTTP API's `executionId`). */
  runId: string;
}

/** What operators see of a run in the Web UI and its memo (not part of the run's input). */
export interface RunDisplay {
  automationName: string;
}

export interface AutomationRuns {
  /**
   * Starts one run; resolves only once Temporal has durably accepted it.
   * Throws DuplicateEventError when the event id was already received by the listener,
   * WorkflowEngineUnavailableError when Temporal cannot be reached.
   */
  start(input: AutomationRunInput, display: RunDisplay): Promise<StartedRun>;
  /** Resolves when the workflow engine answers (readiness checks); rejects otherwise. */
  ping(): Promise<void>;
  /**
   * Asks the lane of a run's concurrency key for a permit, right after the run's start, so that
   * requests reach the lane in the order events were accepted (src/temporal/lanes.ts). Throws
   * WorkflowEngineUnavailableError; the run repeats the request itself when it gets no permit.
   */
  requestLanePermit?(request: Omit<LaneRequest, 'taskQueue'>): Promise<void>;
  /**
   * True when the lane's queue is at its bound (LANE_QUEUE_LIMIT): the delivery answers 429 and
   * records nothing. Throws WorkflowEngineUnavailableError.
   */
  laneQueueFull?(lane: string): Promise<boolean>;
  /**
   * The lane a run was recorded for when it was started (its input's `flow.queue`), undefined for a
   * run without one: a repeat of its event asks that lane, never one computed from the repeat's body.
   * Throws WorkflowEngineUnavailableError.
   */
  recordedQueue?(runId: string): Promise<RunQueue | undefined>;
  /**
   * The run started for this event, if there is one (the repeat check of a filtered or rate-limited
   * delivery, which starts nothing). Throws WorkflowEngineUnavailableError.
   */
  runOf?(listenerId: string, eventId: string): Promise<string | undefined>;
}
