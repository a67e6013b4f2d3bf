/**
 * Runs: the records the run engine answers (src/domain/engine.ts), and the ids of reruns. "Run" in
 * the code is "execution" in the HTTP API (src/domain/executions.ts); what a rerun starts is
 * src/domain/reruns.ts.
 */
import type { CallKeyScope } from '../webhooks/standard-webhooks';
import type { StepResult } from '../contract/run';
import type { ApprovalContext } from '../steps';

export { DuplicateEventError, WorkflowEngineUnavailableError } from '../errors';

/** The statuses a run shows (QUEUED: waiting for its concurrency key; PAUSED: held by the circuit breaker). */
export const RUN_STATUSES = ['QUEUED', 'PAUSED', 'RUNNING', 'COMPLETED', 'FAILED', 'CANCELED', 'TERMINATED'] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];

/** A run as a list shows it. */
export interface RunSummary {
  id: string;
  eventId: string | null;
  status: RunStatus;
  startedAt: string;
  closedAt: string | null;
  /** The automation version the run executes (null when the engine does not say). */
  version: number | null;
}

/** A run in the list across automations: its automation, its key while QUEUED, the step waiting for a person. */
export interface RunListEntry extends RunSummary {
  automationId: string;
  /** The name the run started under (the domain replaces it with the automation's current one). */
  automationName: string;
  queue?: { key: string };
  waitingForApproval?: { stepId: string };
  /** With `waitingForApproval`: what its approver reads (runs recorded from the `approval-context` patch). */
  approval?: ApprovalContext;
}

/** A step as a run shows it: a step that sends the call's key (callWebhook, notify) also shows that key. */
export type RunStep = StepResult & {
  idempotencyKey?: string;
  /** A waitForApproval step that started waiting: what its approver reads (kept once decided). */
  approval?: ApprovalContext;
};

/** One run with its steps. */
export interface RunRecord extends RunSummary {
  automationId: string;
  /** The automation's name when the run started (null when the engine does not say). */
  automationName: string | null;
  /** The run this one reruns or retries (null for a run started by an event). */
  rerunOf: string | null;
  /** The reruns and retries of this run, oldest first (with its bulk reruns once read through `readRun`, src/domain/reruns.ts). */
  reruns: string[];
  /** The run whose call keys this run's calls carry: its own, or the original's for a retry from the failed step. */
  callKeysOf: CallKeyScope;
  /** Why a run that did not complete stopped (the failed step's message, a termination reason). */
  error: string | null;
  steps: RunStep[];
  /** While QUEUED: the concurrency key value the run waits for. */
  queue?: { key: string };
  /** While PAUSED: since when the circuit breaker holds the run. */
  paused?: { since: string };
  /** The payload the run was started with (`ctx.trigger`), decoded; undefined when the engine could not say. */
  trigger?: unknown;
  /** The run's trace (its start's OpenTelemetry trace id), when it was started traced. */
  traceId?: string;
}

/** A run that can still change (the engine holds it open). */
export function isOpen(status: RunStatus): boolean {
  return status === 'RUNNING' || status === 'QUEUED' || status === 'PAUSED';
}

// ---------------------------------------------------------------- reruns

/** A rerun's id: the original's, with `:rerun-<n>`; the first free n is taken. */
export function rerunWorkflowId(originalId: string, n: number): string {
  return `${originalId}:rerun-${n}`;
}

/** The id of the run a bulk rerun starts: derived from the original and the bulk action, so a retry never starts a second. */
export function bulkRerunId(runId: string, bulkActionId: string): string {
  return `${runId}:rerun-bulk-${bulkActionId}`;
}

/** The bulk action whose rerun `executionId` is, when it is one of `rerunOf`. */
export function bulkActionOfRerunId(executionId: string, rerunOf: string): string | undefined {
  const prefix = `${rerunOf}:rerun-bulk-`;
  return executionId.startsWith(prefix) && executionId.length > prefix.length
    ? executionId.slice(prefix.length)
    : undefined;
}
