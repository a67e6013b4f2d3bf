/**
 * The API's view of automation runs on Temporal. The webhook receiver starts runs through it; the
 * executions API reads them. `TemporalRuns` is the real implementation.
 */
import type { AutomationRunInput } from '../../workflows/types';

export class DuplicateEventError extends Error {
  override name = 'DuplicateEventError';
  constructor(readonly executionId: string) {
    super('event already received');
  }
}

export class WorkflowEngineUnavailableError extends Error {
  override name = 'WorkflowEngineUnavailableError';
}

export interface StartedRun {
  executionId: string;
}

export interface AutomationRuns {
  /**
   * Starts one run; resolves only once Temporal has durably accepted it.
   * Throws DuplicateEventError when the event id was already received by the listener,
   * WorkflowEngineUnavailableError when Temporal cannot be reached.
   */
  start(input: AutomationRunInput): Promise<StartedRun>;
}

/** Workflow id of the run for one event: the idempotency key. */
export function runWorkflowId(listenerId: string, eventId: string): string {
  return `webhook:${listenerId}:${eventId.toLowerCase()}`;
}
