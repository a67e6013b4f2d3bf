/**
 * Run history of automations (super_admin), read from Temporal:
 * GET /api/v1/automations/{id}/executions (paginated, newest first, from visibility) and
 * GET /api/v1/automation_executions/{id} (one run with its steps). The execution id is the
 * workflow id `webhook:{listenerId}:{eventId}`; its ':' may come URL-encoded or not.
 * 503 when Temporal cannot be reached.
 */
import Router from '@koa/router';
import type { AppDeps } from '../context';
import { authenticate, requireAccess } from '../auth';
import { AppError, notFound } from '../errors';
import { readPageRequest } from '../../domain/pagination';
import { getAutomation } from '../../store/automations';
import { publishedSteps } from '../../domain/automations';
import { InvalidExecutionPageTokenError, TemporalExecutions, type AutomationExecutions } from '../../temporal/executions';
import { WorkflowEngineUnavailableError } from '../../temporal/runs';

const RETRY_AFTER_SECONDS = '5';

export function createExecutionsRouter(deps: AppDeps): Router {
  const router = new Router();
  const loadSteps = (automationId: string, version: number) => publishedSteps(deps.db, automationId, version);
  const reader: AutomationExecutions | undefined = deps.runs.client ? new TemporalExecutions(deps.runs.client, { loadSteps }) : undefined;
  router.use(authenticate(deps.tokens), requireAccess('automations', 'read'));

  router.get('/api/v1/automations/:id/executions', async (ctx) => {
    const automationId = ctx.params.id!;
    const page = readPageRequest(ctx.query);
    if (!(await getAutomation(deps.db, automationId))) throw notFound('automation');
    const listing = `executions:${automationId}`;
    const cursor = deps.pageTokens.decode<string>(listing, {}, page.pageToken);
    const result = await readRuns(() => engine().list(automationId, page.pageSize, cursor === undefined ? undefined : Buffer.from(cursor, 'base64')));
    ctx.body = {
      list: result.executions.map((execution) => ({ execution })),
      nextPageToken: result.nextPageToken ? deps.pageTokens.encode(listing, {}, Buffer.from(result.nextPageToken).toString('base64')) : '',
    };
  });

  router.get('/api/v1/automation_executions/:id', async (ctx) => {
    const execution = await readRuns(() => engine().get(ctx.params.id!));
    if (!execution) throw notFound('automation execution');
    ctx.body = { execution };
  });

  function engine(): AutomationExecutions {
    if (!reader) throw new WorkflowEngineUnavailableError('no workflow engine configured');
    return reader;
  }

  return router;
}

/** Temporal's failures in the one error shape: 503 (retry later), or 400 for a stale page token. */
async function readRuns<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof WorkflowEngineUnavailableError) {
      throw new AppError(503, 'the workflow engine is unavailable; retry later', { headers: { 'Retry-After': RETRY_AFTER_SECONDS } });
    }
    if (err instanceof InvalidExecutionPageTokenError) {
      throw new AppError(400, err.message, {
        details: [{ '@type': 'type.googleapis.com/google.rpc.BadRequest', fieldViolations: [{ field: 'page_token', description: err.message }] }],
      });
    }
    throw err;
  }
}
