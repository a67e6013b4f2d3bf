/**
 * Run history of automations (admin or super_admin), read from Temporal:
 * GET /api/v1/automations/{id}/executions (paginated, newest first, from visibility) and
 * GET /api/v1/automation_executions/{id} (one run with its steps). The execution id is the
 * workflow id `webhook:{listenerId}:{eventId}`; its ':' may come URL-encoded or not.
 * Run control: POST .../automation_executions/{id}/steps/{stepId}/approve and /reject (admin or
 * super_admin; a Temporal Update; answers the run), /cancel,
 * /terminate {reason}, /rerun {fromFailedStep?} (super_admin). Every execution answer lists in
 * `unaudited` what of the run no API request recorded in the audit trail.
 * 503 when Temporal cannot be reached.
 */
import Router from '@koa/router';
import type { AppDeps } from '../context';
import { unauditedParts } from '../../domain/run-audit';
import { cancelRun, decideStep, rerunRun, terminateRun } from '../../domain/executions';
import { TemporalRunControl } from '../../temporal/run-control';
import * as api from '../../domain/api-schemas';
import { mountOperations, operation, type Grant } from '../operation';
import { getAutomation, publishedSteps } from '../../domain/automations';
import { TemporalRunReader, type RunReader } from '../../temporal/executions';
import { notFound, UnavailableError, WorkflowEngineUnavailableError } from '../../errors';

/** What the run operations of one app share: the run reader and the run controller, when an engine is configured. */
interface Engine {
  reader: RunReader | undefined;
  control: TemporalRunControl | undefined;
}
const engines = new WeakMap<AppDeps, Engine>();

function engineOf(deps: AppDeps): Engine {
  let engine = engines.get(deps);
  if (!engine) {
    const loadSteps = (automationId: string, version: number) => publishedSteps(deps.db, automationId, version);
    const reader = deps.runs.client ? new TemporalRunReader(deps.runs.client, { loadSteps }) : undefined;
    const control = deps.runs.client ? new TemporalRunControl(deps.runs.client, deps.runs.taskQueue ?? deps.config.temporal.taskQueue, reader!) : undefined;
    engine = { reader, control };
    engines.set(deps, engine);
  }
  return engine;
}

function reader(deps: AppDeps): RunReader {
  const { reader } = engineOf(deps);
  if (!reader) throw new WorkflowEngineUnavailableError('no workflow engine configured');
  return reader;
}

function controller(deps: AppDeps): TemporalRunControl {
  const { control } = engineOf(deps);
  if (!control) throw new UnavailableError('no workflow engine configured; retry later', 5);
  return control;
}

/** The run as it is now, with what of it lacks an audit entry (src/domain/run-audit.ts); 404 when there is none. */
async function current(deps: AppDeps, executionId: string) {
  const execution = await reader(deps).get(executionId);
  if (!execution) throw notFound('automation execution');
  return { ...execution, unaudited: await unauditedParts(deps.db, execution) };
}

const READ: Grant = { area: 'automations', mode: 'read' };
const WRITE: Grant = { area: 'automations', mode: 'write' };
const TAG = 'Automation Executions';
const RUN = '/api/v1/automation_executions/{id}';
const RUN_ERRORS = [400, 401, 403, 404, 409, 500, 503];

const decision = (action: 'approve' | 'reject', made: 'approved' | 'rejected', summary: string) =>
  operation({
    method: 'post', path: `${RUN}/steps/{stepId}/${action}`, operationId: `automations.executions.${action}`, tag: TAG,
    access: { area: 'approvals', mode: 'write' }, summary,
    // Validated by the domain (readComment).
    body: { schema: api.DecisionRequest, required: false, validation: 'handler' }, ok: api.ExecutionResponse, errors: RUN_ERRORS,
    handle: async (input, _ctx, deps) => {
      const body = await input.body();
      const { actor, params } = input;
      await decideStep(deps.db, controller(deps), actor, params.id, params.stepId, made, body);
      return { execution: await current(deps, params.id) };
    },
  });

