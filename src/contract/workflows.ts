/**
 * The workflows as the engine knows them: their type names and signatures, the query, update and
 * signal definitions and the search attributes the automation workflow sets. The Temporal adapter
 * (src/temporal) starts and addresses runs through these, by name, so it never imports the
 * workflow code; workflows/ registers its handlers on the same definitions. The names are what
 * recorded histories hold: never rename one. Safe in workflow code (definitions only, no I/O).
 */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import {
  BREAKER_RESUME_SIGNAL,
  DECIDE_UPDATE,
  RUN_STATE_QUERY,
  type AutomationRunInput,
  type BreakerResume,
  type DecideInput,
  type RunState,
} from './run';

/** Workflow type of automation runs (`automation` in workflows/automation.ts). */
export const AUTOMATION_WORKFLOW = 'automation';
export type AutomationWorkflow = (input: AutomationRunInput) => Promise<RunState>;

/** Workflow type of bulk actions (`bulkAction` in workflows/bulk-action.ts). */
export const BULK_ACTION_WORKFLOW = 'bulkAction';
export interface BulkActionInput {
  bulkActionId: string;
}
export type BulkActionWorkflow = (input: BulkActionInput) => Promise<{ state: string }>;

/** Query for the run's progress. */
export const stateQuery = defineQuery<RunState>(RUN_STATE_QUERY);
/** A person approves or rejects a waiting waitForApproval step; answers the run's state once the step has moved on. */
export const decideUpdate = defineUpdate<RunState, [DecideInput]>(DECIDE_UPDATE);
/** Lets a run the circuit breaker paused go (the API's resume, in acceptance order). */
export const breakerResumeSignal = defineSignal<[BreakerResume]>(BREAKER_RESUME_SIGNAL);

/** Search attribute a run holds while it waits in its lane (value QUEUED); the executions list reads it. */
export const FlowQueueKey = defineSearchAttributeKey('FlowQueue', SearchAttributeType.KEYWORD);
/** Search attribute a run holds while a step waits for approval (value: the step's id); the approvals inbox reads it. */
export const ApprovalWaitKey = defineSearchAttributeKey('ApprovalWait', SearchAttributeType.KEYWORD);

/**
 * Workflow type of one action of a schedule automation (`scheduledRun` in workflows/scheduled-run.ts):
 * its Temporal Schedule starts it (id `schedule:<automationId>-<scheduled time>`, the time read from
 * the id), a backfill or a manual trigger starts it with `kind` and the `times` it runs, one after
 * another. It starts each run as its child and stays open while the run is, so the Schedule's
 * overlap policy sees the run.
 */
export const SCHEDULED_RUN_WORKFLOW = 'scheduledRun';
export interface ScheduledRunInput {
  automationId: string;
  /** Absent for the Schedule's own actions (`scheduled`). */
  kind?: 'backfill' | 'manual';
  /** RFC 3339 scheduled times, run in order; absent for the Schedule's own actions (the one time in the workflow id). */
  times?: string[];
}
export type ScheduledRunWorkflow = (input: ScheduledRunInput) => Promise<ScheduledRunResult>;
export interface ScheduledRunResult {
  /** Runs started (and closed, whatever their outcome). */
  started: number;
  /** Times whose run existed before. */
  existed: number;
  /** Times not run: the automation is no longer a published schedule automation. */
  gone: number;
}

/** Workflow type of a grant's life (`grant` in workflows/grant.ts): one per grant, id `grant:<grantId>`. */
export const GRANT_WORKFLOW = 'grant';
export interface GrantWorkflowInput {
  grantId: string;
  /** Set by continue-as-new: provisioning is behind, the grant is held until `expiresAt` (ISO, null: standing). */
  held?: { expiresAt: string | null };
}
export type GrantWorkflow = (input: GrantWorkflowInput) => Promise<{ state: string }>;

/** What the API tells a grant's workflow: a revoke was asked, the expiry moved, a failed deprovision is retried. */
export type GrantSignal =
  | { type: 'revoke' }
  | { type: 'extend'; expiresAt: string }
  | { type: 'retry' }
  | {
      type: 'callback';
      phase: 'provision' | 'deprovision';
      step: string;
      attempt: number;
      status: 'done' | 'failed';
      message: string | null;
    };
/** Signal name of GrantSignal (never rename: histories hold it). */
export const GRANT_CHANGE_SIGNAL = 'grantChange';
export const grantChangeSignal = defineSignal<[GrantSignal]>(GRANT_CHANGE_SIGNAL);
