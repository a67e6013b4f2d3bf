/**
 * Bulk actions on runs, end to end: real HTTP, the real store (PGlite, or PostgreSQL with
 * DATABASE_URL), the real Temporal dev server and a real worker. A dry run's preview is exactly
 * what its action acts on (a run started later is never touched); `where` errors are counted;
 * counters add up; a stopped action leaves the runs it had not reached as they were; a bulk rerun's
 * id is derived, so acting again starts nothing new; the limits and the roles; a page's work: one
 * claim and one write of its outcomes, one call to Temporal per running run, a stop seen within the
 * page, and a page that fails midway keeping the outcomes it has.
 */
import { InterceptingCall } from '@grpc/grpc-js';
import { Client, Connection, WorkflowNotFoundError } from '@temporalio/client';
import { bulkActionWorkflowId, createTemporalEngine, runStartOptions } from '../../src/temporal/engine';
import {
  actOnNextPage,
  actOnRun,
  BULK_LIMITS,
  CLOCK_TOLERANCE_MS,
  createBulkAction,
  readBulkAction,
  restartBulkActions,
  type BulkActResult,
} from '../../src/domain/bulk-actions';
import { bulkRerunId } from '../../src/domain/runs';
import type { RunEngine } from '../../src/domain/engine';
import {
  bulkRunOutcomes,
  bulkSetRunIds,
  insertBulkSet,
  listBulkActions,
  recordOutcomes,
  stopBulkAction,
} from '../../src/store/bulk-actions';
import type { Db } from '../../src/store/db';
import { WorkflowEngineUnavailableError } from '../../src/errors';
import { newId } from '../../src/ids';
import { testTemporal } from '../helpers/temporal';
import { listAuditEvents } from '../../src/store/audit';
import type { Stack } from '../helpers/stack';
import { startRestartableStack, type RestartableStack } from '../helpers/restartable-stack';
import { runCalls, type Target } from '../helpers/run-calls';
import { poll, until } from '../helpers/wait';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

let restartable: RestartableStack;
let stack: Stack;
let admin: string;
let superAdmin: string;
let readOnly: string;
let superActor: string;

beforeAll(async () => {
  restartable = await startRestartableStack();
  ({ stack, admin, superAdmin, readOnly } = restartable);
  superActor = `client:${(await stack.service.deps.tokens.verify(superAdmin))!.clientId}`;
});

afterAll(async () => {
  await restartable?.close();
});

const calls = runCalls(() => stack, { displayName: 'bulk actions', steps: [] });
const { as: api, runPath, execution } = calls;
const BULK = '/api/v1/automation_executions/bulk';
const automationWith = (steps: unknown[]) => calls.automation({}, steps);
const send = (target: Target, payload: unknown) => calls.accepted(target, payload);

/** Waits until visibility shows exactly `ids` as the automation's runs in `status` (a dry run without `where` reads visibility). */
async function untilVisible(automationId: string, status: string, ids: string[]): Promise<void> {
  const matched = await poll(
    async () => {
      const res = await api(superAdmin).post(BULK, {
        dryRun: true,
        reason: 'look',
        filter: { automationId, status: [status] },
      });
      expect(res.status).toBe(200);
      return res.body.matched as number;
    },
    (count) => count === ids.length,
    { what: `${ids.length} ${status} runs in visibility` },
  );
  expect(matched).toBe(ids.length);
}

async function untilFinished(id: string): Promise<Json> {
  const got = await poll(
    async () => (await api(admin).get(`/api/v1/bulk_actions/${id}`)).body.bulkAction,
    (action: Json) => action.state !== 'RUNNING',
    { what: `bulk action ${id} to finish` },
  );
  return got;
}

const parked = [{ id: 'hold', waitForApproval: { timeout: '86400s' } }];

