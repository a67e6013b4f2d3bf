/**
 * The concurrency lane's protocol against a sender that re-sends an event id with another key, on
 * both stores, with the real dev server, HTTP and worker (issue 40, items 1 and 2): a 409 touches
 * only the lane recorded for its run, a run takes a grant only from its own lane, a lane ignores a
 * release or an ask not meant for it, and a key's queue is bounded (429 with Retry-After, nothing
 * recorded, the retry accepted once the queue drains).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import request from 'supertest';
import type { WorkflowHandle } from '@temporalio/client';
import { openDb, type Db } from '../../src/store/db';
import { lanePlacesTaken } from '../../src/store/lane-places';
import { laneWorkflowId } from '../../src/flow';
import { runWorkflowId } from '../../src/contract/run';
import { createTemporalEngine } from '../../src/temporal/engine';
import {
  LANE_ACQUIRE_SIGNAL,
  LANE_RELEASE_SIGNAL,
  RUN_GRANT_SIGNAL,
  RUN_STATE_QUERY,
  type RunState,
} from '../../src/contract/run';
import { DATABASES, describeOn } from '../helpers/databases';
import { deliver, hmacEvent, listenerPath, PATIENT_START_TIMEOUT_MS, startStack, type Stack } from '../helpers/stack';
import { startTestService, type TestService } from '../helpers/test-service';
import { poll } from '../helpers/wait';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const TRIGGER = { incomingWebhook: { authMethod: 'HMAC' } };
const HOLD = [
  { id: 'hold', waitForApproval: {} },
  { id: 'done', setVariables: { k: 'ctx.trigger.k' } },
];
/** The queue bound of the second API process (LANE_QUEUE_LIMIT), small so that a test reaches it. */
const QUEUE_BOUND = 2;

