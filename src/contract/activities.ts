/**
 * The activities of the automation workflow as the workflow sees them: their names, inputs and
 * results. activities/ implements them (`createActivities` returns an `AutomationActivities`); the
 * workflow code proxies them by this interface and never imports activities/.
 */
import type { CelContext } from '../cel';
import type {
  CallKeyScope,
  CallWebhookRequest,
  EffectContext,
  EffectInput,
  EffectName,
  LogLevel,
  OwnershipRef,
} from '../steps';
import type { LaneRequest } from './lanes';
import type { AutomationVersionSteps, EvaluatedStep } from './run';

export type { CallKeyScope, OwnershipRef };

export interface EvaluateStepInput {
  stepId: string;
  /** Field name → CEL expression. */
  expressions: Record<string, string>;
  ctx: CelContext;
}

/** What the workflow sends: the ids, the step, and who acts (`automation:<id>:<event id>`, for the audit trail). */
export interface OwnershipInput extends OwnershipRef {
  stepId?: string;
  actor?: string;
}

export interface CreatedOwnership extends OwnershipRef {
  /** RFC 3339 time the ownership was first recorded. */
  createdAt: string;
}

/**
 * A callWebhook activity's input: the step's evaluated request, the step, and the run whose call
 * keys it carries when that is not the activity's own run (a retry from the failed step continues
 * the original run).
 */
export type CallWebhookInput = CallWebhookRequest & Pick<EffectContext, 'stepId' | 'keysOf'>;

export interface CallWebhookOutput {
  status: number;
  /** A few response headers that are safe to keep (content-type, date, etag, request ids, ...). */
  headers: Record<string, string>;
  /** Parsed JSON when the response says it is JSON and parses; otherwise the text. */
  body: unknown;
}

/** The run's own activities, whatever its steps: evaluation, loading its version, log lines, its lane. */
export interface RunActivities {
  /** Evaluates every expression of a step; answers the step id and field name → JSON value. */
  evaluateStep(input: EvaluateStepInput): Promise<EvaluatedStep>;
  /** The steps of a published version (a run's own steps). */
  loadAutomationVersion(ref: { automationId: string; version: number }): Promise<AutomationVersionSteps>;
  /** Records a log step's line. */
  annotate(input: { stepId: string; level: LogLevel; line: string }): Promise<{ stepId: string; line: string }>;
  /** Signal-with-start of the run's lane: `acquire` for this run. */
  requestLanePermit(request: LaneRequest): Promise<void>;
  /** The ids among `runIds` of runs that have closed. */
  closedRuns(input: { runIds: string[] }): Promise<{ closed: string[] }>;
  /** Gives back the run's place in its lane's queue bound (store; idempotent): the run ends. */
  releaseLanePlace(input: { lane: string; runId: string }): Promise<void>;
}

/**
 * One activity per effect a step kind declares (src/steps, `defineEffect`), named after it: it gets
 * the effect's input and the EffectContext. Derived from the step registry, so a kind with a new
 * effect changes nothing here, and activities/ does not compile until it registers that activity.
 */
export type EffectActivities = { [Name in EffectName]: (input: EffectInput<Name> & EffectContext) => Promise<object> };

/** The activities of a bulk action's workflow (workflows/bulk-action.ts); the set they walk is in the store. */
export interface BulkActionActivities {
  /** Acts on the next `pageSize` runs not yet acted on, `concurrency` at a time; `done` when none is left or the action was stopped. */
  bulkActionPage(input: {
    bulkActionId: string;
    pageSize: number;
    concurrency: number;
  }): Promise<{ done: boolean; acted: number }>;
  /** Ends the action (COMPLETED, or CANCELED when it was stopped) and completes its audit record. */
  finishBulkAction(input: { bulkActionId: string }): Promise<{ state: string }>;
}

export type AutomationActivities = RunActivities &
  EffectActivities &
  BulkActionActivities &
  GrantActivities &
  ScheduleActivities;

/** A schedule action's run as the starter starts it (its child): the options of the run's start. */
export interface PreparedScheduledRun {
  executionId: string;
  /** The run's input, memo, untyped search attributes and summary (as the engine's own start gives them). */
  args: unknown[];
  memo: Record<string, unknown>;
  searchAttributes: Record<string, string[]>;
  staticSummary: string;
}

/** The activities of a schedule's action (workflows/scheduled-run.ts). */
export interface ScheduleActivities {
  /**
   * Records the action (automation, scheduled time, kind, fired time; the first record of a time
   * stays) and answers the run to start, or `gone` when the automation is not a published schedule
   * automation. The run's id is derived from the automation and the time: a repeat answers the same.
   */
  prepareScheduledRun(input: {
    automationId: string;
    scheduledAt: string;
    firedAt: string;
    kind: 'scheduled' | 'backfill' | 'manual';
  }): Promise<{ run: PreparedScheduledRun } | { skip: 'gone' }>;
}

/**
 * One call a grant's provisioning makes and waits for: the phase and step path, the attempt (a
 * person's retry is a new one), what answers it (a webhook's receiver, absent in histories before
 * the other members; a person's task; a delegated child grant), and `undo` when it takes back a
 * provision step that was done (a later one failed: phase `deprovision`, the provision step's path).
 */
export interface ProvisioningCall {
  phase: 'provision' | 'deprovision';
  step: string;
  attempt: number;
  member?: 'webhook' | 'manual' | 'delegated';
  undo?: boolean;
}

/** What a grant's activity answers: the grant's state and expiry after it, and a webhook call the workflow makes next. */
export interface GrantStep {
  state: string;
  expiresAt: string | null;
  call?: ProvisioningCall;
}

/** How a call ended, as the workflow records it: done, or failed with the error the grant shows. */
export type CallOutcome = { ok: true } | { ok: false; error: string };

/** The activities of a grant's workflow (workflows/grant.ts): each reads and writes the grant's row, idempotently. */
export interface GrantActivities {
  /** Runs the grant's provisioning when it is PROVISIONING; answers its state after it. */
  provisionGrant(input: { grantId: string }): Promise<GrantStep>;
  /** Moves a GRANTED grant whose expiresAt has come to DEPROVISIONING (reason `expired`). */
  expireGrant(input: { grantId: string }): Promise<GrantStep>;
  /** Runs the deprovisioning of a DEPROVISIONING grant; REVOKED when it is done. */
  deprovisionGrant(input: { grantId: string; attempt?: number }): Promise<GrantStep>;
  /** Records how a call ended and moves the grant on (its next call, GRANTED, FAILED, REVOKED, or as it was). */
  finishProvisioningCall(input: ProvisioningCall & { grantId: string; outcome: CallOutcome }): Promise<GrantStep>;
  /** How a delegated step's child grant stands: its outcome, or `null` while it is being provisioned. */
  checkDelegation(input: ProvisioningCall & { grantId: string }): Promise<{ outcome: CallOutcome | null }>;
  /**
   * POSTs the grant to its provisioning webhook: `done` (2xx), `accepted` (202: a callback follows),
   * or `failed` (an answer retrying cannot change); 5xx, 429 and network errors throw (retried). A
   * `done` or `failed` call is recorded by the activity itself, which answers the grant's next
   * `step` (histories from before 0.13.0 hold answers without it: the workflow records those with
   * finishProvisioningCall).
   */
  callProvisioningWebhook(
    input: ProvisioningCall & { grantId: string },
  ): Promise<({ status: 'done' | 'accepted' } | { status: 'failed'; error: string }) & { step?: GrantStep }>;
}