describe('dry run and action', () => {
  it('acts on exactly the runs its preview matched: where errors counted, a later run untouched, counters add up, each run names the action', async () => {
    const target = await automationWith(parked);
    const a = [
      await send(target, { kind: 'a', n: 1 }),
      await send(target, { kind: 'a', n: 2 }),
      await send(target, { kind: 'a', n: 3 }),
    ];
    const b = await send(target, { kind: 'b', n: 4 });
    const broken = await send(target, { n: 5 }); // no `kind`: `where` fails on it
    await untilVisible(target.id, 'RUNNING', [...a, b, broken]);

    const dry = await api(superAdmin).post(BULK, {
      dryRun: true,
      reason: 'bad sync',
      filter: { automationId: target.id, status: ['RUNNING'], where: "ctx.trigger.kind == 'a'" },
    });
    expect(dry.status).toBe(200);
    expect(dry.body.matched).toBe(3);
    expect(dry.body.whereErrors).toBe(1);
    expect([...dry.body.sample].sort()).toEqual([...a].sort());
    // Nothing changed.
    for (const id of [...a, b, broken]) expect((await execution(id)).status).toBe('RUNNING');

    // A run started after the preview matches the filter too, but is not in the preview's set.
    const later = await send(target, { kind: 'a', n: 6 });
    const acted = await api(superAdmin).post(BULK, {
      previewId: dry.body.previewId,
      action: 'cancel',
      reason: 'bad sync',
    });
    expect(acted.status).toBe(202);
    const started = acted.body.bulkAction;
    expect(started).toMatchObject({
      action: 'cancel',
      reason: 'bad sync',
      by: superActor,
      state: 'RUNNING',
      matched: 3,
      finishedAt: null,
    });
    expect(started.filter).toEqual({ automationId: target.id, status: ['RUNNING'], where: "ctx.trigger.kind == 'a'" });
    expect([...(await bulkSetRunIds(stack.service.deps.db, started.id))].sort()).toEqual([...a].sort());

    const done = await untilFinished(started.id);
    expect(done).toMatchObject({ state: 'COMPLETED', matched: 3, succeeded: 3, skipped: 0, failed: 0 });
    expect(done.succeeded + done.skipped + done.failed).toBe(done.matched);
    expect(Date.parse(done.finishedAt)).not.toBeNaN();
    for (const id of a) {
      const run = await poll(
        () => execution(id),
        (e: Json) => e.status === 'CANCELED',
        { what: `${id} CANCELED` },
      );
      expect(run.bulkActionId).toBe(started.id);
      // Who stopped it: the bulk action's author, with its reason.
      expect(run.closedBy).toEqual({
        actor: started.by,
        actorDisplayName: expect.any(String),
        reason: 'bad sync',
        bulkActionId: started.id,
      });
      // The cancel request's reason names the bulk action.
      const history = await stack.client.workflow.getHandle(id).fetchHistory();
      const cause = history.events!.find((e) => e.workflowExecutionCancelRequestedEventAttributes)
        ?.workflowExecutionCancelRequestedEventAttributes?.cause;
      expect(cause).toBe(`bulk action ${started.id}: bad sync`);
    }
    for (const id of [b, broken, later]) {
      const run = await execution(id);
      expect(run.status).toBe('RUNNING');
      expect(run.bulkActionId).toBeUndefined();
    }
    // A preview is acted on once.
    const again = await api(superAdmin).post(BULK, {
      previewId: dry.body.previewId,
      action: 'cancel',
      reason: 'bad sync',
    });
    expect(again.status).toBe(400);
    expect(again.body.message).toContain('previewId');

    // One audit record, with the actor, the filter, the reason and the final counts.
    const audit = await listAuditEvents(stack.service.deps.db, 'bulk_action', started.id);
    expect(audit.map((e) => [e.action, e.actor])).toEqual([['bulk_action.create', superActor]]);
    expect(audit[0]!.details).toMatchObject({
      action: 'cancel',
      reason: 'bad sync',
      filter: started.filter,
      counts: { matched: 3, succeeded: 3, skipped: 0, failed: 0, state: 'COMPLETED' },
    });
    // Listed, newest first, for an admin too.
    const listed = await api(admin).get('/api/v1/bulk_actions');
    expect(listed.status).toBe(200);
    expect(listed.body.list[0].bulkAction).toEqual(done);

    await stack.client.workflow.getHandle(b).cancel();
    await stack.client.workflow.getHandle(broken).cancel();
    await stack.client.workflow.getHandle(later).cancel();
  });

  it('an expired preview is refused (400) and starts nothing', async () => {
    const target = await automationWith(parked);
    const id = await send(target, { n: 1 });
    await untilVisible(target.id, 'RUNNING', [id]);
    const dry = await api(superAdmin).post(BULK, { dryRun: true, reason: 'r', filter: { automationId: target.id } });
    expect(dry.status).toBe(200);
    await stack.service.deps.db.query(
      `UPDATE bulk_actions SET expires_at = now() - interval '1 second' WHERE id = $1`,
      [dry.body.previewId],
    );
    const before = (await api(superAdmin).get('/api/v1/bulk_actions?page_size=100')).body.list.length;
    const res = await api(superAdmin).post(BULK, { previewId: dry.body.previewId, action: 'cancel', reason: 'r' });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe(3);
    expect(res.body.message).toContain('previewId');
    expect(res.body.message).toContain('expired');
    expect((await api(superAdmin).get('/api/v1/bulk_actions?page_size=100')).body.list.length).toBe(before);
    expect((await execution(id)).status).toBe('RUNNING');
    await stack.client.workflow.getHandle(id).cancel();
  });
});

