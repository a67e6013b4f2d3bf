/**
 * Run history of automations (super_admin), read from Temporal:
 * GET /api/v1/automations/{id}/executions (paginated, newest first, from visibility) and
 * GET /api/v1/automation_executions/{id} (one run with its steps). The execution id is the
 * workflow id `webhook:{listenerId}:{eventId}`; its ':' may come URL-encoded or not.
 * Run control: POST .../automation_executions/{id}/steps/{stepId}/approve and /reject (admin or
 * super_admin; a Temporal Update: super_admin gets the run, admin the decision only), /cancel,
 * /terminate {reason}, /rerun {fromFailedStep?} (super_admin). Every execution answer lists in
 * `unaudited` what of the run no API request recorded in the audit trail.
 * 503 when Temporal cannot be reached.
 */
import Router from '@koa/router';
import type { AppDeps } from '../context';
import { authenticate, principalOf, requireAccess } from '../auth';
import { allows } from '../../auth/roles';
import { unauditedParts } from '../../domain/run-audit';
import { readJsonObject } from '../body';
import { cancelRun, decideStep, rerunRun, terminateRun } from '../../domain/executions';
import { TemporalRunControl } from '../../temporal/run-control';
import { readPageRequest } from '../../domain/pagination';
import { getAutomation, publishedSteps } from '../../domain/automations';
import { TemporalExecutions, type AutomationExecutions } from '../../temporal/executions';
import { notFound, UnavailableError, WorkflowEngineUnavailableError } from '../../errors';

export function createExecutionsRouter(deps: AppDeps): Router {
  const router = new Router();
  const loadSteps = (automationId: string, version: number) => publishedSteps(deps.db, automationId, version);
  const reader: AutomationExecutions | undefined = deps.runs.client ? new TemporalExecutions(deps.runs.client, { loadSteps }) : undefined;
  const control = deps.runs.client ? new TemporalRunControl(deps.runs.client, deps.runs.taskQueue ?? deps.config.temporal.taskQueue, reader!) : undefined;
  const read = requireAccess('automations', 'read');
  const write = requireAccess('automations', 'write');
  router.use(authenticate(deps.tokens));

  router.get('/api/v1/automations/:id/executions', read, async (ctx) => {
    const automationId = ctx.params.id!;
    const page = readPageRequest(ctx.query);
    await getAutomation(deps.db, automationId); // 404 for an unknown automation
    const listing = `executions:${automationId}`;
    const cursor = deps.pageTokens.decode<string>(listing, {}, page.pageToken);
    const result = await engine().list(automationId, page.pageSize, cursor === undefined ? undefined : Buffer.from(cursor, 'base64'));
    ctx.body = {
      list: result.executions.map((execution) => ({ execution })),
      nextPageToken: result.nextPageToken ? deps.pageTokens.encode(listing, {}, Buffer.from(result.nextPageToken).toString('base64')) : '',
    };
  });

  router.get('/api/v1/automation_executions/:id', read, async (ctx) => {
    ctx.body = { execution: await current(ctx.params.id!) };
  });

  for (const [action, decision] of [['approve', 'approved'], ['reject', 'rejected']] as const) {
    router.post(`/api/v1/automation_executions/:id/steps/:stepId/${action}`, requireAccess('approvals', 'write'), async (ctx) => {
      const body = await readJsonObject(ctx);
      const principal = principalOf(ctx);
      await decideStep(deps.db, controller(), principal.clientId, ctx.params.id!, ctx.params.stepId!, decision, body);
      const execution = await current(ctx.params.id!);
      if (allows(principal, 'automations', 'read')) {
        ctx.body = { execution };
      } else {
        // An admin may decide, not read runs: the decision only, no other step, output or status.
        const step = execution.steps.find((s) => s.id === ctx.params.stepId);
        ctx.body = { decision: { executionId: execution.id, stepId: ctx.params.stepId!, ...decisionOf(step?.output ?? null, decision) } };
      }
    });
  }

  router.post('/api/v1/automation_executions/:id/cancel', write, async (ctx) => {
    await readJsonObject(ctx);
    await cancelRun(deps.db, controller(), principalOf(ctx).clientId, ctx.params.id!);
    ctx.body = { execution: await current(ctx.params.id!) };
  });

  router.post('/api/v1/automation_executions/:id/terminate', write, async (ctx) => {
    const body = await readJsonObject(ctx);
    await terminateRun(deps.db, controller(), principalOf(ctx).clientId, ctx.params.id!, body);
    ctx.body = { execution: await current(ctx.params.id!) };
  });

  router.post('/api/v1/automation_executions/:id/rerun', write, async (ctx) => {
    const body = await readJsonObject(ctx);
    const original = await current(ctx.params.id!);
    const started = await rerunRun(deps.db, controller(), principalOf(ctx).clientId, ctx.params.id!, original.automationId, body);
    ctx.body = { execution: await current(started.executionId) };
  });

  /** The run as it is now, with what of it lacks an audit entry (src/domain/run-audit.ts); 404 when there is none. */
  async function current(executionId: string) {
    const execution = await engine().get(executionId);
    if (!execution) throw notFound('automation execution');
    return { ...execution, unaudited: await unauditedParts(deps.db, execution) };
  }

  function engine(): AutomationExecutions {
    if (!reader) throw new WorkflowEngineUnavailableError('no workflow engine configured');
    return reader;
  }

  function controller(): TemporalRunControl {
    if (!control) throw new UnavailableError('no workflow engine configured; retry later', 5);
    return control;
  }

  return router;
}

/** A waitForApproval step's recorded decision, as the admin's answer shows it. */
function decisionOf(output: Record<string, unknown> | null, made: string): { decision: string; by: string | null; at: string | null; comment: string | null } {
  const text = (value: unknown): string | null => (typeof value === 'string' ? value : null);
  return { decision: text(output?.decision) ?? made, by: text(output?.by), at: text(output?.at), comment: text(output?.comment) };
}
