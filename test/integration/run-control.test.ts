/**
 * Run control on the real dev server: approval steps decided through a Temporal Update (approve,
 * reject, timeout, twice, on a closed run, after a worker restart), cancel during a wait, terminate,
 * rerun after fixing the automation, and retry from the failed step. Real HTTP, store and worker.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { listAuditEvents } from '../../src/store/audit';
import { apiClientByClientId } from '../../src/store/api-clients';
import { decodePayloadsInPlace } from '../../src/temporal/payloads';
import { automation } from '../../workflows';
import { decideUpdate } from '../../src/contract/workflows';
import type { AutomationRunInput } from '../../src/contract/run';
import { runStartOptions } from '../../src/temporal/engine';
import type { Stack } from '../helpers/stack';
import { startRestartableStack, type RestartableStack } from '../helpers/restartable-stack';
import { runCalls, type Target } from '../helpers/run-calls';
import { poll } from '../helpers/wait';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

let restartable: RestartableStack;
let stack: Stack;
let admin: string;
let superAdmin: string;
let readOnly: string;

beforeAll(async () => {
  restartable = await startRestartableStack();
  ({ stack, admin, superAdmin, readOnly } = restartable);
});

afterAll(async () => {
  await restartable?.close();
});

const calls = runCalls(() => stack, { displayName: 'run control', steps: [] });
const { as: api, runPath, execution } = calls;
const automationWith = (steps: unknown[]) => calls.automation({}, steps);
/** Delivers (an employee event unless told), expects 200, answers the run's id. */
const send = (target: Target, payload: unknown = { employee_id: '42' }) => calls.accepted(target, payload);

async function untilStep(id: string, stepId: string, status: string): Promise<Json> {
  const got = await poll(
    () => execution(id),
    (e) => e.steps.find((s: Json) => s.id === stepId)?.status === status,
  );
  expect(got.steps.find((s: Json) => s.id === stepId)?.status).toBe(status);
  return got;
}

async function untilStatus(id: string, status: string): Promise<Json> {
  const got = await poll(
    () => execution(id),
    (e) => e.status === status,
  );
  expect(got.status).toBe(status);
  return got;
}