for (const target of DATABASES) {
  describeOn(target)(`the lane's protocol (${target.label})`, () => {
    let stack: Stack;
    let bounded: TestService;
    let db: Db;
    const schema = `t_lane_${randomBytes(5).toString('hex')}`;

    beforeAll(async () => {
      db = target.url ? await openDb({ databaseUrl: target.url, schema }) : await openDb({});
      stack = await startStack({ db });
      // A second API process on the same store and Temporal, with a small queue bound.
      bounded = await startTestService({
        db,
        temporal: { client: stack.client, taskQueue: stack.taskQueue, startTimeoutMs: PATIENT_START_TIMEOUT_MS },
        env: { LANE_QUEUE_LIMIT: String(QUEUE_BOUND) },
        deps: { secretBox: stack.service.deps.secretBox },
      });
    });

    afterAll(async () => {
      await bounded?.close().catch(() => undefined);
      await stack?.close().catch(() => undefined);
      if (target.url) await db?.exec(`DROP SCHEMA ${schema} CASCADE`).catch(() => undefined);
      await db?.close().catch(() => undefined);
    });

    const api = () => ({
      get: (path: string) => request(stack.service.server).get(path).set('Authorization', `Bearer ${stack.adminToken}`),
      post: (path: string, body?: unknown) =>
        request(stack.service.server)
          .post(path)
          .set('Authorization', `Bearer ${stack.adminToken}`)
          .send(body as object),
    });
    const runPath = (id: string) => `/api/v1/automation_executions/${encodeURIComponent(id)}`;

    interface Target {
      id: string;
      listenerId: string;
      secret: string;
      path: string;
    }

    async function automation(): Promise<Target> {
      const created = await stack.createAutomation({
        displayName: 'lane trust',
        trigger: TRIGGER,
        steps: HOLD,
        concurrency: { limit: 1, key: 'ctx.trigger.k' },
      });
      const path = listenerPath(created.automation);
      return { id: created.automation.id, listenerId: path.split('/').pop()!, secret: created.signingSecret!, path };
    }

    const send = (to: Target, payload: unknown, eventId?: string) =>
      deliver(stack, to.path, hmacEvent(to.secret, payload, eventId ? { eventId } : {}));

    async function accepted(to: Target, payload: unknown, eventId?: string): Promise<string> {
      const res = await send(to, payload, eventId);
      expect(res.status).toBe(200);
      return res.body.executionId as string;
    }

    async function execution(id: string): Promise<Json> {
      const res = await api().get(runPath(id));
      expect(res.status).toBe(200);
      return res.body.execution;
    }

    /** Waits until the run's execution satisfies `done`; fails the test naming what it saw last when it does not in time. */
    async function until(id: string, done: (e: Json) => boolean, what: string): Promise<Json> {
      const last = await poll(() => execution(id), done);
      if (!done(last))
        throw new Error(`${id} never became ${what}: ${JSON.stringify({ status: last.status, steps: last.steps })}`);
      return last;
    }

    const holding = (e: Json) => e.status === 'RUNNING' && e.steps[0]?.status === 'WAITING_FOR_APPROVAL';
    const queued = (e: Json) => e.status === 'QUEUED';
    const approve = async (id: string) =>
      expect((await api().post(`${runPath(id)}/steps/hold/approve`, {})).status).toBe(200);

    /** Resolves once the workflow has completed a workflow task after its latest signal (so the signal was handled). */
    async function signalHandled(handle: WorkflowHandle): Promise<void> {
      const settled = async () => {
        const events = (await handle.fetchHistory()).events ?? [];
        const lastSignal = events.map((e) => !!e.workflowExecutionSignaledEventAttributes).lastIndexOf(true);
        return lastSignal >= 0 && events.slice(lastSignal + 1).some((e) => !!e.workflowTaskCompletedEventAttributes);
      };
      expect(await poll(settled, (done) => done)).toBe(true);
    }

    it('a re-sent event id with another key answers 409 and never steers that key’s lane: E2 stays QUEUED behind E1, a new run of the other key starts at once', async () => {
      const to = await automation();
      const e1 = await accepted(to, { k: 'a' });
      await until(e1, holding, 'holding key a');
      const e2Event = randomUUID();
      const e2 = await accepted(to, { k: 'a' }, e2Event);
      await until(e2, queued, 'QUEUED');

      const resent = await send(to, { k: 'b' }, e2Event);
      expect(resent.status).toBe(409);
      expect(resent.body.details[0].metadata).toEqual({ executionId: e2 });
      // What the 409 asks again: the lane recorded with the run, read from its start (through the payload codec).
      expect(
        await createTemporalEngine({ client: stack.client, taskQueue: stack.taskQueue, db }).recordedQueue(e2),
      ).toEqual({
        key: 'a',
        lane: laneWorkflowId(to.id, 'a'),
        limit: 1,
        requested: true,
      });

      const e3 = await accepted(to, { k: 'b' });
      // Key b's lane admits its first run at once: nothing of E2 holds it.
      await until(e3, holding, 'holding key b');
      const stillQueued = await execution(e2);
      expect(stillQueued.status).toBe('QUEUED');
      expect(stillQueued.queue).toEqual({ key: 'a' });
      expect((await execution(e1)).status).toBe('RUNNING');

      // E2 is admitted by its own lane when E1 is done.
      await approve(e1);
      await until(e2, holding, 'holding key a after E1');
      for (const id of [e2, e3]) await approve(id);
      for (const id of [e1, e2, e3]) await until(id, (e) => e.status === 'COMPLETED', 'COMPLETED');
    });

    it('a queued run ignores a grant naming another lane; its own lane still admits it', async () => {
      const to = await automation();
      const holder = await accepted(to, { k: 'g' });
      await until(holder, holding, 'holding');
      const waiting = await accepted(to, { k: 'g' });
      await until(waiting, queued, 'QUEUED');
      const handle = stack.client.workflow.getHandle(waiting);

      await handle.signal(RUN_GRANT_SIGNAL, { lane: laneWorkflowId(to.id, 'other') });
      await signalHandled(handle);
      expect((await handle.query<RunState>(RUN_STATE_QUERY)).status).toBe('QUEUED');

      await approve(holder);
      await until(waiting, holding, 'holding once the holder is done');
      await approve(waiting);
      await until(waiting, (e) => e.status === 'COMPLETED', 'COMPLETED');
    });

    it('a lane ignores a release of a run it never admitted, and an ask naming another lane', async () => {
      const to = await automation();
      const holder = await accepted(to, { k: 'r' });
      await until(holder, holding, 'holding');
      const lane = stack.client.workflow.getHandle(laneWorkflowId(to.id, 'r'));
      // A release for a run the lane has not seen (its id is known ahead: the event id is the sender's).
      const laterEvent = randomUUID();
      await lane.signal(LANE_RELEASE_SIGNAL, { runId: runWorkflowId(to.listenerId, laterEvent) });
      // An ask naming another lane, for a run that is not this lane's.
      const stranger = await accepted(to, { k: 's' });
      await until(stranger, holding, 'holding its own key');
      await lane.signal(LANE_ACQUIRE_SIGNAL, { runId: stranger, limit: 1, lane: laneWorkflowId(to.id, 's') });
      await signalHandled(lane);

      // The run whose release came first is admitted all the same, in its turn; the stranger never was this lane's.
      const later = await accepted(to, { k: 'r' }, laterEvent);
      await until(later, queued, 'QUEUED');
      await approve(holder);
      await until(later, holding, 'holding once the holder is done');
      await approve(stranger);
      await until(stranger, (e) => e.status === 'COMPLETED', 'COMPLETED');
      expect((await execution(later)).status).toBe('RUNNING');
      await approve(later);
      await until(later, (e) => e.status === 'COMPLETED', 'COMPLETED');
    });

    it(`a key's queue is bounded: past ${QUEUE_BOUND} waiting, 429 with Retry-After and nothing recorded; the retry is accepted once it drains`, async () => {
      const to = await automation();
      const post = (payload: unknown, eventId?: string) => {
        const event = hmacEvent(to.secret, payload, eventId ? { eventId } : {});
        return request(bounded.server).post(to.path).set(event.headers).send(event.body);
      };
      const first = await post({ k: 'q' });
      expect(first.status).toBe(200);
      await until(first.body.executionId, holding, 'holding');
      const waiting: string[] = [];
      for (let i = 0; i < QUEUE_BOUND; i++) {
        const res = await post({ k: 'q' });
        expect(res.status).toBe(200);
        waiting.push(res.body.executionId);
      }
      for (const id of waiting) await until(id, queued, 'QUEUED');
      const lane = laneWorkflowId(to.id, 'q');
      // Every place of the key's bound is taken: the holder and the waiting runs.
      expect(await lanePlacesTaken(db, lane)).toBe(1 + QUEUE_BOUND);

      const overEvent = randomUUID();
      const over = await post({ k: 'q' }, overEvent);
      expect(over.status).toBe(429);
      expect(over.body.code).toBe(8);
      expect(over.body.details).toEqual([expect.objectContaining({ reason: 'QUEUE_FULL' })]);
      expect(over.headers['retry-after']).toBe('30');
      // Nothing recorded: no run for the event id.
      expect(
        await createTemporalEngine({ client: stack.client, taskQueue: stack.taskQueue, db }).runOf(
          to.listenerId,
          overEvent,
        ),
      ).toBeUndefined();
      // Another key of the automation is not affected.
      const other = await post({ k: 'other' });
      expect(other.status).toBe(200);

      // The holder finishes: the first waiter runs, the queue is under its bound, the refused event is accepted on retry.
      await approve(first.body.executionId);
      await until(waiting[0]!, holding, 'holding after the first');
      // The finished holder gave its place back.
      expect(
        await poll(
          () => lanePlacesTaken(db, lane),
          (taken) => taken === QUEUE_BOUND,
        ),
      ).toBe(QUEUE_BOUND);
      const retried = await post({ k: 'q' }, overEvent);
      expect(retried.status).toBe(200);
      expect(retried.body.executionId).toBe(runWorkflowId(to.listenerId, overEvent));
      await until(retried.body.executionId, queued, 'QUEUED');

      for (const id of [...waiting, retried.body.executionId as string]) {
        await until(id, holding, 'holding in turn');
        await approve(id);
      }
      await approve(other.body.executionId);
    }, 240_000);
  });
}