describe('terminate, skipped runs, stop', () => {
  it('terminate: a run closed before the action reached it is skipped with the reason; the terminate reason names the action', async () => {
    const target = await automationWith(parked);
    const ids = [await send(target, { n: 1 }), await send(target, { n: 2 })];
    await untilVisible(target.id, 'RUNNING', ids);
    const dry = await api(superAdmin).post(BULK, {
      dryRun: true,
      reason: 'outage',
      filter: { automationId: target.id, status: ['RUNNING'] },
    });
    expect(dry.body.matched).toBe(2);
    await stack.client.workflow.getHandle(ids[0]!).cancel();
    expect(
      (
        await poll(
          () => execution(ids[0]!),
          (e: Json) => e.status === 'CANCELED',
        )
      ).status,
    ).toBe('CANCELED');

    const acted = await api(superAdmin).post(BULK, {
      previewId: dry.body.previewId,
      action: 'terminate',
      reason: 'outage',
    });
    expect(acted.status).toBe(202);
    const done = await untilFinished(acted.body.bulkAction.id);
    expect(done).toMatchObject({ state: 'COMPLETED', matched: 2, succeeded: 1, skipped: 1, failed: 0 });
    const outcomes = await bulkRunOutcomes(stack.service.deps.db, done.id);
    expect(outcomes.find((o) => o.runId === ids[0])).toMatchObject({
      outcome: 'skipped',
      reason: 'the run is closed (CANCELED)',
    });
    const terminated = await poll(
      () => execution(ids[1]!),
      (e: Json) => e.status === 'TERMINATED',
    );
    expect(terminated.error).toBe(`run terminated: bulk action ${done.id}: outage`);
    expect(terminated.bulkActionId).toBe(done.id);
    expect((await execution(ids[0]!)).bulkActionId).toBeUndefined();

    // The page runs again over the same claimed runs (a retry after the worker died before it wrote
    // the outcomes): the run it had terminated counts as its own, the other stays skipped.
    const db = stack.service.deps.db;
    await db.query(`UPDATE bulk_actions SET state = 'RUNNING', succeeded = 0, skipped = 0 WHERE id = $1`, [done.id]);
    await db.query(`UPDATE bulk_action_runs SET outcome = NULL WHERE bulk_action_id = $1`, [done.id]);
    const actor = createTemporalEngine({ client: stack.client, taskQueue: stack.taskQueue, db });
    expect(await actOnNextPage(db, actor, done.id, { pageSize: 10, concurrency: 2 })).toEqual({
      done: false,
      acted: 2,
    });
    expect((await bulkRunOutcomes(db, done.id)).map((o) => [o.runId, o.outcome])).toEqual(
      outcomes.map((o) => [o.runId, o.outcome]),
    );
    expect((await api(admin).get(`/api/v1/bulk_actions/${done.id}`)).body.bulkAction).toMatchObject({
      succeeded: 1,
      skipped: 1,
      failed: 0,
    });
  });

  it('a stopped action acts on no run it had not reached: they stay as they were', async () => {
    const target = await automationWith(parked);
    const ids = [await send(target, { n: 1 }), await send(target, { n: 2 }), await send(target, { n: 3 })];
    await untilVisible(target.id, 'RUNNING', ids);
    // No worker: the action's workflow cannot reach any run before the stop.
    await restartable.stopWorker();
    try {
      const acted = await api(superAdmin).post(BULK, {
        action: 'cancel',
        reason: 'stop me',
        filter: { automationId: target.id },
      });
      expect(acted.status).toBe(202);
      const id = acted.body.bulkAction.id;
      expect((await api(admin).post(`/api/v1/bulk_actions/${id}/cancel`, {})).status).toBe(403);
      const stopped = await api(superAdmin).post(`/api/v1/bulk_actions/${id}/cancel`, {});
      expect(stopped.status).toBe(200);
      expect(stopped.body.bulkAction).toMatchObject({
        state: 'CANCELED',
        matched: 3,
        succeeded: 0,
        skipped: 0,
        failed: 0,
      });
      await restartable.startWorker();
      // The workflow runs to its end and acts on nothing.
      const ended = await poll(
        () => stack.client.workflow.getHandle(`bulk-action:${id}`).describe(),
        (d) => d.status.name === 'COMPLETED',
        { what: 'the bulk action workflow to end' },
      );
      expect(ended.status.name).toBe('COMPLETED');
      const after = (await api(superAdmin).get(`/api/v1/bulk_actions/${id}`)).body.bulkAction;
      expect(after).toMatchObject({ state: 'CANCELED', succeeded: 0, skipped: 0, failed: 0 });
      expect((await bulkRunOutcomes(stack.service.deps.db, id)).map((o) => o.outcome)).toEqual([null, null, null]);
      for (const run of ids) expect((await execution(run)).status).toBe('RUNNING');
      // Stopping twice answers the same; the audit record has the counts it ended with.
      expect((await api(superAdmin).post(`/api/v1/bulk_actions/${id}/cancel`, {})).body.bulkAction.state).toBe(
        'CANCELED',
      );
      const audit = await listAuditEvents(stack.service.deps.db, 'bulk_action', id);
      expect(audit[0]!.details.counts).toEqual({ matched: 3, succeeded: 0, skipped: 0, failed: 0, state: 'CANCELED' });
    } finally {
      await restartable.startWorker(); // unless it runs again already
    }
    for (const run of ids) await stack.client.workflow.getHandle(run).cancel();
  });
});

