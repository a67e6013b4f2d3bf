/**
 * Runs as the executions API reads and controls them: one run as its detail shows it (the engine's
 * record, the bulk action that touched it, and what of it no API request recorded), approve or
 * reject a waiting step, cancel, terminate, rerun or retry from the failed step. Takes the bodies
 * as their schemas parsed them (api-schemas.ts), asks the run engine, and records who did what in
 * the audit trail once the engine has accepted it.
 */
import type { Db } from '../store/db';
import { recordAudit } from '../store/audit';
import { bulkActionOfRun } from '../store/bulk-actions';
import { automationNames } from '../store/automations';
import { FailedPreconditionError, NotFoundError } from '../errors';
import type { DecisionRequest, RerunRequest, TerminateRequest } from './api-schemas';
import type { RunEngine } from './engine';
import { unauditedParts } from './run-audit';
import { whoEndedIt, type ClosedBy, type RejectedBy } from './run-words';
import { publishedForRerun, readRun, startRerun } from './reruns';
import { isOpen, type RunRecord } from './runs';

/** A run as its detail shows it. */
export interface ExecutionView extends Omit<RunRecord, 'callKeysOf'> {
  /** The bulk action that canceled, terminated or reran this run, or that started it. */
  bulkActionId?: string;
  /** What of the run no API request recorded in the audit trail (src/domain/run-audit.ts). */
  unaudited: string[];
  /** A CANCELED or TERMINATED run: who stopped it and why. */
  closedBy?: ClosedBy;
  /** A run that FAILED on a person's or client's rejection. */
  rejectedBy?: RejectedBy;
}

/** The run as it is now, the bulk action that touched it, and what of it lacks an audit entry; 404 when there is none. */
export async function readExecution(db: Db, engine: RunEngine, executionId: string): Promise<ExecutionView> {
  const run = await readRun(db, engine, executionId);
  if (!run) throw new NotFoundError('automation execution');
  const [bulkActionId, names] = await Promise.all([
    bulkActionOfRun(db, executionId),
    automationNames(db, [run.automationId]),
  ]);
  const { callKeysOf: _keys, ...shown } = run;
  // The automation's current name; the one the run started under once it is deleted.
  const automationName = names.get(run.automationId) ?? run.automationName;
  const [unaudited, words] = await Promise.all([unauditedParts(db, run), whoEndedIt(db, run, bulkActionId)]);
  return {
    ...shown,
    automationName,
    ...(bulkActionId ? { bulkActionId } : {}),
    ...words,
    unaudited,
  };
}

/** NotFoundError for an unknown run, FailedPreconditionError for a closed one (naming its status when `showStatus`). */
async function requireOpen(engine: RunEngine, executionId: string, showStatus = true): Promise<void> {
  const execution = await engine.get(executionId);
  if (!execution) throw new NotFoundError('automation execution', executionId);
  if (!isOpen(execution.status)) throw runClosed(showStatus ? execution.status : undefined);
}

function runClosed(status?: string): FailedPreconditionError {
  return new FailedPreconditionError(status ? `the run is closed (${status})` : 'the run is closed', 'RUN_CLOSED');
}

export async function decideStep(
  db: Db,
  engine: RunEngine,
  actor: string,
  executionId: string,
  stepId: string,
  decision: 'approved' | 'rejected',
  body: DecisionRequest,
): Promise<void> {
  const comment = body.comment ?? null;
  // An admin may decide without reading runs: no message here names a run's or a step's status.
  await requireOpen(engine, executionId, false);
  await engine.decide(executionId, { stepId, decision, by: actor, comment });
  await recordAudit(db, {
    actor,
    action: decision === 'approved' ? 'automation_execution.approve' : 'automation_execution.reject',
    resourceType: 'automation_execution',
    resourceId: executionId,
    details: { stepId, comment },
  });
}

/** Asks the run to stop: a pending wait or approval ends, later steps do not run; status CANCELED. */
export async function cancelRun(
  db: Db,
  engine: RunEngine,
  actor: string,
  executionId: string,
  reason: string | null = null,
): Promise<void> {
  await requireOpen(engine, executionId);
  if (!(await engine.cancel(executionId)).accepted) throw runClosed();
  await recordAudit(db, {
    actor,
    action: 'automation_execution.cancel',
    resourceType: 'automation_execution',
    resourceId: executionId,
    ...(reason !== null && reason.trim() !== '' ? { details: { reason } } : {}),
  });
}

/** Ends the run at once, recording the reason; status TERMINATED. */
export async function terminateRun(
  db: Db,
  engine: RunEngine,
  actor: string,
  executionId: string,
  body: TerminateRequest,
): Promise<void> {
  const { reason } = body;
  await requireOpen(engine, executionId);
  if (!(await engine.terminate(executionId, reason))) throw runClosed();
  await recordAudit(db, {
    actor,
    action: 'automation_execution.terminate',
    resourceType: 'automation_execution',
    resourceId: executionId,
    details: { reason },
  });
}

/**
 * A rerun (same payload, the currently published version) or, with `fromFailedStep: true`, a retry
 * from the failed step (the original version; the recorded results of the steps before it are reused).
 */
export async function rerunRun(
  db: Db,
  engine: RunEngine,
  actor: string,
  executionId: string,
  automationId: string,
  body: RerunRequest,
): Promise<{ executionId: string }> {
  const fromFailedStep = body.fromFailedStep ?? false;
  const published = await publishedForRerun(db, automationId);
  // Unpublished means the automation runs nothing more, a retry included (it would run the failed
  // step's effects and the ones after it); a retry still runs the original version.
  if (fromFailedStep && !published) {
    throw new FailedPreconditionError(
      'the automation is not published: publish it before a retry from the failed step',
      'NOT_PUBLISHED',
    );
  }
  const started = await startRerun(db, engine, executionId, { fromFailedStep, published });
  await recordAudit(db, {
    actor,
    action: fromFailedStep ? 'automation_execution.retry' : 'automation_execution.rerun',
    resourceType: 'automation_execution',
    resourceId: executionId,
    details: { newExecutionId: started.executionId },
  });
  return started;
}
