/**
 * Bulk actions on runs: POST /api/v1/automation_executions/bulk (a dry run answers 200 with a
 * preview; an action answers 202 and runs as a workflow), GET /api/v1/bulk_actions/{id} (progress),
 * GET /api/v1/bulk_actions (newest first), POST /api/v1/bulk_actions/{id}/cancel (stop). Making or
 * stopping one is super_admin's; admin reads them (src/domain/bulk-actions.ts).
 */
import type Router from '@koa/router';
import type { AppDeps } from '../context';
import * as api from '../../domain/api-schemas';
import { cancelBulkAction, createBulkAction, listBulkActionsPage, readBulkAction } from '../../domain/bulk-actions';
import { mountOperations, operation, exactRouter, type Grant } from '../operation';

const READ: Grant = { area: 'automations', mode: 'read' };
const WRITE: Grant = { area: 'automations', mode: 'write' };
const TAG = 'Bulk Actions';

export const BULK_ACTION_OPERATIONS = [
  operation({
    method: 'post',
    path: '/api/v1/automation_executions/bulk',
    operationId: 'automations.executions.bulk',
    tag: TAG,
    access: WRITE,
    summary:
      'Cancel, terminate or rerun every run a filter matches (super_admin): a dry run answers 200 with a preview; an action answers 202 and runs durably.',
    description:
      'The matched set is fixed when the action (or its preview) is made and kept in the store. With `where`, at most 10,000 candidate runs are read; at most 100,000 runs per action (400 naming the count above either). A preview is acted on with `{previewId, action, reason}` within 10 minutes.',
    body: { schema: api.BulkActionRequest, required: true, validation: 'schema' },
    ok: api.BulkDryRunResponse,
    accepted: api.BulkActionResponse,
    errors: [400, 401, 403, 404, 413, 500, 503],
    handle: async (input, ctx, deps) => {
      const body = await input.body();
      const created = await createBulkAction(deps.db, deps.engine, input.actor, body, deps.bulkLimits);
      if (created.kind === 'preview')
        return {
          matched: created.matched,
          sample: created.sample,
          previewId: created.previewId,
          whereErrors: created.whereErrors,
        };
      ctx.status = 202;
      ctx.body = { bulkAction: created.bulkAction };
      return undefined;
    },
  }),
  operation({
    method: 'get',
    path: '/api/v1/bulk_actions',
    operationId: 'bulkActions.list',
    tag: TAG,
    access: READ,
    paged: true,
    summary: 'Bulk actions, newest first (admin or super_admin).',
    ok: api.BulkActionList,
    errors: [400, 401, 403, 500],
    handle: async (input, _ctx, deps) => {
      const listing = await listBulkActionsPage(deps.db, deps.pageTokens, input.page);
      return { list: listing.items, nextPageToken: listing.nextPageToken };
    },
  }),
  operation({
    method: 'get',
    path: '/api/v1/bulk_actions/{id}',
    operationId: 'bulkActions.get',
    tag: TAG,
    access: READ,
    summary: 'A bulk action and its progress (admin or super_admin).',
    ok: api.BulkActionResponse,
    errors: [401, 403, 404, 500],
    handle: async (input, _ctx, deps) => ({ bulkAction: await readBulkAction(deps.db, input.params.id) }),
  }),
  operation({
    method: 'post',
    path: '/api/v1/bulk_actions/{id}/cancel',
    operationId: 'bulkActions.cancel',
    tag: TAG,
    access: WRITE,
    summary:
      'Stop a bulk action (super_admin): runs not yet acted on stay as they are; state CANCELED. 409 once it has completed.',
    ok: api.BulkActionResponse,
    errors: [400, 401, 403, 404, 409, 413, 500],
    handle: async (input, _ctx, deps) => {
      await input.body(); // any JSON object; nothing in it is read
      return { bulkAction: await cancelBulkAction(deps.db, input.params.id) };
    },
  }),
];

export function createBulkActionsRouter(deps: AppDeps): Router {
  return mountOperations(exactRouter(), deps, BULK_ACTION_OPERATIONS);
}
