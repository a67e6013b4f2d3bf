/**
 * Run history through the API: GET /api/v1/automations/{id}/executions (Temporal visibility,
 * paginated with our signed tokens) and GET /api/v1/automation_executions/{id} (one run with its
 * steps, from the workflow's `state` query, its result, or its history when no worker answers).
 * Real HTTP, real store, real Temporal dev server and worker. Visibility is eventually consistent,
 * so listings are polled until they show what the test waits for.
 */
import { expectRunFailure, testDataConverter } from '../helpers/temporal';
import request from 'supertest';
import { Client, Connection } from '@temporalio/client';
import { startStack, hmacEvent, deliver, listenerPath, type Stack, type AutomationView } from '../helpers/stack';
import { createTemporalEngine } from '../../src/temporal/engine';
import { readExecution, type ExecutionView } from '../../src/domain/executions';
import { poll } from '../helpers/wait';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const PAYLOAD = { employee_id: '12345', status: 'terminated' };

describe('executions API', () => {
  let stack: Stack;
  const get = (path: string, token = stack.adminToken) =>
    request(stack.service.server).get(path).set('Authorization', `Bearer ${token}`);

  async function automationWith(
    steps: unknown[],
    displayName = 'executions',
  ): Promise<{ automation: AutomationView; secret: string }> {
    const created = await stack.createAutomation({
      displayName,
      trigger: { incomingWebhook: { authMethod: 'HMAC' } },
      steps,
    });
    return { automation: created.automation, secret: created.signingSecret! };
  }

  async function send(
    target: { automation: AutomationView; secret: string },
    payload: unknown = PAYLOAD,
  ): Promise<{ eventId: string; executionId: string }> {
    const res = await deliver(stack, listenerPath(target.automation), hmacEvent(target.secret, payload));
    if (res.status !== 200) throw new Error(`delivery: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body as { eventId: string; executionId: string };
  }

  const execution = async (id: string): Promise<request.Response> =>
    get(`/api/v1/automation_executions/${encodeURIComponent(id)}`);

  /** A run's detail without its steps' times (the run's clock and the history's event times differ by moments). */
  const withoutTimes = (view: ExecutionView): ExecutionView => ({
    ...view,
    steps: view.steps.map(({ startedAt: _s, finishedAt: _f, ...step }) => step),
  });

  /** The run's detail as the history alone tells it (the `state` query not waited for: no worker in time). */
  const fromHistoryOf = (id: string): Promise<ExecutionView> => {
    const { db } = stack.service.deps;
    const historyOnly = createTemporalEngine({
      client: stack.client,
      taskQueue: stack.taskQueue,
      db,
      queryTimeoutMs: 0,
    });
    return readExecution(db, historyOnly, id);
  };

  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(async () => stack?.close());

  it('lists the runs of an automation after two deliveries, with their status and version', async () => {
    const target = await automationWith([{ id: 'vars', setVariables: { employee: 'ctx.trigger.employee_id' } }]);
    const first = await send(target);
    const second = await send(target);
    const path = `/api/v1/automations/${target.automation.id}/executions`;
    const res = await poll(
      () => get(path),
      (r) =>
        r.status === 200 &&
        r.body.list.length === 2 &&
        r.body.list.every((item: Json) => item.execution.status === 'COMPLETED'),
    );
    expect(res.status).toBe(200);
    expect(res.body.nextPageToken).toBe('');
    const byId = new Map<string, Json>(res.body.list.map((item: Json) => [item.execution.id, item.execution]));
    expect([...byId.keys()].sort()).toEqual([first.executionId, second.executionId].sort());
    const one = byId.get(first.executionId)!;
    expect(one).toEqual({
      id: first.executionId,
      eventId: first.eventId,
      status: 'COMPLETED',
      startedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/),
      closedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      version: 1,
    });
    expect(Date.parse(one.closedAt)).toBeGreaterThanOrEqual(Date.parse(one.startedAt));
  });

  it('answers 404 for an unknown automation, 401 without a token, 403 below admin', async () => {
    const missing = await get('/api/v1/automations/nope/executions');
    expect(missing.status).toBe(404);
    expect(missing.body.code).toBe(5);
    const target = await automationWith([{ id: 'vars', setVariables: { one: '1' } }]);
    const path = `/api/v1/automations/${target.automation.id}/executions`;
    expect((await request(stack.service.server).get(path)).status).toBe(401);
    // An admin reads runs (an approver needs an inbox); read_only does not.
    expect((await get(path, await stack.service.tokenFor('admin'))).status).toBe(200);
    expect((await get(path, await stack.service.tokenFor('read_only'))).status).toBe(403);
    expect((await request(stack.service.server).get('/api/v1/automation_executions/x')).status).toBe(401);
    expect((await get('/api/v1/automation_executions/x', await stack.service.tokenFor('read_only'))).status).toBe(403);
  });

  it('pages through 12 runs 10 at a time with signed tokens; a tampered or foreign token is 400', async () => {
    const target = await automationWith(
      [{ id: 'vars', setVariables: { employee: 'ctx.trigger.employee_id' } }],
      'paged',
    );
    const started = new Set<string>();
    for (let i = 0; i < 12; i += 1) started.add((await send(target, { employee_id: String(i) })).executionId);
    const path = `/api/v1/automations/${target.automation.id}/executions`;
    // Walk only once every run is closed: visibility orders running runs apart from closed ones.
    const closed = await poll(
      () => get(`${path}?page_size=100`),
      (r) =>
        r.status === 200 &&
        r.body.list.length === 12 &&
        r.body.list.every((item: Json) => item.execution.status === 'COMPLETED'),
    );
    expect(closed.body.list).toHaveLength(12);

    const first = await get(`${path}?page_size=5`); // clamped to 10
    expect(first.status).toBe(200);
    expect(first.body.list).toHaveLength(10);
    expect(first.body.nextPageToken).not.toBe('');
    const second = await get(`${path}?pageSize=10&pageToken=${encodeURIComponent(first.body.nextPageToken)}`);
    expect(second.status).toBe(200);
    expect(second.body.list).toHaveLength(2);
    expect(second.body.nextPageToken).toBe('');
    const walked = [...first.body.list, ...second.body.list].map((item: Json) => item.execution.id);
    expect(new Set(walked).size).toBe(12);
    expect(new Set(walked)).toEqual(started);

    const token: string = first.body.nextPageToken;
    const tampered = `${token.slice(0, 5)}${token[5] === 'A' ? 'B' : 'A'}${token.slice(6)}`;
    const bad = await get(`${path}?page_size=10&page_token=${encodeURIComponent(tampered)}`);
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe(3);
    expect(JSON.stringify(bad.body.details)).toContain('page_token');

    const other = await automationWith([{ id: 'vars', setVariables: { one: '1' } }]);
    const foreign = await get(
      `/api/v1/automations/${other.automation.id}/executions?page_token=${encodeURIComponent(token)}`,
    );
    expect(foreign.status).toBe(400);
    expect(foreign.body.code).toBe(3);
  });

  it('shows one completed run with DONE and SKIPPED steps, their outputs and its version; the id works encoded or not', async () => {
    const target = await automationWith([
      { id: 'vars', setVariables: { employee: 'ctx.trigger.employee_id', status: 'ctx.trigger["status"]' } },
      { id: 'hire', when: 'ctx.steps.vars.status == "hired"', setVariables: { message: '"welcome"' } },
      {
        id: 'derived',
        when: 'ctx.steps.vars.status == "terminated"',
        setVariables: { message: '"offboard " + ctx.steps.vars.employee' },
      },
    ]);
    const run = await send(target);
    await stack.client.workflow.getHandle(run.executionId).result();

    const res = await execution(run.executionId);
    expect(res.status).toBe(200);
    const times = { startedAt: expect.any(String), finishedAt: expect.any(String) };
    expect(res.body).toEqual({
      execution: {
        id: run.executionId,
        eventId: run.eventId,
        automationId: target.automation.id,
        automationName: 'executions',
        trigger: { employee_id: '12345', status: 'terminated' },
        rerunOf: null,
        reruns: [],
        status: 'COMPLETED',
        startedAt: expect.any(String),
        closedAt: expect.any(String),
        version: 1,
        error: null,
        steps: [
          {
            id: 'vars',
            kind: 'setVariables',
            status: 'DONE',
            output: { employee: '12345', status: 'terminated' },
            error: null,
            ...times,
          },
          { id: 'hire', kind: 'setVariables', status: 'SKIPPED', output: null, error: null, ...times },
          {
            id: 'derived',
            kind: 'setVariables',
            status: 'DONE',
            output: { message: 'offboard 12345' },
            error: null,
            ...times,
          },
        ],
        unaudited: [],
      },
    });
    // The raw id, ':' unencoded, names the same run.
    const raw = await get(`/api/v1/automation_executions/${run.executionId}`);
    expect(raw.status).toBe(200);
    expect(raw.body).toEqual(res.body);
  });

  it('shows a FAILED run: the failing step, its error, and the steps after it never ran', async () => {
    const target = await automationWith([
      { id: 'vars', setVariables: { employee: 'ctx.trigger.employee_id' } },
      { id: 'broken', setVariables: { missing: 'ctx.trigger.no_such_field' } },
      { id: 'after', setVariables: { never: '"reached"' } },
    ]);
    const run = await send(target);
    const failure = await expectRunFailure(stack.client.workflow.getHandle(run.executionId));
    expect(failure.message).toMatch(/^step "broken" failed: /);

    const res = await execution(run.executionId);
    expect(res.status).toBe(200);
    const got = res.body.execution as ExecutionView;
    expect(got.status).toBe('FAILED');
    expect(got.closedAt).not.toBeNull();
    expect(got.error).toMatch(/^step "broken" failed: /);
    expect(got.steps.map((s) => [s.id, s.status])).toEqual([
      ['vars', 'DONE'],
      ['broken', 'FAILED'],
      ['after', 'NOT_RUN'],
    ]);
    expect(got.steps[1]!.error).toMatch(/no_such_field/);
    expect(got.steps[0]!.output).toEqual({ employee: '12345' });

    // Without the query (no worker in time), the history says the same.
    const fromHistory = await fromHistoryOf(run.executionId);
    // The API adds the audit cross-check; the run's own clock and the history's event times differ by moments.
    expect(withoutTimes({ ...fromHistory!, unaudited: [] })).toEqual(withoutTimes(got));

    const listed = await poll(
      () => get(`/api/v1/automations/${target.automation.id}/executions`),
      (r) => r.body.list?.[0]?.execution.status === 'FAILED',
    );
    expect(listed.body.list[0].execution.id).toBe(run.executionId);
  });

  it('reads an ownership step made by its local first attempt from the history: the ownership, not the evaluated ids', async () => {
    const post = (path: string, body: unknown) =>
      request(stack.service.server)
        .post(path)
        .set('Authorization', `Bearer ${stack.adminToken}`)
        .send(body as object);
    const user = await post('/api/v1/users', {
      displayName: 'Executions robot',
      email: 'svc-executions@acme.com',
      type: 'USER_TYPE_SERVICE',
    });
    const app = await post('/api/v1/apps', { displayName: 'Executions app' });
    const entitlement = await post(`/api/v1/apps/${app.body.app.id}/entitlements`, {
      displayName: 'Executions admin',
      slug: 'executions-admin',
    });
    expect([user.status, app.status, entitlement.status]).toEqual([200, 200, 200]);
    const ref = {
      userId: user.body.user.id as string,
      roleSlug: 'owner',
      appId: app.body.app.id as string,
      entitlementId: entitlement.body.appEntitlement.id as string,
    };
    const target = await automationWith([
      {
        id: 'own',
        createEntitlementOwner: {
          userId: `'${ref.userId}'`,
          roleSlug: "'owner'",
          appId: `'${ref.appId}'`,
          entitlementId: `'${ref.entitlementId}'`,
        },
      },
      { id: 'stop', fail: { message: "'stopped after the ownership'" } },
    ]);
    const run = await send(target);
    await expectRunFailure(stack.client.workflow.getHandle(run.executionId));

    const got = (await execution(run.executionId)).body.execution as ExecutionView;
    expect(got.steps.map((s) => [s.id, s.status])).toEqual([
      ['own', 'DONE'],
      ['stop', 'FAILED'],
    ]);
    expect(got.steps[0]!.output).toEqual({ ...ref, createdAt: expect.any(String) });
    const fromHistory = await fromHistoryOf(run.executionId);
    expect(withoutTimes({ ...fromHistory!, unaudited: [] })).toEqual(withoutTimes(got));
    // One attempt of the ownership effect (its local first one), as the run and the history both tell.
    expect(got.steps[0]!.attempts).toBe(1);
    expect(fromHistory?.steps[0]!.startedAt).toEqual(expect.any(String));
  });

  it('shows a WAITING step while the run sleeps, then the completed run', async () => {
    const target = await automationWith([
      { id: 'vars', setVariables: { employee: 'ctx.trigger.employee_id' } },
      // Long enough for the checks made while it waits, even on a loaded machine (the RUNNING
      // checks below would fail otherwise, never pass by chance).
      { id: 'pause', wait: { duration: '20s' } },
      { id: 'after', setVariables: { done: 'true' } },
    ]);
    const run = await send(target);
    const waiting = await poll(
      () => execution(run.executionId),
      // (the steps appear once the worker has loaded the run's version)
      (r) => r.status === 200 && r.body.execution?.steps?.[1]?.status === 'WAITING',
    );
    expect(waiting.body.execution).toMatchObject({
      id: run.executionId,
      status: 'RUNNING',
      closedAt: null,
      version: 1,
      error: null,
    });
    expect(waiting.body.execution.steps.map((s: Json) => [s.id, s.status])).toEqual([
      ['vars', 'DONE'],
      ['pause', 'WAITING'],
      ['after', 'PENDING'],
    ]);

    // The history fallback sees the running timer too.
    const fromHistory = await fromHistoryOf(run.executionId);
    expect(fromHistory?.status).toBe('RUNNING');
    expect(fromHistory?.steps.map((s) => s.status)).toEqual(['DONE', 'WAITING', 'PENDING']);
    expect(fromHistory?.steps[0]!.output).toEqual({ employee: '12345' });

    const listed = await poll(
      () => get(`/api/v1/automations/${target.automation.id}/executions`),
      (r) => r.body.list?.length === 1,
    );
    expect(['RUNNING', 'COMPLETED']).toContain(listed.body.list[0].execution.status);

    await stack.client.workflow.getHandle(run.executionId).result();
    const done = await execution(run.executionId);
    expect(done.body.execution.status).toBe('COMPLETED');
    expect(done.body.execution.steps.map((s: Json) => s.status)).toEqual(['DONE', 'DONE', 'DONE']);
    expect(done.body.execution.steps[1].output).toEqual({ duration: '20s' });
  });

  it('shows a terminated run as TERMINATED, the interrupted step saying why', async () => {
    const target = await automationWith([{ id: 'pause', wait: { duration: '3600s' } }]);
    const run = await send(target);
    const waiting = await poll(
      () => execution(run.executionId),
      (r) => r.body.execution?.steps?.[0]?.status === 'WAITING',
    );
    expect(waiting.body.execution.steps[0].status).toBe('WAITING');
    await stack.client.workflow.getHandle(run.executionId).terminate('operator stopped it');
    const res = await poll(
      () => execution(run.executionId),
      (r) => r.body.execution?.status === 'TERMINATED',
    );
    expect(res.body.execution.error).toBe('run terminated: operator stopped it');
    expect(res.body.execution.steps[0]).toMatchObject({ id: 'pause', status: 'FAILED', error: 'terminated' });
    expect(res.body.execution.closedBy).toEqual({ actor: null, actorDisplayName: null, reason: 'operator stopped it' });
  });

  it('answers 404 for an unknown execution id, encoded or not, and for ids that cannot be runs', async () => {
    for (const path of [
      '/api/v1/automation_executions/webhook:nope:00000000-0000-4000-8000-000000000000',
      `/api/v1/automation_executions/${encodeURIComponent('webhook:nope:00000000-0000-4000-8000-000000000000')}`,
      `/api/v1/automation_executions/${'x'.repeat(2000)}`,
    ]) {
      const res = await get(path);
      expect([path.slice(0, 60), res.status]).toEqual([path.slice(0, 60), 404]);
      expect(res.body.code).toBe(5);
    }
  });

  it('reads the steps from the history when no worker answers the query', async () => {
    const idle = await startStack({ worker: false });
    try {
      const created = await idle.createAutomation({
        displayName: 'no worker',
        trigger: { incomingWebhook: { authMethod: 'HMAC' } },
        steps: [
          { id: 'vars', setVariables: { one: '1' } },
          { id: 'pause', wait: { duration: '1s' } },
        ],
      });
      const accepted = await deliver(
        idle,
        listenerPath(created.automation),
        hmacEvent(created.signingSecret!, PAYLOAD),
      );
      expect(accepted.status).toBe(200);
      const res = await request(idle.service.server)
        .get(`/api/v1/automation_executions/${encodeURIComponent(accepted.body.executionId)}`)
        .set('Authorization', `Bearer ${idle.adminToken}`);
      expect(res.status).toBe(200);
      expect(res.body.execution).toMatchObject({
        status: 'RUNNING',
        version: 1,
        automationId: created.automation.id,
        automationName: 'no worker',
        eventId: accepted.body.eventId,
        // The payload, from the history (encrypted there), as received.
        trigger: PAYLOAD,
      });
      expect(res.body.execution.steps.map((s: Json) => [s.id, s.kind, s.status])).toEqual([
        ['vars', 'setVariables', 'PENDING'],
        ['pause', 'wait', 'PENDING'],
      ]);
      await idle.client.workflow.getHandle(accepted.body.executionId).terminate('test over');
    } finally {
      await idle.close();
    }
  });
});

describe('executions API, workflow engine unreachable', () => {
  it('503 with Retry-After in the error shape', async () => {
    // No gRPC retry interceptor: calls fail at once, and no retry is left pending when the connection closes.
    const connection = Connection.lazy({ address: '127.0.0.1:1', connectTimeout: 1000, interceptors: [] });
    const stack = await startStack({
      temporal: {
        client: new Client({ connection, ...testDataConverter() }),
        taskQueue: 'nowhere',
        startTimeoutMs: 1500,
      },
      worker: false,
    });
    try {
      const created = await stack.createAutomation({
        displayName: 'down',
        trigger: { incomingWebhook: { authMethod: 'HMAC' } },
        steps: [],
      });
      for (const path of [
        `/api/v1/automations/${created.automation.id}/executions`,
        '/api/v1/automation_executions/webhook:a:b',
      ]) {
        const res = await request(stack.service.server).get(path).set('Authorization', `Bearer ${stack.adminToken}`);
        expect([path, res.status]).toEqual([path, 503]);
        expect(res.body).toEqual({ code: 14, message: expect.stringMatching(/unavailable/), details: [] });
        expect(res.headers['retry-after']).toBe('5');
      }
    } finally {
      await stack.close();
      await connection.close().catch(() => undefined);
    }
  });
});
