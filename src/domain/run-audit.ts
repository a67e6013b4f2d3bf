/**
 * What a run holds that no API request put in the audit trail. The workflow takes a decision's
 * `by` and a run's `resume` input as the engine hands them over: anyone the Temporal frontend
 * accepts can send the `decide` update with any `by`, or start a run that marks steps done. The
 * API records every decision (`automation_execution.approve` / `.reject`, actor = the deciding
 * client, details.stepId) and every rerun or retry (`automation_execution.rerun` / `.retry` on the
 * original run, details.newExecutionId) in the audit trail; a decided step or a rerun link without
 * its entry reached the engine some other way, and the execution view lists it in `unaudited`.
 * A bulk action's rerun is accounted for by the bulk action's record (`bulk_action.create`) when
 * the original run is in that action's matched set (the rerun's id names the action).
 */
import type { Queryable } from '../store/db';
import { listAuditEvents } from '../store/audit';
import { inBulkSet } from '../store/bulk-actions';
import { bulkActionOfRerunId } from './runs';

/** The parts of an execution the check reads. */
export interface AuditedExecution {
  id: string;
  rerunOf: string | null;
  steps: ReadonlyArray<{ id: string; kind: string; status: string; output: Record<string, unknown> | null }>;
}

/**
 * `decision:<stepId>` for each person's decision (a waitForApproval output with a `by`) without a
 * matching audit entry, and `rerunOf` for a rerun link without one; empty when everything is
 * accounted for.
 */
export async function unauditedParts(db: Queryable, execution: AuditedExecution): Promise<string[]> {
  const out: string[] = [];
  const decided = execution.steps.filter(
    (step) => step.kind === 'waitForApproval' && typeof step.output?.by === 'string' && step.output.by !== '',
  );
  if (decided.length > 0) {
    const events = await listAuditEvents(db, 'automation_execution', execution.id);
    for (const step of decided) {
      const action =
        step.output!.decision === 'rejected' ? 'automation_execution.reject' : 'automation_execution.approve';
      const found = events.some(
        (event) => event.action === action && event.actor === step.output!.by && event.details.stepId === step.id,
      );
      if (!found) out.push(`decision:${step.id}`);
    }
  }
  if (execution.rerunOf !== null) {
    const events = await listAuditEvents(db, 'automation_execution', execution.rerunOf);
    const found = events.some(
      (event) =>
        (event.action === 'automation_execution.rerun' || event.action === 'automation_execution.retry') &&
        event.details.newExecutionId === execution.id,
    );
    if (!found && !(await bulkRerunAudited(db, execution.id, execution.rerunOf))) out.push('rerunOf');
  }
  return out;
}

/** A bulk rerun whose bulk action has its audit record and matched the original run. */
async function bulkRerunAudited(db: Queryable, executionId: string, rerunOf: string): Promise<boolean> {
  const bulkActionId = bulkActionOfRerunId(executionId, rerunOf);
  if (bulkActionId === undefined) return false;
  const events = await listAuditEvents(db, 'bulk_action', bulkActionId);
  if (!events.some((event) => event.action === 'bulk_action.create')) return false;
  return inBulkSet(db, bulkActionId, rerunOf);
}