// Bodies are validated by the domain (src/domain/executions.ts).
export const EXECUTION_OPERATIONS = [
  operation({
    method: 'get', path: '/api/v1/automations/{id}/executions', operationId: 'automations.executions.list', tag: TAG, paged: true, access: READ,
    summary: 'List the runs of an automation, newest first.', ok: api.ExecutionList, errors: [400, 401, 403, 404, 500, 503],
    handle: async (input, _ctx, deps) => {
      const automationId = input.params.id;
      const page = input.page;
      await getAutomation(deps.db, automationId); // 404 for an unknown automation
      const listing = `executions:${automationId}`;
      const cursor = deps.pageTokens.decode<string>(listing, {}, page.pageToken);
      const result = await reader(deps).list(automationId, page.pageSize, cursor === undefined ? undefined : Buffer.from(cursor, 'base64'));
      return {
        list: result.executions.map((execution) => ({ execution })),
        nextPageToken: result.nextPageToken ? deps.pageTokens.encode(listing, {}, Buffer.from(result.nextPageToken).toString('base64')) : '',
      };
    },
  }),
  operation({
    method: 'get', path: RUN, operationId: 'automations.executions.get', tag: TAG, access: READ,
    summary: 'Get one run with its steps (id: webhook:{listenerId}:{eventId}).', ok: api.ExecutionResponse, errors: [401, 403, 404, 500, 503],
    handle: async (input, _ctx, deps) => ({ execution: await current(deps, input.params.id) }),
  }),
  decision(
    'approve', 'approved',
    'Approve a waitForApproval step (admin or super_admin); answers the run once it has recorded the decision (`by`: the actor) and moved on.',
  ),
  decision('reject', 'rejected', 'Reject a waitForApproval step (admin or super_admin); by default the run then ends as FAILED with reason rejected.'),
  operation({
    method: 'post', path: `${RUN}/cancel`, operationId: 'automations.executions.cancel', tag: TAG, access: WRITE,
    summary: 'Cancel a run (super_admin): a pending wait or approval ends, later steps do not run; status CANCELED.',
    ok: api.ExecutionResponse, errors: RUN_ERRORS,
    handle: async (input, _ctx, deps) => {
      await input.body(); // any JSON object; nothing in it is read
      await cancelRun(deps.db, controller(deps), input.actor, input.params.id);
      return { execution: await current(deps, input.params.id) };
    },
  }),
  operation({
    method: 'post', path: `${RUN}/terminate`, operationId: 'automations.executions.terminate', tag: TAG, access: WRITE,
    summary: 'Terminate a run at once with a reason (super_admin); status TERMINATED.',
    body: { schema: api.TerminateRequest, required: true, validation: 'handler' }, ok: api.ExecutionResponse, errors: RUN_ERRORS,
    handle: async (input, _ctx, deps) => {
      const body = await input.body();
      await terminateRun(deps.db, controller(deps), input.actor, input.params.id, body);
      return { execution: await current(deps, input.params.id) };
    },
  }),
  operation({
    method: 'post', path: `${RUN}/rerun`, operationId: 'automations.executions.rerun', tag: TAG, access: WRITE,
    summary: 'Start a rerun (same payload, the published version) or a retry from the failed step (super_admin); answers the new run.',
    body: { schema: api.RerunRequest, required: false, validation: 'handler' }, ok: api.ExecutionResponse, errors: RUN_ERRORS,
    handle: async (input, _ctx, deps) => {
      const body = await input.body();
      const original = await current(deps, input.params.id);
      const started = await rerunRun(deps.db, controller(deps), input.actor, input.params.id, original.automationId, body);
      return { execution: await current(deps, started.executionId) };
    },
  }),
];

export function createExecutionsRouter(deps: AppDeps): Router {
  return mountOperations(new Router(), deps, EXECUTION_OPERATIONS);
}
