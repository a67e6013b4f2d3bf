/**
 * Provisioning tasks (`/api/v1/provisioning_tasks`: admin and super_admin read and decide; not
 * read_only): the open work of `manual` provisioning steps, oldest first, completed or failed by
 * a person.
 */
import type Router from '@koa/router';
import * as tasks from '../../domain/provisioning-tasks';
import * as api from '../../domain/api-schemas';
import type { AppDeps } from '../context';
import { ITEM_WRITE_ERRORS, mountOperations, operation, READ_ERRORS, exactRouter } from '../operation';
import { GOVERNANCE_WRITE, listBody } from './governance-helpers';

const COLLECTION = '/api/v1/provisioning_tasks';
const ITEM = `${COLLECTION}/{id}` as const;
const TAG = 'Provisioning tasks';
/** A decision that tells the grant's workflow: 409 when the task is closed, 503 when the engine cannot be reached. */
const DECISION_ERRORS = [...ITEM_WRITE_ERRORS, 409, 503];

function decision(verb: 'complete' | 'fail', state: 'DONE' | 'FAILED', summary: string) {
  return operation({
    method: 'post',
    path: `${ITEM}/${verb}`,
    operationId: `provisioningTasks.${verb}`,
    tag: TAG,
    access: GOVERNANCE_WRITE,
    summary,
    body: { schema: api.CloseProvisioningTaskRequest, required: false, validation: 'schema' },
    ok: api.ProvisioningTaskResponse,
    errors: DECISION_ERRORS,
    handle: async (input, _ctx, deps) => {
      const body = (await input.body()) ?? {};
      return {
        provisioningTask: await tasks.closeTask(
          deps.db,
          deps.engine,
          input.params.id,
          state,
          body.comment ?? null,
          input.actor,
        ),
      };
    },
  });
}

export const PROVISIONING_TASK_OPERATIONS = [
  operation({
    method: 'get',
    path: COLLECTION,
    operationId: 'provisioningTasks.list',
    tag: TAG,
    paged: true,
    access: GOVERNANCE_WRITE,
    summary: 'List provisioning tasks, oldest first.',
    query: [
      {
        name: 'state',
        description: 'Only tasks in these states (repeatable).',
        schema: { type: 'array', items: { type: 'string', enum: [...api.ProvisioningTaskState.options] } },
      },
      { name: 'grantId', description: 'Only tasks of this grant.', schema: { type: 'string', maxLength: 200 } },
    ],
    ok: api.ProvisioningTaskList,
    errors: READ_ERRORS,
    handle: async (input, ctx, deps) =>
      listBody(
        'provisioningTask',
        await tasks.listTasks(
          deps.db,
          deps.pageTokens,
          tasks.readTaskFilter(ctx.query as Record<string, unknown>),
          input.page,
        ),
      ),
  }),
  decision('complete', 'DONE', "Complete an OPEN task: the grant's provisioning goes on (409 when it is closed)."),
  decision('fail', 'FAILED', "Fail an OPEN task: the grant's provisioning fails (409 when it is closed)."),
];

export function createProvisioningTasksRouter(deps: AppDeps): Router {
  return mountOperations(exactRouter(), deps, PROVISIONING_TASK_OPERATIONS);
}