/** A receiver on 127.0.0.1 answering `status()` with a JSON body, its URL given to `use`; closed afterwards. */
async function withReceiver(status: () => number, use: (url: string) => Promise<void>): Promise<void> {
  const server = http.createServer((_req, res) => {
    res.writeHead(status(), { 'content-type': 'application/json' });
    res.end('{"ok": true}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    await use(`http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`);
  } finally {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

/** The actor string of a token's client and its display name. */
async function whoIs(token: string): Promise<{ actor: string; name: string }> {
  const { clientId } = (await stack.service.deps.tokens.verify(token))!;
  const client = await apiClientByClientId(stack.service.deps.db, clientId);
  expect(client?.displayName).toEqual(expect.any(String));
  return { actor: `client:${clientId}`, name: client!.displayName };
}

const approval = (extra: Record<string, unknown> = {}) => [
  { id: 'mgr', waitForApproval: { ...extra } },
  { id: 'after', setVariables: { decision: 'ctx.steps.mgr.decision', by: 'ctx.steps.mgr.by' } },
];

describe('waitForApproval', () => {
  it('parks the run as WAITING_FOR_APPROVAL; an admin approves; later steps read the decision; the audit trail says who', async () => {
    const target = await automationWith(approval({ timeout: '86400s' }));
    const id = await send(target);
    await untilStep(id, 'mgr', 'WAITING_FOR_APPROVAL');

    expect((await api(readOnly).post(`${runPath(id)}/steps/mgr/approve`, {})).status).toBe(403);
    const res = await api(admin).post(`${runPath(id)}/steps/mgr/approve`, { comment: 'ok by me' });
    expect(res.status).toBe(200);
    // One actor string everywhere: the decision's `by` and the audit record's actor.
    const adminActor = `client:${(await stack.service.deps.tokens.verify(admin))!.clientId}`;
    // An admin reads runs too: the answer is the run, with the decision recorded.
    const decided = res.body.execution.steps.find((s: Json) => s.id === 'mgr');
    expect(decided.output).toEqual({
      decision: 'approved',
      by: adminActor,
      at: expect.any(String),
      comment: 'ok by me',
    });
    expect(Date.parse(decided.output.at)).not.toBeNaN();

    const done = await untilStatus(id, 'COMPLETED');
    expect(done.steps[1].output).toEqual({ decision: 'approved', by: adminActor });
    expect(done.steps[0].output).toEqual(decided.output);
    expect(done.unaudited).toEqual([]);
    const audit = await listAuditEvents(stack.service.deps.db, 'automation_execution', id);
    expect(audit.map((a) => [a.action, a.actor, a.details])).toEqual([
      ['automation_execution.approve', adminActor, { stepId: 'mgr', comment: 'ok by me' }],
    ]);
  });

  it('the approver reads the title, the details and the deadline, on the run and in the inbox; a decided step keeps them', async () => {
    const target = await automationWith([
      {
        id: 'mgr',
        waitForApproval: {
          timeout: '3600s',
          title: "'Offboard ' + ctx.trigger.email",
          details: { Who: 'ctx.trigger.email', Access: 'ctx.trigger.roles', Count: 'ctx.trigger.n' },
        },
      },
    ]);
    const id = await send(target, { email: 'ana@example.com', roles: ['crm', 'erp'], n: 2 });
    const waiting = await untilStep(id, 'mgr', 'WAITING_FOR_APPROVAL');
    expect(waiting.automationName).toBe('run control');
    const approval = waiting.steps[0].approval;
    expect(approval).toEqual({
      title: 'Offboard ana@example.com',
      details: [
        { label: 'Who', value: 'ana@example.com' },
        { label: 'Access', value: '["crm","erp"]' },
        { label: 'Count', value: '2' },
      ],
      requestedAt: expect.any(String),
      deadline: expect.any(String),
    });
    expect(Date.parse(approval.deadline) - Date.parse(approval.requestedAt)).toBe(3_600_000);
    const inbox = await poll(
      () => api(admin).get(`/api/v1/automation_executions?waitingForApproval=true&automationId=${target.id}`),
      (res) => res.body.list?.length === 1,
    );
    expect(inbox.body.list[0].execution).toMatchObject({ waitingForApproval: { stepId: 'mgr' }, approval });

    expect((await api(admin).post(`${runPath(id)}/steps/mgr/reject`, { comment: 'not yet' })).status).toBe(200);
    const failed = await untilStatus(id, 'FAILED');
    expect(failed.steps[0]).toMatchObject({ status: 'FAILED', approval });
  });

  it('without a title the automation name and step id; a title that cannot be evaluated fails the step naming it', async () => {
    const plain = await automationWith(approval());
    const id = await send(plain);
    const waiting = await untilStep(id, 'mgr', 'WAITING_FOR_APPROVAL');
    expect(waiting.steps[0].approval).toMatchObject({ title: 'run control: mgr', details: [], deadline: null });
    const broken = await automationWith(approval({ title: 'ctx.trigger.missing.deeper' }));
    const failed = await untilStatus(await send(broken), 'FAILED');
    expect(failed.steps[0]).toMatchObject({ status: 'FAILED', error: expect.stringMatching(/^title: /) });
    expect(failed.steps[0].approval).toBeUndefined();
  });

  it('a rejection ends the run as FAILED with reason rejected; the step keeps the decision', async () => {
    const target = await automationWith(approval());
    const id = await send(target);
    await untilStep(id, 'mgr', 'WAITING_FOR_APPROVAL');
    const res = await api(superAdmin).post(`${runPath(id)}/steps/mgr/reject`, { comment: 'no' });
    expect(res.status).toBe(200);
    const failed = await untilStatus(id, 'FAILED');
    expect(failed.error).toBe('step "mgr" failed: rejected');
    expect(failed.steps.map((s: Json) => [s.id, s.status])).toEqual([
      ['mgr', 'FAILED'],
      ['after', 'NOT_RUN'],
    ]);
    expect(failed.steps[0].output).toMatchObject({ decision: 'rejected', comment: 'no' });
    const { actor, name } = await whoIs(superAdmin);
    expect(failed.rejectedBy).toEqual({ actor, actorDisplayName: name, stepId: 'mgr', comment: 'no' });
    expect(failed.closedBy).toBeUndefined();
  });

  it('with onReject continue, a rejection lets later steps branch on the decision', async () => {
    const target = await automationWith([
      { id: 'mgr', waitForApproval: { onReject: 'continue' } },
      { id: 'undo', when: "ctx.steps.mgr.decision == 'rejected'", setVariables: { undone: 'true' } },
    ]);
    const id = await send(target);
    await untilStep(id, 'mgr', 'WAITING_FOR_APPROVAL');
    expect((await api(superAdmin).post(`${runPath(id)}/steps/mgr/reject`)).status).toBe(200);
    const done = await untilStatus(id, 'COMPLETED');
    expect(done.steps.map((s: Json) => [s.id, s.status, s.output?.decision ?? s.output])).toEqual([
      ['mgr', 'DONE', 'rejected'],
      ['undo', 'DONE', { undone: true }],
    ]);
  });

  it('a timeout decides: timed_out, then onTimeout approve goes on and reject (the default) fails', async () => {
    const approveOnTimeout = await automationWith(approval({ timeout: '1s', onTimeout: 'approve' }));
    const rejectOnTimeout = await automationWith(approval({ timeout: '1s' }));
    const [a, b] = [await send(approveOnTimeout), await send(rejectOnTimeout)];
    const done = await untilStatus(a, 'COMPLETED');
    expect(done.steps[0]).toMatchObject({ status: 'DONE', output: { decision: 'timed_out', by: null } });
    expect(done.steps[1].output).toEqual({ decision: 'timed_out', by: null });
    const failed = await untilStatus(b, 'FAILED');
    expect(failed.steps[0]).toMatchObject({ status: 'FAILED', error: 'rejected', output: { decision: 'timed_out' } });
    // A timeout is nobody's rejection.
    expect(failed.rejectedBy).toBeUndefined();
  });

  it('approving twice: the second is 409; an unknown step 404; a closed run 409; an unknown run 404', async () => {
    const target = await automationWith(approval());
    const id = await send(target);
    await untilStep(id, 'mgr', 'WAITING_FOR_APPROVAL');
    expect((await api(superAdmin).post(`${runPath(id)}/steps/nope/approve`)).status).toBe(404);
    const notWaiting = await api(admin).post(`${runPath(id)}/steps/after/approve`);
    expect([notWaiting.status, notWaiting.body.message]).toEqual([409, 'step "after" is not waiting for approval']);
    expect((await api(superAdmin).post(`${runPath(id)}/steps/mgr/approve`)).status).toBe(200);
    const second = await api(superAdmin).post(`${runPath(id)}/steps/mgr/approve`);
    expect(second.status).toBe(409);
    expect(second.body.code).toBe(6);
    await untilStatus(id, 'COMPLETED');
    const closed = await api(superAdmin).post(`${runPath(id)}/steps/mgr/reject`);
    expect([closed.status, closed.body.message]).toEqual([409, 'the run is closed']);
    // Neither answer names a run's or a step's status (an admin may decide without reading runs).
    const byAdmin = await api(admin).post(`${runPath(id)}/steps/after/approve`);
    expect([byAdmin.status, byAdmin.body.message]).toEqual([409, 'the run is closed']);
    expect(JSON.stringify([second.body, closed.body, byAdmin.body])).not.toMatch(
      /COMPLETED|DONE|WAITING|RUNNING|FAILED/,
    );
    expect(
      (await api(superAdmin).post(`${runPath('webhook:none:00000000-0000-4000-8000-000000000000')}/steps/mgr/approve`))
        .status,
    ).toBe(404);
    expect((await api(superAdmin).post(`${runPath(id)}/steps/mgr/approve`, { comment: 7 })).status).toBe(400);
  });

  it('a decision sent to the engine directly (not through the API) is taken as the engine delivers it, and shows as unaudited', async () => {
    const target = await automationWith(approval());
    const id = await send(target);
    await untilStep(id, 'mgr', 'WAITING_FOR_APPROVAL');
    // Anyone the Temporal frontend accepts can send the update, with any `by`.
    await stack.client.workflow.getHandle(id).executeUpdate(decideUpdate, {
      args: [{ stepId: 'mgr', decision: 'approved', by: 'client:forged', comment: null }],
    });
    const done = await untilStatus(id, 'COMPLETED');
    expect(done.steps[0].output).toMatchObject({ decision: 'approved', by: 'client:forged' });
    expect(done.unaudited).toEqual(['decision:mgr']);
    expect(await listAuditEvents(stack.service.deps.db, 'automation_execution', id)).toEqual([]);

    // A run started on the engine directly, linked to this one and marking the approval step done.
    const history = await stack.client.workflow.getHandle(id).fetchHistory();
    const started = history.events![0]!.workflowExecutionStartedEventAttributes!.input!.payloads![0]!;
    await decodePayloadsInPlace(started, stack.client.options.loadedDataConverter.payloadCodecs);
    const input = stack.client.options.loadedDataConverter.payloadConverter.fromPayload(started) as AutomationRunInput;
    const forgedId = `${id}:forged`;
    const resume = {
      fromStepId: 'after',
      steps: [
        {
          id: 'mgr',
          status: 'DONE' as const,
          output: { decision: 'approved', by: 'client:forged', at: null, comment: null },
        },
      ],
    };
    await stack.client.workflow.start(
      automation,
      runStartOptions(stack.taskQueue, {
        runId: forgedId,
        input: { ...input, rerunOf: id, resume },
        automationName: 'forged',
        rerunOf: id,
        summary: 'forged',
      }),
    );
    const forged = await untilStatus(forgedId, 'COMPLETED');
    expect(forged.unaudited).toEqual(['decision:mgr', 'rerunOf']);
  });

  it('is approved after the worker was restarted while the run waited', async () => {
    const target = await automationWith(approval());
    const id = await send(target);
    await untilStep(id, 'mgr', 'WAITING_FOR_APPROVAL');
    await restartable.stopWorker();
    await restartable.startWorker();
    const res = await api(superAdmin).post(`${runPath(id)}/steps/mgr/approve`);
    expect(res.status).toBe(200);
    expect((await untilStatus(id, 'COMPLETED')).steps[1].output.decision).toBe('approved');
  });
});

describe('cancel, terminate', () => {
  it('cancel during a wait: the wait ends, later steps do not run, status CANCELED', async () => {
    const target = await automationWith([
      { id: 'pause', wait: { duration: '3600s' } },
      { id: 'after', setVariables: { x: '1' } },
    ]);
    const id = await send(target);
    await untilStep(id, 'pause', 'WAITING');
    expect((await api(admin).post(`${runPath(id)}/cancel`)).status).toBe(403);
    expect((await api(superAdmin).post(`${runPath(id)}/cancel`, { reason: 7 })).status).toBe(400);
    expect((await api(superAdmin).post(`${runPath(id)}/cancel`, { reason: 'sent by mistake' })).status).toBe(200);
    const canceled = await untilStatus(id, 'CANCELED');
    expect(canceled.steps.map((s: Json) => [s.status, s.error])).toEqual([
      ['FAILED', 'canceled'],
      ['NOT_RUN', null],
    ]);
    const { actor, name } = await whoIs(superAdmin);
    expect(canceled.closedBy).toEqual({ actor, actorDisplayName: name, reason: 'sent by mistake' });
    expect((await api(superAdmin).post(`${runPath(id)}/cancel`)).status).toBe(409);
    const audit = await listAuditEvents(stack.service.deps.db, 'automation_execution', id);
    expect(audit.map((a) => [a.action, a.details])).toEqual([
      ['automation_execution.cancel', { reason: 'sent by mistake' }],
    ]);
  });

  it('a run canceled or terminated on the workflow engine directly names no actor; a termination keeps its reason', async () => {
    const target = await automationWith(approval());
    const [a, b] = [await send(target), await send(target)];
    await untilStep(a, 'mgr', 'WAITING_FOR_APPROVAL');
    await untilStep(b, 'mgr', 'WAITING_FOR_APPROVAL');
    await stack.client.workflow.getHandle(a).cancel();
    await stack.client.workflow.getHandle(b).terminate('by hand in the Web UI');
    expect((await untilStatus(a, 'CANCELED')).closedBy).toEqual({ actor: null, actorDisplayName: null, reason: null });
    const terminated = await untilStatus(b, 'TERMINATED');
    expect(terminated.closedBy).toEqual({ actor: null, actorDisplayName: null, reason: 'by hand in the Web UI' });
    expect(terminated.steps.map((s: Json) => [s.status, s.error])).toEqual([
      ['FAILED', 'terminated'],
      ['NOT_RUN', null],
    ]);
  });

  it('terminate needs a reason and ends the run at once', async () => {
    const target = await automationWith(approval());
    const id = await send(target);
    await untilStep(id, 'mgr', 'WAITING_FOR_APPROVAL');
    expect((await api(superAdmin).post(`${runPath(id)}/terminate`, {})).status).toBe(400);
    expect((await api(superAdmin).post(`${runPath(id)}/terminate`, { reason: 'wrong target' })).status).toBe(200);
    const terminated = await untilStatus(id, 'TERMINATED');
    expect(terminated.error).toBe('run terminated: wrong target');
    const { actor, name } = await whoIs(superAdmin);
    expect(terminated.closedBy).toEqual({ actor, actorDisplayName: name, reason: 'wrong target' });
  });
});

describe('rerun and retry', () => {
  it('reruns a failed run on the fixed, republished automation; both runs name each other', async () => {
    const target = await automationWith([
      { id: 'check', when: 'ctx.trigger.employee_id == "42"', fail: { message: "'bad rule'" } },
    ]);
    const id = await send(target);
    await untilStatus(id, 'FAILED');
    const fixed = await api(superAdmin).post(`/api/v1/automations/${target.id}`, {
      automation: { steps: [{ id: 'ok', setVariables: { who: 'ctx.trigger.employee_id' } }] },
      updateMask: 'steps',
    });
    expect(fixed.status).toBe(200);
    expect((await api(superAdmin).post(`/api/v1/automations/${target.id}/publish`)).status).toBe(200);

    const rerun = await api(superAdmin).post(`${runPath(id)}/rerun`, {});
    expect(rerun.status).toBe(200);
    const rerunId = rerun.body.execution.id as string;
    expect(rerunId).toBe(`${id}:rerun-1`);
    const done = await untilStatus(rerunId, 'COMPLETED');
    expect(done).toMatchObject({ version: 2, rerunOf: id, eventId: (await execution(id)).eventId });
    expect(done.steps).toEqual([
      {
        id: 'ok',
        kind: 'setVariables',
        status: 'DONE',
        output: { who: '42' },
        error: null,
        startedAt: expect.any(String),
        finishedAt: expect.any(String),
      },
    ]);
    const original = await poll(
      () => execution(id),
      (e) => e.reruns.length === 1,
    );
    expect(original.reruns).toEqual([rerunId]);
    expect((await api(superAdmin).post(`${runPath(id)}/rerun`)).body.execution.id).toBe(`${id}:rerun-2`);
    const audit = await listAuditEvents(stack.service.deps.db, 'automation_execution', id);
    expect(audit.map((a) => [a.action, a.details])).toEqual([
      ['automation_execution.rerun', { newExecutionId: rerunId }],
      ['automation_execution.rerun', { newExecutionId: `${id}:rerun-2` }],
    ]);
  });

  it('retries from the failed step: earlier results are reused, the failed step runs again', async () => {
    let answer = 400;
    await withReceiver(
      () => answer,
      async (url) => {
        const target = await automationWith([
          { id: 'vars', setVariables: { who: 'ctx.trigger.employee_id' } },
          {
            id: 'hook',
            retry: { maximumAttempts: 1 },
            callWebhook: { url: `'${url}'`, body: { who: 'ctx.steps.vars.who' } },
          },
        ]);
        const id = await send(target);
        const failed = await untilStatus(id, 'FAILED');
        expect(failed.steps.map((s: Json) => s.status)).toEqual(['DONE', 'FAILED']);
        expect((await api(superAdmin).post(`${runPath(id)}/rerun`, { fromFailedStep: 'yes' })).status).toBe(400);

        answer = 200;
        // Unpublished, the automation runs nothing more: no retry either (it would run its effects).
        expect((await api(superAdmin).post(`/api/v1/automations/${target.id}/unpublish`)).status).toBe(200);
        const refused = await api(superAdmin).post(`${runPath(id)}/rerun`, { fromFailedStep: true });
        expect([refused.status, refused.body.message]).toEqual([
          409,
          'the automation is not published: publish it before a retry from the failed step',
        ]);
        expect(await listAuditEvents(stack.service.deps.db, 'automation_execution', id)).toEqual([]);
        expect((await api(superAdmin).post(`/api/v1/automations/${target.id}/publish`)).status).toBe(200);
        const retry = await api(superAdmin).post(`${runPath(id)}/rerun`, { fromFailedStep: true });
        expect(retry.status).toBe(200);
        expect(retry.body.execution.unaudited).toEqual([]);
        const done = await untilStatus(retry.body.execution.id, 'COMPLETED');
        // Still the original version (1), although publishing again made version 2.
        expect(done.version).toBe(1);
        expect(done.steps.map((s: Json) => [s.id, s.status])).toEqual([
          ['vars', 'DONE'],
          ['hook', 'DONE'],
        ]);
        expect(done.steps[0].output).toEqual(failed.steps[0].output);
        expect(done.steps[1].output).toMatchObject({ status: 200, body: { ok: true } });
        // Only the failed step ran again: the run's history holds no evaluation of `vars`.
        const history = await stack.client.workflow.getHandle(retry.body.execution.id).fetchHistory();
        await decodePayloadsInPlace(history.events ?? [], stack.client.options.loadedDataConverter.payloadCodecs);
        const summaries = (history.events ?? [])
          .map((e) => (e.userMetadata?.summary?.data ? Buffer.from(e.userMetadata.summary.data).toString() : ''))
          .join('\n');
        expect(summaries).toContain('step: hook');
        expect(summaries).not.toContain('step: vars');
        // A run that completed cannot be retried from a failed step.
        expect(
          (await api(superAdmin).post(`${runPath(retry.body.execution.id)}/rerun`, { fromFailedStep: true })).status,
        ).toBe(409);
      },
    );
  });

  it("each step's start, end and its effect's attempts: a call answered 503 twice, then 200, took 3", async () => {
    let calls = 0;
    await withReceiver(
      () => (++calls <= 2 ? 503 : 200),
      async (url) => {
        const target = await automationWith([
          { id: 'vars', setVariables: { who: 'ctx.trigger.employee_id' } },
          {
            id: 'hook',
            retry: { maximumAttempts: 5, initialInterval: '0.1s', maximumInterval: '0.2s' },
            callWebhook: { url: `'${url}'`, body: { who: 'ctx.steps.vars.who' } },
          },
          { id: 'never', when: 'false', setVariables: { x: '1' } },
        ]);
        const id = await send(target);
        const done = await untilStatus(id, 'COMPLETED');
        expect(calls).toBe(3);
        const [vars, hook, skipped] = done.steps;
        expect(vars.attempts).toBeUndefined(); // no effect: evaluation only
        expect(hook.attempts).toBe(3);
        expect(skipped.status).toBe('SKIPPED');
        for (const step of done.steps) {
          expect(Date.parse(step.startedAt)).not.toBeNaN();
          expect(Date.parse(step.finishedAt)).toBeGreaterThanOrEqual(Date.parse(step.startedAt));
        }
        expect(Date.parse(hook.startedAt)).toBeGreaterThanOrEqual(Date.parse(vars.finishedAt));
      },
    );
  });

  it('a rerun of an unpublished automation is refused with 409', async () => {
    const target = await automationWith([{ id: 'ok', setVariables: { x: '1' } }]);
    const id = await send(target);
    await untilStatus(id, 'COMPLETED');
    expect((await api(superAdmin).post(`/api/v1/automations/${target.id}/unpublish`)).status).toBe(200);
    const res = await api(superAdmin).post(`${runPath(id)}/rerun`);
    expect([res.status, res.body.message]).toEqual([409, 'the automation is not published: publish it before a rerun']);
  });
});
