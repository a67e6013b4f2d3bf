/**
 * Shapes shared by the API, the workflow and the activities: the run's input, its state, and the
 * names of its query and failure types. Types and constants only: safe to import from workflow code.
 * What a step is lives in src/steps (the step registry).
 */
import type { ApprovalContext, StepDefinition, StepKind } from '../steps';

export type { StepDefinition, StepKind };

/** Failure type of a step expression that cannot be evaluated (activities/steps.ts); the workflow shows its field and reason. */
export const CEL_EVALUATION_FAILURE = 'CelEvaluationError';

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
  /** A rerun or retry: the run it repeats. */
  rerunOf?: string;
  /**
   * A retry from the failed step: the recorded results of the steps before it, reused as they are
   * (not run again); the run continues at `fromStepId`.
   */
  resume?: {
    fromStepId: string;
    steps: Array<{ id: string; status: 'DONE' | 'SKIPPED'; output: Record<string, unknown> | null }>;
    /**
     * The run whose call keys this retry's callWebhook requests carry: the original run (the first
     * of a chain of retries), so that the failed call, repeated, carries the key it had. Absent in
     * retries started before call keys existed: their calls carry their own run's keys.
     */
    keysOf?: { workflowId: string; runId: string };
  };
  /** Flow control of the run's version, decided by whoever started the run (absent: none). */
  flow?: RunFlow;
}

/** Workflow id of the run for one event: the idempotency key (the 409 of a repeat is Temporal's). */
export function runWorkflowId(listenerId: string, eventId: string): string {
  return `webhook:${listenerId}:${eventId.toLowerCase()}`;
}

/**
 * What flow control decided for a run when it was started (src/flow): the lane
 * that admits it, or an expression that failed (the run then fails at once, naming the field).
 */
export interface RunFlow {
  queue?: RunQueue;
  /**
   * The circuit breaker was open when the event was accepted: the run waits, PAUSED, for the
   * resume signal before it runs anything (then asks its lane, when it has a queue).
   */
  paused?: { since: string };
  /** The field whose expression failed (`filter`, `concurrency.key`, …: the option's). */
  error?: { field: string; message: string };
}

export interface RunQueue {
  /** The concurrency key's value (evaluated once, when the event was accepted). */
  key: string;
  /** Workflow id of the key's lane (workflows/lane.ts). */
  lane: string;
  /** The version's `concurrency.limit`. */
  limit: number;
  /** True when the starter asked the lane for a permit itself, right after the start (in acceptance order). */
  requested: boolean;
}

/** Failure type of a run whose filter or concurrency key could not be evaluated (never retried). */
export const FLOW_CONTROL_FAILED = 'FlowControlFailed';

/** Name of the patch that admits runs through a lane (docs/upgrades.md#live-patches). */
export const FLOW_CONTROL_PATCH = 'flow-control-lane';

/**
 * Name of the patch that runs the first attempt of a `firstAttemptLocal` effect as a local activity
 * (docs/upgrades.md#live-patches).
 */
export const LOCAL_FIRST_ATTEMPT_PATCH = 'effect-first-attempt-local';

/**
 * Name of the patch from which an effect that makes its first attempt locally evaluates its step's fields itself
 * (docs/upgrades.md#live-patches).
 */
export const EVALUATE_IN_EFFECT_PATCH = 'effect-evaluates-step';

/** Failure type of an effect whose step's evaluated field will not do (e.g. an ownership id that is not a non-empty string); never retried. */
export const STEP_VALUE_INVALID = 'StepValueInvalid';

/** Signal names of a lane (workflows/lane.ts) and of the run it admits. */
export const LANE_ACQUIRE_SIGNAL = 'acquire';
export const LANE_RELEASE_SIGNAL = 'release';
export const RUN_GRANT_SIGNAL = 'grant';

/**
 * Name of the patch from which a lane names itself in its grants and ignores a release or an ask
 * not meant for it, and a queued run takes a grant only from its own lane; also the patch from which
 * a lane keeps its queue's bound in the `queueFull` memo (docs/upgrades.md#live-patches).
 */
export const LANE_PROTOCOL_PATCH = 'lane-names-its-grants';

/**
 * Name of the patch from which a run marks itself with the ApprovalWait search attribute (the
 * waiting step's id) while a step waits for approval, so the approvals inbox is one visibility
 * query (docs/upgrades.md#live-patches).
 */
export const APPROVAL_WAIT_PATCH = 'approval-wait-search-attribute';

/**
 * The memo a lane keeps (from the `lane-names-its-grants` patch): true while its queue is at the
 * bound its asks carry. Information only: the API bounds a key's queue by its places in the store.
 */
export const LANE_QUEUE_FULL_MEMO = 'queueFull';

export interface LaneAcquire {
  /** Workflow id of the run asking. */
  runId: string;
  limit: number;
  /** The lane the run was recorded for (absent in asks sent without LANE_PROTOCOL_PATCH): a lane ignores an ask naming another. */
  lane?: string;
  /** The most runs the lane may have waiting, as the asking API process is configured (LANE_QUEUE_LIMIT). */
  maxWaiting?: number;
}

/** The grant's argument (under LANE_PROTOCOL_PATCH; grants sent without it carry none): the lane that grants. */
export interface LaneGrant {
  lane: string;
}

