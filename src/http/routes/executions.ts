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
import type Router from '@koa/router';
import type { AppDeps } from '../context';
import { cancelRun, decideStep, readExecution, rerunRun, terminateRun } from '../../domain/executions';
import * as api from '../../domain/api-schemas';
import { mountOperations, operation, type Grant, exactRouter } from '../operation';
import { getAutomation } from '../../domain/automations';
import { pausedRunEnded } from '../../domain/circuit-breaker';
import { readRunFilter, RUN_STATUSES, withAutomationNames } from '../../domain/run-listing';

/** A run canceled or terminated: the circuit breaker no longer lists it among its paused runs. */
async function ended(deps: AppDeps, executionId: string) {
  const execution = await readExecution(deps.db, deps.engine, executionId);
  await pausedRunEnded(deps.db, execution.automationId, executionId);
  return execution;
}

const READ: Grant = { area: 'automations', mode: 'read' };
const WRITE: Grant = { area: 'automations', mode: 'write' };
const TAG = 'Automation Executions';
const RUN = '/api/v1/automation_executions/{id}';
const RUN_ERRORS = [400, 401, 403, 404, 409, 500, 503];

const decision = (action: 'approve' | 'reject', made: 'approved' | 'rejected', summary: string) =>
  operation({
    method: 'post',
    path: `${RUN}/steps/{stepId}/${action}`,
    operationId: `automations.executions.${action}`,
    tag: TAG,
    access: { area: 'approvals', mode: 'write' },
    summary,
    body: { schema: api.DecisionRequest, required: false, validation: 'schema' },
    ok: api.ExecutionResponse,
    errors: RUN_ERRORS,
    handle: async (input, _ctx, deps) => {
      const body = await input.body();
      const { actor, params } = input;
      await decideStep(deps.db, deps.engine, actor, params.id, params.stepId, made, body);
      return { execution: await readExecution(deps.db, deps.engine, params.id) };
    },
  });

