/**
 * Provisioning tasks (docs/api.md#provisioning-tasks): the work a `manual` provisioning step gives
 * people. A grant's provisioning opens one per phase, step and attempt (src/domain/grants.ts) and
 * waits; a person completes or fails it here, which closes the task, writes its audit record and
 * tells the grant's workflow in one transaction (503 and nothing closed when the engine cannot be
 * told). A task closes once: a second decision is 409 and changes nothing.
 */
import type { Db } from '../store/db';
import * as store from '../store/provisioning-tasks';
import type { ProvisioningTaskRow, TaskFilter } from '../store/provisioning-tasks';
import { recordAudit } from '../store/audit';
import { FailedPreconditionError, notFound } from '../errors';
import type { RunEngine } from './engine';
import { isString, pageOf, queryStates, queryValue } from './listing';
import type { Page, PageRequest, PageTokens } from './pagination';
import type { ProvisioningTask } from './api-schemas';
import type { z } from 'zod';

export type TaskView = z.output<typeof ProvisioningTask>;

export function toTask(row: ProvisioningTaskRow): TaskView {
  return {
    id: row.id,
    grantId: row.grantId,
    phase: row.phase,
    step: row.step,
    instructions: row.instructions,
    assigneeUserIds: row.assigneeUserIds,
    state: row.state,
    createdAt: row.createdAt,
    closedAt: row.closedAt,
    closedBy: row.closedBy,
    comment: row.comment,
  };
}

/** The filters of `GET /api/v1/provisioning_tasks`; 400 naming the field for a bad one. */
export function readTaskFilter(query: Record<string, unknown>): TaskFilter {
  const filter: TaskFilter = {};
  const grantId = queryValue(query.grantId, 'grantId');
  if (grantId !== undefined) filter.grantId = grantId;
  const states = queryStates(query.state, store.TASK_STATES);
  if (states.length > 0) filter.states = states;
  return filter;
}

/** Tasks matching the filter, oldest first. */
export function listTasks(db: Db, tokens: PageTokens, filter: TaskFilter, page: PageRequest): Promise<Page<TaskView>> {
  return pageOf(tokens, page, {
    name: 'provisioning_tasks',
    filter,
    isCursor: isString,
    fetch: (after, limit) => store.listTasks(db, filter, after, limit),
    keyOf: (row) => row.id,
    toItem: toTask,
  });
}

/**
 * Completes (`DONE`) or fails (`FAILED`) an OPEN task as `actor`, and tells the grant's workflow:
 * the provisioning goes on, or fails (a provision's earlier steps are undone). 404 for an unknown
 * task, 409 for one that is closed.
 */
export async function closeTask(
  db: Db,
  engine: Pick<RunEngine, 'signalGrant'>,
  id: string,
  state: 'DONE' | 'FAILED',
  comment: string | null,
  actor: string,
): Promise<TaskView> {
  return db.transaction(async (tx) => {
    const task = await store.findTask(tx, id, { forUpdate: true });
    if (!task) throw notFound('provisioning task', id);
    if (task.state !== 'OPEN') throw new FailedPreconditionError(`the provisioning task is ${task.state}, not OPEN`);
    const closed = (await store.closeTask(tx, id, { state, by: actor, comment }))!;
    await recordAudit(tx, {
      actor,
      action: state === 'DONE' ? 'provisioning_task.complete' : 'provisioning_task.fail',
      resourceType: 'provisioning_task',
      resourceId: id,
      details: { grantId: task.grantId, phase: task.phase, step: task.step, comment },
    });
    await engine.signalGrant(task.grantId, {
      type: 'callback',
      phase: task.phase,
      step: task.step,
      attempt: task.attempt,
      status: state === 'DONE' ? 'done' : 'failed',
      message: state === 'DONE' ? null : `the provisioning task was failed by ${actor}${comment ? `: ${comment}` : ''}`,
    });
    return toTask(closed);
  });
}
