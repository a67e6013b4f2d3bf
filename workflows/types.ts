/**
 * Shapes shared by the API, the workflow and the activities: the run's input, its state, and the
 * names of its query and failure types. Types and constants only: safe to import from workflow code.
 * What a step is lives in src/steps (the step registry).
 */
import type { StepDefinition, StepKind } from '../src/steps';

export type { StepDefinition, StepKind };

/**
 * What a run is started with: references, not steps. The worker loads the steps of `version` from
 * the immutable published snapshot, so whoever can start a workflow cannot make the worker run
 * steps of their own. Later edits never change a started run.
 */
export interface AutomationRunInput {
  automationId: string;
  /** The published version the run executes. */
  version: number;
  listenerId: string;
  /** Lower-case UUID v4 from Webhook-Event-Id (or the original's, for a rerun). */
  eventId: string;
  /** RFC 3339 time the receiver accepted the event. */
  receivedAt: string;
  /** The parsed JSON body: `ctx.trigger`. */
  trigger: unknown;
}

/** The steps of one published version, as the worker loads them. */
export interface AutomationVersionSteps {
  automationName: string;
  steps: StepDefinition[];
}

export type StepStatus = 'PENDING' | 'RUNNING' | 'WAITING' | 'WAITING_FOR_APPROVAL' | 'DONE' | 'SKIPPED' | 'FAILED';

export interface StepResult {
  id: string;
  kind: StepKind;
  status: StepStatus;
  output: Record<string, unknown> | null;
  error: string | null;
}

/** Name of the workflow query that answers the RunState of a run. */
export const RUN_STATE_QUERY = 'state';

export interface RunState {
  status: 'RUNNING' | 'COMPLETED' | 'FAILED';
  steps: StepResult[];
}

/** Failure type of a run that stopped at a failed step; details `[{stepId, kind, error}]`. */
export const STEP_FAILED = 'StepFailed';
/** Failure type of a run whose automation version cannot be loaded (never retried). */
export const VERSION_NOT_FOUND = 'AutomationVersionNotFound';

/** Details of a STEP_FAILED failure. */
export interface StepFailureDetails {
  stepId: string;
  kind: StepKind | 'unknown';
  error: string;
}

/** What the CEL local activity answers: the step it evaluated for, and the values. */
export interface EvaluatedStep {
  stepId: string;
  values: Record<string, unknown>;
}
