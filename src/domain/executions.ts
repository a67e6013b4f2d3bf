/**
 * Run control as the API offers it: approve or reject a waiting step, cancel, terminate, rerun or
 * retry from the failed step. Takes the bodies as their schemas parsed them (api-schemas.ts), asks
 * the run controller (Temporal), and records who did what in the audit trail once the engine has accepted it.
 */
import type { Db } from '../store/db';
import { recordAudit } from '../store/audit';
import { getAutomation } from '../store/automations';
import { getLatestPublishedVersion } from '../store/automation-versions';
import { FailedPreconditionError } from '../errors';
import type { DecisionRequest, RerunRequest, TerminateRequest } from './api-schemas';

export interface RerunOptions {
  /** Retry from the failed step (original version, earlier results reused) instead of a fresh run. */
  fromFailedStep: boolean;
  /** For a fresh run: the automation's currently published version and name, or undefined when it is not published. */
  published: { version: number; automationName: string; flow?: unknown } | undefined;
  /** A bulk action's rerun: its id is derived from this and the original (src/domain/bulk-actions.ts `bulkRerunId`). */
  bulkActionId?: string;
}

/** What the domain needs of the engine (src/temporal/run-control.ts implements it). */
export interface RunController {
  decide(
    executionId: string,
    input: { stepId: string; decision: 'approved' | 'rejected'; by: string; comment: string | null },
  ): Promise<void>;
  cancel(executionId: string): Promise<void>;
  terminate(executionId: string, reason: string): Promise<void>;
  rerun(executionId: string, options: RerunOptions): Promise<{ executionId: string }>;
}

export async function decideStep(
  db: Db,
  control: RunController,
  actor: string,
  executionId: string,
  stepId: string,
  decision: 'approved' | 'rejected',
  body: DecisionRequest,
): Promise<void> {
  const comment = body.comment ?? null;
  await control.decide(executionId, { stepId, decision, by: actor, comment });
  await recordAudit(db, {
    actor,
    action: decision === 'approved' ? 'automation_execution.approve' : 'automation_execution.reject',
    resourceType: 'automation_execution',
    resourceId: executionId,
    details: { stepId, comment },
  });
}

export async function cancelRun(db: Db, control: RunController, actor: string, executionId: string): Promise<void> {
  await control.cancel(executionId);
  await recordAudit(db, {
    actor,
    action: 'automation_execution.cancel',
    resourceType: 'automation_execution',
    resourceId: executionId,
  });
}

export async function terminateRun(
  db: Db,
  control: RunController,
  actor: string,
  executionId: string,
  body: TerminateRequest,
): Promise<void> {
  const { reason } = body;
  await control.terminate(executionId, reason);
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
  control: RunController,
  actor: string,
  executionId: string,
  automationId: string,
  body: RerunRequest,
): Promise<{ executionId: string }> {
  const fromFailedStep = body.fromFailedStep ?? false;
  const automation = await getAutomation(db, automationId);
  const latest = automation?.published ? await getLatestPublishedVersion(db, automationId) : undefined;
  const published = latest
    ? {
        version: latest.version,
        automationName: latest.snapshot.displayName,
        ...(latest.snapshot.flow ? { flow: latest.snapshot.flow } : {}),
      }
    : undefined;
  // Unpublished means the automation runs nothing more, a retry included (it would run the failed
  // step's effects and the ones after it); a retry still runs the original version.
  if (fromFailedStep && !published) {
    throw new FailedPreconditionError(
      'the automation is not published: publish it before a retry from the failed step',
      'NOT_PUBLISHED',
    );
  }
  const started = await control.rerun(executionId, { fromFailedStep, published });
  await recordAudit(db, {
    actor,
    action: fromFailedStep ? 'automation_execution.retry' : 'automation_execution.rerun',
    resourceType: 'automation_execution',
    resourceId: executionId,
    details: { newExecutionId: started.executionId },
  });
  return started;
}