describe('rerun', () => {
  it('starts one rerun per run with an id derived from the action and the run; acting again starts nothing new', async () => {
    const target = await automationWith([{ id: 'note', setVariables: { n: 'ctx.trigger.n' } }]);
    const ids = [await send(target, { n: 1 }), await send(target, { n: 2 })];
    await untilVisible(target.id, 'COMPLETED', ids);
    const acted = await api(superAdmin).post(BULK, {
      action: 'rerun',
      reason: 'after the outage',
      filter: { automationId: target.id, status: ['COMPLETED'] },
    });
    expect(acted.status).toBe(202);
    const done = await untilFinished(acted.body.bulkAction.id);
    expect(done).toMatchObject({ state: 'COMPLETED', matched: 2, succeeded: 2, skipped: 0, failed: 0 });

    for (const id of ids) {
      const rerunId = bulkRerunId(id, done.id);
      const original = await execution(id);
      expect(original.reruns).toEqual([rerunId]);
      expect(original.bulkActionId).toBe(done.id);
      const rerun = await poll(
        () => execution(rerunId),
        (e: Json) => e.status === 'COMPLETED',
      );
      expect(rerun).toMatchObject({ rerunOf: id, bulkActionId: done.id, unaudited: [] });
      expect(rerun.steps[0].output).toEqual({ n: id === ids[0] ? 1 : 2 });
    }

    // The activity runs again over the same set (as a retry after a crash would): the same ids, no second run.
    const db = stack.service.deps.db;
    await db.query(`UPDATE bulk_actions SET state = 'RUNNING' WHERE id = $1`, [done.id]);
    await db.query(`UPDATE bulk_action_runs SET outcome = NULL WHERE bulk_action_id = $1`, [done.id]);
    const actor = createTemporalEngine({ client: stack.client, taskQueue: stack.taskQueue, db });
    const page = await actOnNextPage(db, actor, done.id, { pageSize: 10, concurrency: 2 });
    expect(page).toEqual({ done: false, acted: 2 });
    const outcomes = await bulkRunOutcomes(db, done.id);
    expect(outcomes.map((o) => o.newExecutionId).sort()).toEqual(ids.map((id) => bulkRerunId(id, done.id)).sort());
    for (const id of ids) expect((await execution(id)).reruns).toEqual([bulkRerunId(id, done.id)]);
    const prefix = `${ids[0]}:rerun-`;
    const started = await stack.client.workflow.count(`WorkflowId STARTS_WITH "${prefix}"`);
    expect(started.count).toBe(1);
  });

  it('a run rerun by hand and by a bulk action lists both; the audit check accepts each', async () => {
    const target = await automationWith([{ id: 'note', setVariables: { n: 'ctx.trigger.n' } }]);
    const id = await send(target, { n: 7 });
    await untilVisible(target.id, 'COMPLETED', [id]);
    const byHand = await api(superAdmin).post(`${runPath(id)}/rerun`, {});
    expect(byHand.status).toBe(200);
    const acted = await api(superAdmin).post(BULK, {
      action: 'rerun',
      reason: 'again',
      filter: {
        automationId: target.id,
        status: ['COMPLETED'],
        startedBefore: new Date(Date.now() + 60_000).toISOString(),
      },
    });
    expect(acted.status).toBe(202);
    const done = await untilFinished(acted.body.bulkAction.id);
    // The rerun by hand may have completed in time to be matched too: each matched run gets one rerun.
    expect(done.succeeded).toBe(done.matched);
    const original = await execution(id);
    expect(original.reruns).toEqual([`${id}:rerun-1`, bulkRerunId(id, done.id)]);
    expect((await execution(bulkRerunId(id, done.id))).unaudited).toEqual([]);
    expect((await execution(`${id}:rerun-1`)).unaudited).toEqual([]);
  });
});

