/**
 * Who ended a run, in words a person reads: the person or client who canceled or terminated it (and
 * why), or who rejected the approval it failed on. Read from what the API recorded: the run's
 * audit records (a person's carry their name), the bulk action that stopped it, the API client's
 * display name. A run stopped on the workflow engine directly has no such record: its `closedBy`
 * names no actor.
 */
import type { Queryable } from '../store/queryable';
import { listAuditEvents, type AuditEvent } from '../store/audit';
import { getBulkAction } from '../store/bulk-actions';
import { actorName, namesOf } from './audit';
import type { RunRecord } from './runs';

export interface ClosedBy {
  /** The actor string; null when the run was stopped on the workflow engine, not through this API. */
  actor: string | null;
  actorDisplayName: string | null;
  reason: string | null;
  bulkActionId?: string;
}

export interface RejectedBy {
  actor: string;
  actorDisplayName: string | null;
  stepId: string;
  comment: string | null;
}

const STOP_ACTIONS = { CANCELED: 'automation_execution.cancel', TERMINATED: 'automation_execution.terminate' };

/** `closedBy` of a CANCELED or TERMINATED run, `rejectedBy` of a run that FAILED on a rejection; neither otherwise. */
export async function whoEndedIt(
  db: Queryable,
  run: Pick<RunRecord, 'id' | 'status' | 'steps' | 'error'>,
  bulkActionId: string | undefined,
): Promise<{ closedBy?: ClosedBy; rejectedBy?: RejectedBy }> {
  if (run.status === 'CANCELED' || run.status === 'TERMINATED') {
    return { closedBy: await closedBy(db, run, run.status, bulkActionId) };
  }
  if (run.status !== 'FAILED') return {};
  const rejected = run.steps.find(
    (step) =>
      step.kind === 'waitForApproval' &&
      step.status === 'FAILED' &&
      step.output?.decision === 'rejected' &&
      typeof step.output.by === 'string' &&
      step.output.by !== '',
  );
  if (!rejected) return {};
  const actor = rejected.output!.by as string;
  const events = await listAuditEvents(db, 'automation_execution', run.id);
  const record = events.find(
    (event) =>
      event.action === 'automation_execution.reject' && event.actor === actor && event.details.stepId === rejected.id,
  );
  const comment = rejected.output!.comment;
  return {
    rejectedBy: {
      actor,
      actorDisplayName: await displayName(db, actor, record),
      stepId: rejected.id,
      comment: typeof comment === 'string' ? comment : null,
    },
  };
}

async function closedBy(
  db: Queryable,
  run: Pick<RunRecord, 'id' | 'error'>,
  status: 'CANCELED' | 'TERMINATED',
  bulkActionId: string | undefined,
): Promise<ClosedBy> {
  const bulk = bulkActionId ? await getBulkAction(db, bulkActionId) : undefined;
  if (bulk && bulk.action === (status === 'CANCELED' ? 'cancel' : 'terminate')) {
    return {
      actor: bulk.by,
      actorDisplayName: await displayName(db, bulk.by, undefined),
      reason: bulk.reason,
      bulkActionId: bulk.id,
    };
  }
  const events = await listAuditEvents(db, 'automation_execution', run.id);
  const record = events.filter((event) => event.action === STOP_ACTIONS[status]).at(-1);
  if (record) {
    const reason = record.details.reason;
    return {
      actor: record.actor,
      actorDisplayName: await displayName(db, record.actor, record),
      reason: typeof reason === 'string' ? reason : null,
    };
  }
  // Stopped on the workflow engine directly: only a termination's own reason is known.
  const terminated = /^run terminated: ([\s\S]+)$/.exec(run.error ?? '');
  return { actor: null, actorDisplayName: null, reason: terminated?.[1] ?? null };
}

/** A person's name (from their audit record), an API client's display name, an automation's name; null when none is known. */
async function displayName(db: Queryable, actor: string, record: AuditEvent | undefined): Promise<string | null> {
  return actorName(actor, record?.details, await namesOf(db, [{ actor }]));
}
