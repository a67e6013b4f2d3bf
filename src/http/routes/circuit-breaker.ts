/**
 * The circuit breaker of an automation (docs/api.md#circuit-breaker): PUT and DELETE of the live
 * setting (super_admin; If-Match, audited), and letting its paused runs go: resume or cancel, each
 * with a reason (admin or super_admin; audited); 503 when the engine cannot be reached.
 */
import type Router from '@koa/router';
import type { AppDeps } from '../context';
import * as api from '../../domain/api-schemas';
import { letGoPausedRuns, setCircuitBreaker } from '../../domain/circuit-breaker';
import { getAutomation } from '../../domain/automations';
import { ITEM_READ_ERRORS, ITEM_WRITE_ERRORS, mountOperations, operation, type Grant, exactRouter } from '../operation';
import { expectedRevisions, IF_MATCH, tagged, viewWithBreaker } from './automations';

const SETTING: Grant = { area: 'automations', mode: 'write' };
/** Resume and cancel: a person reviewing the held runs, as for approvals (admin or super_admin). */
const REVIEW: Grant = { area: 'approvals', mode: 'write' };
const TAG = 'Automations';
const ITEM = '/api/v1/automations/{id}' as const;

const letGo = (action: 'resume' | 'cancel', summary: string) =>
  operation({
    method: 'post',
    path: `${ITEM}/breaker/${action}`,
    operationId: `automations.breaker.${action}`,
    tag: TAG,
    access: REVIEW,
    summary,
    // An unknown automation is a 404 before the body is read.
    body: { schema: api.BreakerActionRequest, required: true, validation: 'schema' },
    ok: action === 'resume' ? api.BreakerResumeResponse : api.BreakerCancelResponse,
    errors: [...ITEM_WRITE_ERRORS, 503],
    handle: async (input, _ctx, deps) => {
      await getAutomation(deps.db, input.params.id);
      const body = await input.body();
      const { record, count } = await letGoPausedRuns(deps.db, deps.engine, input.params.id, action, body, input.actor);
      const automation = await viewWithBreaker(deps, record);
      return (action === 'resume' ? { automation, resumed: count } : { automation, canceled: count }) as never;
    },
  });

export const CIRCUIT_BREAKER_OPERATIONS = [
  operation({
    method: 'put',
    path: `${ITEM}/circuit-breaker`,
    operationId: 'automations.circuitBreaker.set',
    tag: TAG,
    access: SETTING,
    summary:
      'Set the circuit breaker (super_admin): a live setting, applied without a publish to deliveries from 1 s after the answer.',
    body: { schema: api.CircuitBreakerRequest, required: true, validation: 'schema' },
    ok: api.AutomationResponse,
    errors: [...ITEM_WRITE_ERRORS, 412],
    headers: IF_MATCH,
    etag: true,
    handle: async (input, ctx, deps) => {
      await getAutomation(deps.db, input.params.id); // 404 before the body is read
      const settings = await input.body();
      const record = await setCircuitBreaker(deps.db, input.params.id, settings, input.actor, expectedRevisions(ctx));
      return { automation: await viewWithBreaker(deps, tagged(ctx, record)) };
    },
  }),
  operation({
    method: 'delete',
    path: `${ITEM}/circuit-breaker`,
    operationId: 'automations.circuitBreaker.delete',
    tag: TAG,
    access: SETTING,
    summary: 'Remove the circuit breaker (super_admin); runs it paused stay PAUSED until resumed or canceled.',
    ok: api.AutomationResponse,
    errors: [...ITEM_READ_ERRORS, 412],
    headers: IF_MATCH,
    etag: true,
    handle: async (input, ctx, deps) => {
      const record = await setCircuitBreaker(deps.db, input.params.id, null, input.actor, expectedRevisions(ctx));
      return { automation: await viewWithBreaker(deps, tagged(ctx, record)) };
    },
  }),
  letGo(
    'resume',
    'Resume the runs the circuit breaker paused, in acceptance order (admin or super_admin); the breaker closes and counts from zero.',
  ),
  letGo(
    'cancel',
    'Cancel the runs the circuit breaker paused (admin or super_admin): each ends CANCELED, no step ran; the breaker closes.',
  ),
];

export function createCircuitBreakerRouter(deps: AppDeps): Router {
  return mountOperations(exactRouter(), deps, CIRCUIT_BREAKER_OPERATIONS);
}