describe('matching: by status, and over more than one page of visibility', () => {
  it('a dry run matches by status: RUNNING, COMPLETED, or both when no status is named', async () => {
    // One automation with a run of each status: one parked in its approval, one that completes.
    const both = await automationWith([
      { id: 'hold', when: 'ctx.trigger.park', waitForApproval: { timeout: '86400s' } },
    ]);
    const open = await send(both, { park: true });
    const closed = await send(both, { park: false });
    await untilVisible(both.id, 'COMPLETED', [closed]);
    await untilVisible(both.id, 'RUNNING', [open]);
    const dry = async (status?: string[]) => {
      const res = await api(superAdmin).post(BULK, {
        dryRun: true,
        reason: 'look',
        filter: { automationId: both.id, ...(status ? { status } : {}) },
      });
      expect(res.status).toBe(200);
      return [res.body.matched, [...res.body.sample].sort()];
    };
    expect(await dry(['RUNNING'])).toEqual([1, [open]]);
    expect(await dry(['COMPLETED'])).toEqual([1, [closed]]);
    expect(await dry(['FAILED'])).toEqual([0, []]);
    expect(await dry()).toEqual([2, [open, closed].sort()]);
    expect(await dry(['RUNNING', 'COMPLETED'])).toEqual([2, [open, closed].sort()]);
    await stack.client.workflow.getHandle(open).cancel();
  });

  it('matches 2,500 runs (three pages of visibility), and where over each of them', async () => {
    // The runs wait on a task queue no worker polls: only their records are read.
    const target = await automationWith(parked);
    const version = (await api(superAdmin).get(`/api/v1/automations/${target.id}`)).body.automation.version;
    const count = 2500;
    const queue = `bulk-unpolled-${newId()}`;
    const started: string[] = [];
    let next = 0;
    await Promise.all(
      Array.from({ length: 32 }, async () => {
        for (let n = next++; n < count; n = next++) {
          const eventId = crypto.randomUUID();
          const runId = `webhook:${target.path.split('/').pop()}:${eventId}`;
          await stack.client.workflow.start(
            'automation',
            runStartOptions(queue, {
              runId,
              input: {
                automationId: target.id,
                version,
                listenerId: target.path.split('/').pop()!,
                eventId,
                receivedAt: new Date().toISOString(),
                trigger: { keep: n % 2 === 0 },
              },
              automationName: 'bulk paging',
              summary: `event ${eventId}`,
            }),
          );
          started.push(runId);
        }
      }),
    );
    // Visibility catches up with 2,500 starts: counted by the engine's own count, not by a dry run each time.
    const visible = await poll(
      async () => (await stack.client.workflow.count(`AutomationId = "${target.id}"`)).count,
      (n) => n === count,
      { what: `${count} runs in visibility` },
    );
    expect(visible).toBe(count);
    // A dry run lists 2,500 runs a page of visibility at a time, each page bounded by the engine's call
    // timeout: on a loaded machine one may answer 503 with Retry-After, which a client honours.
    const dryRun = async (filter: Record<string, unknown>) => {
      for (let attempt = 1; ; attempt++) {
        const res = await api(superAdmin).post(BULK, { dryRun: true, reason: 'look', filter });
        if (res.status !== 503 || attempt === 3) return res;
        expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      }
    };
    const all = await dryRun({ automationId: target.id });
    expect([all.status, all.body.matched, all.body.whereErrors]).toEqual([200, count, 0]);
    expect(new Set(await bulkSetRunIds(stack.service.deps.db, all.body.previewId))).toEqual(new Set(started));
    const kept = await dryRun({ automationId: target.id, where: 'ctx.trigger.keep' });
    expect([kept.status, kept.body.matched, kept.body.whereErrors]).toEqual([200, count / 2, 0]);
  });
});