export const EXECUTION_OPERATIONS = [
  operation({
    method: 'get',
    path: '/api/v1/automation_executions',
    operationId: 'automations.executions.search',
    tag: TAG,
    paged: true,
    access: READ,
    summary:
      'List the runs of every automation (admin or super_admin): open runs first, newest first; the approvals inbox with waitingForApproval=true.',
    description:
      "Read from the workflow engine's visibility (eventually consistent: a run shows a moment after it changes). Each run names its automation; a QUEUED run its concurrency key, a run waiting on a person the step that waits.",
    // Read and checked by the domain (readRunFilter): 400 naming the parameter.
    query: [
      {
        name: 'automationId',
        description: 'Only runs of this automation.',
        schema: { type: 'string', maxLength: 200 },
      },
      {
        name: 'status',
        description: 'Only runs in one of these statuses (repeat the parameter for several).',
        schema: { type: 'array', items: { type: 'string', enum: [...RUN_STATUSES] } },
      },
      {
        name: 'waitingForApproval',
        description:
          'true: only running runs with a step WAITING_FOR_APPROVAL (runs started before 0.7.0 are not marked).',
        schema: { type: 'string', enum: ['true'] },
      },
      {
        name: 'startedAfter',
        description: 'Only runs started at or after this RFC 3339 time.',
        schema: { type: 'string', format: 'date-time' },
      },
      {
        name: 'startedBefore',
        description: 'Only runs started before this RFC 3339 time.',
        schema: { type: 'string', format: 'date-time' },
      },
      {
        name: 'eventId',
        description: 'Only the run of this event id (exact).',
        schema: { type: 'string', maxLength: 200 },
      },
      {
        name: 'q',
        description: 'Only runs whose run id or event id starts with this (case-insensitive).',
        schema: { type: 'string', maxLength: 200 },
      },
    ],
    ok: api.ExecutionSearchList,
    errors: [400, 401, 403, 500, 503],
    handle: async (input, ctx, deps) => {
      const filter = readRunFilter(ctx.query as Record<string, unknown>);
      const cursor = deps.pageTokens.decode<string>('executions', filter, input.page.pageToken);
      const result = await deps.engine.search(
        filter,
        input.page.pageSize,
        cursor === undefined ? undefined : Buffer.from(cursor, 'base64'),
      );
      const named = await withAutomationNames(deps.db, result.runs);
      return {
        list: named.map((execution) => ({ execution })),
        nextPageToken: result.nextPageToken
          ? deps.pageTokens.encode('executions', filter, Buffer.from(result.nextPageToken).toString('base64'))
          : '',
      };
    },
  }),
  operation({
    method: 'get',
    path: '/api/v1/automations/{id}/lanes',
    operationId: 'automations.lanes.list',
    tag: TAG,
    paged: true,
    access: READ,
    summary:
      'The concurrency keys of the automation that have queued runs, by key: running and queued runs, when the oldest queued run started.',
    description:
      "Counted from the automation's running runs in visibility (runs started before 0.7.0 carry no key and are not counted).",
    ok: api.LaneList,
    errors: [400, 401, 403, 404, 500, 503],
    handle: async (input, _ctx, deps) => {
      const automationId = input.params.id;
      await getAutomation(deps.db, automationId); // 404 for an unknown automation
      const listing = `lanes:${automationId}`;
      const after = deps.pageTokens.decode<string>(listing, {}, input.page.pageToken);
      const lanes = (await deps.engine.lanes(automationId)).filter((lane) => after === undefined || lane.key > after);
      const page = lanes.slice(0, input.page.pageSize);
      const last = page[page.length - 1];
      return {
        list: page.map((lane) => ({ lane })),
        nextPageToken: lanes.length > page.length && last ? deps.pageTokens.encode(listing, {}, last.key) : '',
      };
    },
  }),
  operation({
    method: 'get',
    path: '/api/v1/automations/{id}/executions',
    operationId: 'automations.executions.list',
    tag: TAG,
    paged: true,
    access: READ,
    summary: 'List the runs of an automation, newest first.',
    ok: api.ExecutionList,
    errors: [400, 401, 403, 404, 500, 503],
    handle: async (input, _ctx, deps) => {
      const automationId = input.params.id;
      const page = input.page;
      await getAutomation(deps.db, automationId); // 404 for an unknown automation
      const listing = `executions:${automationId}`;
      const cursor = deps.pageTokens.decode<string>(listing, {}, page.pageToken);
      const result = await deps.engine.list(
        automationId,
        page.pageSize,
        cursor === undefined ? undefined : Buffer.from(cursor, 'base64'),
      );
      return {
        list: result.runs.map((execution) => ({ execution })),
        nextPageToken: result.nextPageToken
          ? deps.pageTokens.encode(listing, {}, Buffer.from(result.nextPageToken).toString('base64'))
          : '',
      };
    },
  }),
  operation({
    method: 'get',
    path: RUN,
    operationId: 'automations.executions.get',
    tag: TAG,
    access: READ,
    summary: 'Get one run with its steps (id: webhook:{listenerId}:{eventId}).',
    ok: api.ExecutionResponse,
    errors: [401, 403, 404, 500, 503],
    handle: async (input, _ctx, deps) => ({ execution: await readExecution(deps.db, deps.engine, input.params.id) }),
  }),
  decision(
    'approve',
    'approved',
    'Approve a waitForApproval step (admin or super_admin); answers the run once it has recorded the decision (`by`: the actor) and moved on.',
  ),
  decision(
    'reject',
    'rejected',
    'Reject a waitForApproval step (admin or super_admin); by default the run then ends as FAILED with reason rejected.',
  ),
  operation({
    method: 'post',
    path: `${RUN}/cancel`,
    operationId: 'automations.executions.cancel',
    tag: TAG,
    access: WRITE,
    summary:
      'Cancel a run (super_admin), with an optional reason: a pending wait or approval ends, later steps do not run; status CANCELED.',
    body: { schema: api.CancelRequest, required: false, validation: 'schema' },
    ok: api.ExecutionResponse,
    errors: RUN_ERRORS,
    handle: async (input, _ctx, deps) => {
      const body = await input.body();
      await cancelRun(deps.db, deps.engine, input.actor, input.params.id, body?.reason ?? null);
      return { execution: await ended(deps, input.params.id) };
    },
  }),
  operation({
    method: 'post',
    path: `${RUN}/terminate`,
    operationId: 'automations.executions.terminate',
    tag: TAG,
    access: WRITE,
    summary: 'Terminate a run at once with a reason (super_admin); status TERMINATED.',
    body: { schema: api.TerminateRequest, required: true, validation: 'schema' },
    ok: api.ExecutionResponse,
    errors: RUN_ERRORS,
    handle: async (input, _ctx, deps) => {
      const body = await input.body();
      await terminateRun(deps.db, deps.engine, input.actor, input.params.id, body);
      return { execution: await ended(deps, input.params.id) };
    },
  }),
  operation({
    method: 'post',
    path: `${RUN}/rerun`,
    operationId: 'automations.executions.rerun',
    tag: TAG,
    access: WRITE,
    summary:
      'Start a rerun (same payload, the published version) or a retry from the failed step (super_admin); answers the new run.',
    // An unknown run is a 404 (no engine: 503) before the body is read.
    body: { schema: api.RerunRequest, required: false, validation: 'schema' },
    ok: api.ExecutionResponse,
    errors: RUN_ERRORS,
    handle: async (input, _ctx, deps) => {
      const original = await readExecution(deps.db, deps.engine, input.params.id);
      const body = await input.body();
      const started = await rerunRun(deps.db, deps.engine, input.actor, input.params.id, original.automationId, body);
      return { execution: await readExecution(deps.db, deps.engine, started.executionId) };
    },
  }),
];

export function createExecutionsRouter(deps: AppDeps): Router {
  return mountOperations(exactRouter(), deps, EXECUTION_OPERATIONS);
}