/** A lane's state, carried across continue-as-new. */
export interface LaneState {
  automationId: string;
  /** The lane's own workflow id (absent in lanes started without LANE_PROTOCOL_PATCH: then the workflow id it runs under). */
  lane?: string;
  limit: number;
  /** The most runs it may have waiting before it says its queue is full (absent: never says so). */
  maxWaiting?: number;
  /** Runs holding a permit. */
  holders: string[];
  /** Runs waiting, in arrival order. */
  waiting: string[];
  /** Runs that gave their permit back lately (a late repeat of their request is ignored); bounded. */
  released: string[];
}

/** The steps of one published version, as the worker loads them. */
export interface AutomationVersionSteps {
  automationName: string;
  steps: StepDefinition[];
}

/** NOT_RUN: a step that never started in a run that closed (the readers mark it; the workflow never reports it). */
export type StepStatus =
  'PENDING' | 'RUNNING' | 'WAITING' | 'WAITING_FOR_APPROVAL' | 'DONE' | 'SKIPPED' | 'FAILED' | 'NOT_RUN';

export interface StepResult {
  id: string;
  kind: StepKind;
  status: StepStatus;
  output: Record<string, unknown> | null;
  error: string | null;
  /** A waitForApproval step that started waiting (under APPROVAL_CONTEXT_PATCH): what its approver reads. */
  approval?: ApprovalContext;
  /** RFC 3339 time the step started (the run's own clock: state only, no command), and when it ended. */
  startedAt?: string;
  finishedAt?: string;
  /** A step whose effect runs in an activity: every attempt of the effect so far, a first local one included (from the history). */
  attempts?: number;
}

/** Name of the workflow query that answers the RunState of a run. */
export const RUN_STATE_QUERY = 'state';

export interface RunState {
  status: 'QUEUED' | 'PAUSED' | 'RUNNING' | 'COMPLETED' | 'FAILED';
  steps: StepResult[];
  /** While QUEUED: the concurrency key the run waits for. */
  queue?: { key: string };
  /** While PAUSED: since when the circuit breaker holds the run. */
  paused?: { since: string };
}

/**
 * Name of the patch from which a run the circuit breaker paused waits for the resume signal
 * (docs/upgrades.md#live-patches).
 */
export const BREAKER_PATCH = 'circuit-breaker-pause';

/**
 * Name of the patch from which a run records one patch marker in place of one for each run-loop
 * change before it (FLOW_CONTROL_PATCH, LANE_PROTOCOL_PATCH, APPROVAL_WAIT_PATCH, BREAKER_PATCH,
 * LOCAL_FIRST_ATTEMPT_PATCH, EVALUATE_IN_EFFECT_PATCH): a run that records it takes all of them
 * without asking. Each marker also costs the run a `TemporalChangeVersion` search-attribute upsert
 * (docs/upgrades.md#live-patches).
 */
export const ONE_MARKER_PATCH = 'run-records-one-patch-marker';

/**
 * Name of the patch from which a waitForApproval step evaluates its `title` and `details` when it
 * starts waiting and keeps them, with when it was asked and its deadline, in the run's memo
 * (APPROVALS_MEMO). It is also the run's one marker from then on, as ONE_MARKER_PATCH was before
 * it: a run that records it takes every change ONE_MARKER_PATCH takes without asking for either
 * (docs/upgrades.md#live-patches).
 */
export const APPROVAL_CONTEXT_PATCH = 'approval-context';

/** The memo field that holds, by step id, what the approver of each waitForApproval step reads (ApprovalContext). */
export const APPROVALS_MEMO = 'approvals';

/**
 * Name of the patch from which a run that holds a place in its key's lane (a queued run: `flow.queue`)
 * gives the place back in the store when it ends, once it has released its permit (a local activity,
 * `releaseLanePlace`): the queue's bound counts it no more (docs/upgrades.md#live-patches). Asked by
 * the run itself, not through ONE_MARKER_PATCH (it came after it).
 */
export const LANE_PLACE_PATCH = 'lane-place-release';

/**
 * Name of the patch from which a grant's workflow (workflows/grant.ts) follows a provisioning call
 * with the next one the store answers (a multiStep's steps, an undo, a deprovisioner's steps).
 * Asked only when a second call follows a first: a history from before has at most one call per
 * phase and never asks it (docs/upgrades.md#live-patches).
 */
export const GRANT_STEPS_PATCH = 'grant-provisioning-steps';

/** Signal that lets a paused run go (the API's resume: src/domain/circuit-breaker.ts through the run engine). */
export const BREAKER_RESUME_SIGNAL = 'breakerResume';

/** The resume signal's argument. */
export interface BreakerResume {
  /** True when the API asked the run's lane for a permit itself, in acceptance order, before this signal. */
  laneRequested: boolean;
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

/** Name of the update through which a person decides a waitForApproval step. */
export const DECIDE_UPDATE = 'decide';

/** The decide update's argument. */
export interface DecideInput {
  stepId: string;
  decision: 'approved' | 'rejected';
  /** Who decides: the API client id. */
  by: string;
  comment: string | null;
}

/** Failure types of the decide update's validator. */
export const UNKNOWN_STEP = 'UnknownStep';
export const STEP_NOT_WAITING = 'StepNotWaiting';

/** What the CEL local activity answers: the step it evaluated for, and the values. */
export interface EvaluatedStep {
  stepId: string;
  values: Record<string, unknown>;
}