describe('bad requests, limits and roles', () => {
  it('answers 400 naming the field, 404 for an unknown automation, and makes nothing', async () => {
    const target = await automationWith(parked);
    const before = (await api(superAdmin).get('/api/v1/bulk_actions?page_size=100')).body.list.length;
    const cases: Array<[unknown, string]> = [
      [{ action: 'cancel', filter: { automationId: target.id } }, 'reason'],
      [{ action: 'cancel', reason: 'r' }, 'filter.automationId'],
      [{ reason: 'r', filter: { automationId: target.id } }, 'action'],
      [{ action: 'explode', reason: 'r', filter: { automationId: target.id } }, 'action'],
      [{ action: 'cancel', reason: 'r', filter: { automationId: target.id, where: 'ctx.trigger.(' } }, 'filter.where'],
      [{ action: 'cancel', reason: 'r', filter: { automationId: target.id, status: ['LOST'] } }, 'filter.status'],
      [
        { action: 'cancel', reason: 'r', filter: { automationId: target.id, startedAfter: 'yesterday' } },
        'filter.startedAfter',
      ],
      [{ action: 'cancel', reason: 'r', previewId: 'nope' }, 'previewId'],
    ];
    for (const [body, field] of cases) {
      const res = await api(superAdmin).post(BULK, body);
      expect([res.status, res.body.code]).toEqual([400, 3]);
      expect(res.body.message).toContain(field);
    }
    const unknown = await api(superAdmin).post(BULK, {
      action: 'cancel',
      reason: 'r',
      filter: { automationId: 'no-such-automation' },
    });
    expect(unknown.status).toBe(404);
    expect((await api(superAdmin).get('/api/v1/bulk_actions?page_size=100')).body.list.length).toBe(before);
  });

  it('more candidates than `where` may read, or more runs than an action takes: 400 naming the count', async () => {
    const target = await automationWith(parked);
    const ids = [await send(target, { n: 1 }), await send(target, { n: 2 }), await send(target, { n: 3 })];
    await untilVisible(target.id, 'RUNNING', ids);
    stack.service.deps.bulkLimits = { ...BULK_LIMITS, maxWhereCandidates: 2, maxMatched: 2 };
    try {
      const withWhere = await api(superAdmin).post(BULK, {
        dryRun: true,
        reason: 'r',
        filter: { automationId: target.id, where: 'ctx.trigger.n > 0' },
      });
      expect(withWhere.status).toBe(400);
      expect(withWhere.body.message).toContain('filter.where');
      expect(withWhere.body.message).toContain('3 candidate runs');
      const tooMany = await api(superAdmin).post(BULK, {
        action: 'cancel',
        reason: 'r',
        filter: { automationId: target.id },
      });
      expect(tooMany.status).toBe(400);
      expect(tooMany.body.message).toContain('3 runs match');
      stack.service.deps.bulkLimits = { ...BULK_LIMITS, maxWhereCandidates: 3, maxMatched: 3 };
      const fits = await api(superAdmin).post(BULK, {
        dryRun: true,
        reason: 'r',
        filter: { automationId: target.id, where: 'ctx.trigger.n > 0' },
      });
      expect([fits.status, fits.body.matched]).toEqual([200, 3]);
    } finally {
      stack.service.deps.bulkLimits = BULK_LIMITS;
    }
    for (const id of ids) await stack.client.workflow.getHandle(id).cancel();
  });

  it('only super_admin makes or stops one; admin reads them; read_only does neither', async () => {
    const target = await automationWith(parked);
    const body = { dryRun: true, reason: 'r', filter: { automationId: target.id } };
    expect((await api(admin).post(BULK, body)).status).toBe(403);
    expect((await api(readOnly).post(BULK, body)).status).toBe(403);
    expect((await api(readOnly).get('/api/v1/bulk_actions')).status).toBe(403);
    expect((await api(admin).get('/api/v1/bulk_actions')).status).toBe(200);
    expect((await api(admin).get('/api/v1/bulk_actions/unknown')).status).toBe(404);
    // A preview is not a bulk action.
    const dry = await api(superAdmin).post(BULK, body);
    expect(dry.status).toBe(200);
    expect((await api(admin).get(`/api/v1/bulk_actions/${dry.body.previewId}`)).status).toBe(404);
  });
});

describe('an API killed between recording an action and starting its workflow', () => {
  it('leaves it RUNNING without a workflow until an API restarts it; a second start is harmless; each run is rerun once', async () => {
    const db = stack.service.deps.db;
    const target = await automationWith([{ id: 'note', setVariables: { n: 'ctx.trigger.n' } }]);
    const ids = [await send(target, { n: 1 }), await send(target, { n: 2 })];
    await untilVisible(target.id, 'COMPLETED', ids);
    const engine = createTemporalEngine({ client: stack.client, taskQueue: stack.taskQueue, db });
    // The API dies at the start: the action, its set and its audit record are written; the start never comes.
    const dying: RunEngine = { ...engine, startBulkAction: () => new Promise<void>(() => undefined) };
    void createBulkAction(db, dying, superActor, {
      kind: 'filter',
      action: 'rerun',
      reason: 'crash drill',
      filter: { automationId: target.id, status: ['COMPLETED'] },
    });
    const recorded = await poll(
      async () => (await listBulkActions(db, undefined, 20)).find((a) => a.automationId === target.id),
      (a) => a !== undefined,
      { what: 'the action recorded' },
    );
    const id = recorded!.id;
    const workflow = stack.client.workflow.getHandle(bulkActionWorkflowId(id));
    await expect(workflow.describe()).rejects.toThrow(WorkflowNotFoundError);
    expect((await api(admin).get(`/api/v1/bulk_actions/${id}`)).body.bulkAction).toMatchObject({
      state: 'RUNNING',
      matched: 2,
      succeeded: 0,
    });

    // Too young: the API that recorded it may still be starting it (or undoing it).
    expect(await restartBulkActions(db, engine, 60_000)).not.toContain(id);
    await expect(workflow.describe()).rejects.toThrow(WorkflowNotFoundError);
    // Old enough: started; a second API doing the same at once starts nothing more.
    const [first, second] = await Promise.all([restartBulkActions(db, engine, 0), restartBulkActions(db, engine, 0)]);
    expect([first.includes(id), second.includes(id)]).toEqual([true, true]);
    const done = await untilFinished(id);
    expect(done).toMatchObject({ state: 'COMPLETED', matched: 2, succeeded: 2, skipped: 0, failed: 0 });
    expect((await stack.client.workflow.count(`WorkflowId = "${bulkActionWorkflowId(id)}"`)).count).toBe(1);
    for (const run of ids) {
      expect((await execution(run)).reruns).toEqual([bulkRerunId(run, id)]);
      expect((await stack.client.workflow.count(`WorkflowId STARTS_WITH "${run}:rerun-"`)).count).toBe(1);
    }
    // A finished action is never started again.
    expect(await restartBulkActions(db, engine, 0)).not.toContain(id);
  });
});

