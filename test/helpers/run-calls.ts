/**
 * The calls the run tests make on a stack, written once: the API as a caller with a token, an
 * automation to deliver to, a signed delivery, a run's execution view and a wait for it, an
 * automation's listed runs, and the approval of a run held by its `hold` step. `stack` is read at
 * each call, so the calls can be made before the stack starts (in a describe block).
 */
import request from 'supertest';
import { deliver, hmacEvent, listenerPath, type Stack } from './stack';
import { poll } from './wait';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

/** An automation as a sender reaches it. */
export interface Target {
  id: string;
  secret: string;
  path: string;
}

export function runCalls(stack: () => Stack, defaults: { displayName: string; steps: unknown[] }) {
  const as = (token: string) => ({
    get: (p: string) => request(stack().service.server).get(p).set('Authorization', `Bearer ${token}`),
    post: (p: string, body?: unknown) =>
      request(stack().service.server)
        .post(p)
        .set('Authorization', `Bearer ${token}`)
        .send(body as object),
    put: (p: string, body?: unknown, headers: Record<string, string> = {}) =>
      request(stack().service.server)
        .put(p)
        .set('Authorization', `Bearer ${token}`)
        .set(headers)
        .send(body as object),
    delete: (p: string, headers: Record<string, string> = {}) =>
      request(stack().service.server).delete(p).set('Authorization', `Bearer ${token}`).set(headers),
  });
  /** As the stack's super_admin. */
  const api = () => as(stack().adminToken);
  const runPath = (id: string) => `/api/v1/automation_executions/${encodeURIComponent(id)}`;

  /** Creates and publishes an HMAC-triggered automation. */
  async function automation(fields: Record<string, unknown> = {}, steps: unknown[] = defaults.steps): Promise<Target> {
    const created = await stack().createAutomation({
      displayName: defaults.displayName,
      trigger: { incomingWebhook: { authMethod: 'HMAC' } },
      steps,
      ...fields,
    });
    return { id: created.automation.id, secret: created.signingSecret!, path: listenerPath(created.automation) };
  }
  const send = (target: Omit<Target, 'id'>, payload: unknown, eventId?: string) =>
    deliver(stack(), target.path, hmacEvent(target.secret, payload, eventId ? { eventId } : {}));
  /** Delivers, expects 200, answers the run's id. */
  async function accepted(target: Omit<Target, 'id'>, payload: unknown, eventId?: string): Promise<string> {
    const res = await send(target, payload, eventId);
    expect(res.status).toBe(200);
    return res.body.executionId as string;
  }
  async function execution(id: string): Promise<Json> {
    const res = await api().get(runPath(id));
    expect(res.status).toBe(200);
    return res.body.execution;
  }
  /** The run once `done` holds for it; throws (naming `done` and the run's last state) when the time is up. */
  const untilRun = (id: string, done: (e: Json) => boolean): Promise<Json> =>
    poll(() => execution(id), done, { what: `run ${id}: ${done.toString()}` });
  /** The automation's runs in its executions list, id → status. */
  async function listed(automationId: string): Promise<Map<string, string>> {
    const res = await api().get(`/api/v1/automations/${automationId}/executions?pageSize=100`);
    expect(res.status).toBe(200);
    return new Map(res.body.list.map((item: Json) => [item.execution.id, item.execution.status]));
  }
  const holding = (e: Json) => e.status === 'RUNNING' && e.steps[0]?.status === 'WAITING_FOR_APPROVAL';
  const approve = async (id: string) =>
    expect((await api().post(`${runPath(id)}/steps/hold/approve`, {})).status).toBe(200);

  return { as, api, runPath, automation, send, accepted, execution, untilRun, listed, holding, approve };
}