describe("a page's store statements, calls to Temporal and stop", () => {
  /** Records a RUNNING cancel action over `runIds` without starting its workflow: the test acts on its pages itself. */
  async function recordCancel(automationId: string, runIds: string[]): Promise<string> {
    const id = newId();
    await stack.service.deps.db.transaction((tx) =>
      insertBulkSet(
        tx,
        {
          id,
          action: 'cancel',
          automationId,
          filter: { automationId },
          reason: 'paged',
          by: superActor,
          state: 'RUNNING',
          matched: runIds.length,
          whereErrors: 0,
          previewId: null,
        },
        runIds,
      ),
    );
    return id;
  }

  /** The real store, counting the statements sent through it (a transaction counts once). */
  function countingDb(db: Db): { db: Db; count(): number } {
    let statements = 0;
    const counted = new Proxy(db, {
      get(target, property, receiver) {
        if (property === 'query' || property === 'transaction') {
          return (...args: unknown[]) => {
            statements += 1;
            return (target[property] as (...a: unknown[]) => unknown).apply(target, args);
          };
        }
        return Reflect.get(target, property, receiver) as unknown;
      },
    });
    return { db: counted, count: () => statements };
  }

  const engine = (): RunEngine =>
    createTemporalEngine({ client: stack.client, taskQueue: stack.taskQueue, db: stack.service.deps.db });

  it('claims the page in one statement and writes its outcomes and counters in one: four statements for six runs', async () => {
    const target = await automationWith(parked);
    const ids: string[] = [];
    for (let n = 1; n <= 6; n++) ids.push(await send(target, { n }));
    const id = await recordCancel(target.id, ids);
    const store = countingDb(stack.service.deps.db);
    const page = await actOnNextPage(store.db, engine(), id, { pageSize: 10, concurrency: 3, checkpointMs: 3_600_000 });
    expect(page).toEqual({ done: false, acted: 6 });
    // The action, its pending runs, the claim, the outcomes with the counters.
    expect(store.count()).toBe(4);
    expect((await bulkRunOutcomes(stack.service.deps.db, id)).map((o) => o.outcome)).toEqual(
      ids.map(() => 'succeeded'),
    );
    expect(await readBulkAction(stack.service.deps.db, id)).toMatchObject({
      matched: 6,
      succeeded: 6,
      skipped: 0,
      failed: 0,
    });
    // Written once: the same outcomes again count nothing.
    const again = await recordOutcomes(stack.service.deps.db, id, [
      { seq: 1, outcome: 'failed', reason: 'again', newExecutionId: null },
    ]);
    expect(again).toEqual({ written: 0, running: true });
    expect(await readBulkAction(stack.service.deps.db, id)).toMatchObject({ succeeded: 6, failed: 0 });
    expect(await actOnNextPage(store.db, engine(), id, { pageSize: 10, concurrency: 3 })).toEqual({
      done: true,
      acted: 0,
    });
  });

  it('a cancel is one call to Temporal and a wait for the end of the run, whose close event says whether the cancel ended it', async () => {
    const target = await automationWith(parked);
    const running = await send(target, { n: 1 });
    const closed = await send(target, { n: 2 });
    await untilVisible(target.id, 'RUNNING', [running, closed]);
    await stack.client.workflow.getHandle(closed).cancel();
    expect(
      (
        await poll(
          () => execution(closed),
          (e: Json) => e.status === 'CANCELED',
          { what: `${closed} CANCELED` },
        )
      ).status,
    ).toBe('CANCELED');
    const methods: string[] = [];
    const connection = await Connection.connect({
      address: (await testTemporal()).address,
      interceptors: [
        (options, next) => {
          methods.push(options.method_definition.path.split('/').pop()!);
          return new InterceptingCall(next(options));
        },
      ],
    });
    try {
      const client = new Client({ connection, namespace: stack.client.options.namespace });
      const counted = createTemporalEngine({ client, taskQueue: stack.taskQueue, db: stack.service.deps.db });
      // A cancel waits up to 300 s for its run's end here (the worker is stopped meanwhile).
      const act = (request: Parameters<typeof actOnRun>[2]) =>
        actOnRun(stack.service.deps.db, counted, request, 300_000);
      const request = {
        action: 'cancel' as const,
        bulkActionId: newId(),
        reason: 'one call',
        claimedBefore: false,
        published: undefined,
      };
      // No worker: the run cannot end, so the act waits.
      await restartable.stopWorker();
      let acted: BulkActResult | undefined;
      methods.length = 0; // the connection's own calls
      const acting = act({ ...request, runId: running }).then((result) => (acted = result));
      await until(
        async () =>
          (await stack.client.workflow.getHandle(running).fetchHistory()).events!.some(
            (e) => e.workflowExecutionCancelRequestedEventAttributes,
          ),
        'the cancel requested',
      );
      expect(acted).toBeUndefined();
      await restartable.startWorker();
      expect(await acting).toEqual({ outcome: 'succeeded' });
      expect((await stack.client.workflow.getHandle(running).describe()).status.name).toBe('CANCELLED');
      // The cancel, then the long poll for the run's end (asked again if Temporal's poll time ran out first): no describe.
      expect([methods[0], [...new Set(methods.slice(1))]]).toEqual([
        'RequestCancelWorkflowExecution',
        ['GetWorkflowExecutionHistory'],
      ]);
      methods.length = 0;
      // A close within the clock tolerance before the request counts as this cancel's: the close is
      // made older than that first (on a fast machine everything above can take less).
      const closedAt = (await stack.client.workflow.getHandle(closed).describe()).closeTime!.getTime();
      await until(() => Date.now() > closedAt + CLOCK_TOLERANCE_MS, 'the close older than the clock tolerance', {
        intervalMs: 100,
      });
      // Temporal accepts a cancel of a closed run: its close event, older than the request, says it was not this cancel.
      expect(await act({ ...request, runId: closed })).toEqual({
        outcome: 'skipped',
        reason: 'the run is closed (CANCELED)',
      });
      expect(methods).toEqual(['RequestCancelWorkflowExecution', 'GetWorkflowExecutionHistory']);
      // Unless an earlier attempt had claimed it: then the cancel that ended it was this action's.
      expect(await act({ ...request, runId: closed, claimedBefore: true })).toEqual({ outcome: 'succeeded' });
      expect(await act({ ...request, runId: `${closed}-unknown` })).toEqual({
        outcome: 'skipped',
        reason: 'the run no longer exists',
      });
    } finally {
      await restartable.startWorker(); // unless it runs again already
      await connection.close();
    }
  });

  it('a stop is seen within the page: after the checkpoint that sees it, no run of the page is acted on', async () => {
    const target = await automationWith(parked);
    const ids = [await send(target, { n: 1 }), await send(target, { n: 2 }), await send(target, { n: 3 })];
    const id = await recordCancel(target.id, ids);
    const db = stack.service.deps.db;
    const real = engine();
    // The real engine; the action is stopped right after its first run.
    const stoppingAfterOne: RunEngine = {
      ...real,
      cancel: async (...args) => {
        const result = await real.cancel(...args);
        await stopBulkAction(db, id);
        return result;
      },
    };
    expect(await actOnNextPage(db, stoppingAfterOne, id, { pageSize: 10, concurrency: 1, checkpointMs: 0 })).toEqual({
      done: false,
      acted: 1,
    });
    expect((await bulkRunOutcomes(db, id)).map((o) => o.outcome)).toEqual(['succeeded', null, null]);
    expect(await readBulkAction(db, id)).toMatchObject({ state: 'CANCELED', succeeded: 1, skipped: 0, failed: 0 });
    for (const run of ids.slice(1)) expect((await execution(run)).status).toBe('RUNNING');
    for (const run of ids.slice(1)) await stack.client.workflow.getHandle(run).cancel();
  });

  it('a page that fails midway writes the outcomes it has; its retry acts on the rest; the counters add up', async () => {
    const target = await automationWith(parked);
    const ids = [await send(target, { n: 1 }), await send(target, { n: 2 }), await send(target, { n: 3 })];
    const id = await recordCancel(target.id, ids);
    const db = stack.service.deps.db;
    const real = engine();
    let calls = 0;
    // The real engine, unreachable from its second call on (as when Temporal's frontend dies).
    const dying: RunEngine = {
      ...real,
      cancel: async (...args) => {
        calls += 1;
        if (calls >= 2) throw new WorkflowEngineUnavailableError('workflow engine unavailable: frontend killed');
        return real.cancel(...args);
      },
    };
    await expect(
      actOnNextPage(db, dying, id, { pageSize: 10, concurrency: 1, checkpointMs: 3_600_000 }),
    ).rejects.toThrow('frontend killed');
    expect((await bulkRunOutcomes(db, id)).map((o) => o.outcome)).toEqual(['succeeded', null, null]);
    expect(await readBulkAction(db, id)).toMatchObject({ succeeded: 1 });
    expect(await actOnNextPage(db, real, id, { pageSize: 10, concurrency: 2 })).toEqual({ done: false, acted: 2 });
    expect(await readBulkAction(db, id)).toMatchObject({
      state: 'RUNNING',
      matched: 3,
      succeeded: 3,
      skipped: 0,
      failed: 0,
    });
  });
});
