/**
 * A concurrency key's queue bound is exact (issue 58, item 3), on both stores, with the real dev
 * server, HTTP and worker: 40 deliveries of one key sent at once to two API processes sharing one
 * store and one Temporal, with LANE_QUEUE_LIMIT=3 and `concurrency.limit` 1, accept exactly 1 + 3
 * (one runs, three wait) and refuse the rest with the contract's 429 (code 8, QUEUE_FULL,
 * Retry-After, nothing recorded); a run gives its place back when it ends (completed or canceled
 * while queued); and a full lane reconciles the places of runs that ended without a word
 * (terminated) or never started.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import request from 'supertest';
import { openDb, type Db } from '../../src/store/db';
import { lanePlacesTaken, oldestLanePlaces, takeLanePlace } from '../../src/store/lane-places';
import { laneWorkflowId } from '../../src/flow';
import { UNSTARTED_PLACE_MS } from '../../src/flow/concurrency';
import { createTemporalEngine } from '../../src/temporal/engine';
import { DATABASES, describeOn } from '../helpers/databases';
import { hmacEvent, listenerPath, PATIENT_START_TIMEOUT_MS, startStack, type Stack } from '../helpers/stack';
import { startTestService, type TestService } from '../helpers/test-service';
import { poll } from '../helpers/wait';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const TRIGGER = { incomingWebhook: { authMethod: 'HMAC' } };
const HOLD = [
  { id: 'hold', waitForApproval: {} },
  { id: 'done', setVariables: { k: 'ctx.trigger.k' } },
];
/** LANE_QUEUE_LIMIT of both API processes under test. */
const QUEUE_BOUND = 3;
/** The automation's `concurrency.limit`: the places of a key are LIMIT + QUEUE_BOUND. */
const LIMIT = 1;
const BURST = 40;

for (const target of DATABASES) {
  describeOn(target)(`a key's queue bound across API processes (${target.label})`, () => {
    let stack: Stack;
    const apis: TestService[] = [];
    let db: Db;
    const schema = `t_lanebound_${randomBytes(5).toString('hex')}`;

    beforeAll(async () => {
      db = target.url ? await openDb({ databaseUrl: target.url, schema }) : await openDb({});
      stack = await startStack({ db });
      // Two more API processes on the same store and Temporal, each with the small bound.
      for (let i = 0; i < 2; i++)
        apis.push(
          await startTestService({
            db,
            temporal: { client: stack.client, taskQueue: stack.taskQueue, startTimeoutMs: PATIENT_START_TIMEOUT_MS },
            env: { LANE_QUEUE_LIMIT: String(QUEUE_BOUND) },
            deps: { secretBox: stack.service.deps.secretBox },
          }),
        );
    });

    afterAll(async () => {
      for (const api of apis) await api.close().catch(() => undefined);
      await stack?.close().catch(() => undefined);
      if (target.url) await db?.exec(`DROP SCHEMA ${schema} CASCADE`).catch(() => undefined);
      await db?.close().catch(() => undefined);
    });

    const engine = () => createTemporalEngine({ client: stack.client, taskQueue: stack.taskQueue, db });
    const runPath = (id: string) => `/api/v1/automation_executions/${encodeURIComponent(id)}`;
    const admin = () => `Bearer ${stack.adminToken}`;

    interface Target {
      id: string;
      path: string;
      secret: string;
    }

    async function automation(): Promise<Target> {
      const created = await stack.createAutomation({
        displayName: 'lane bound',
        trigger: TRIGGER,
        steps: HOLD,
        concurrency: { limit: LIMIT, key: 'ctx.trigger.k' },
      });
      return { id: created.automation.id, path: listenerPath(created.automation), secret: created.signingSecret! };
    }

    /** Delivers to API process `which` (0 or 1). */
    const post = (to: Target, which: number, payload: unknown, eventId?: string) => {
      const event = hmacEvent(to.secret, payload, eventId ? { eventId } : {});
      return request(apis[which]!.server).post(to.path).set(event.headers).send(event.body);
    };

    async function execution(id: string): Promise<Json> {
      const res = await request(stack.service.server).get(runPath(id)).set('Authorization', admin());
      expect(res.status).toBe(200);
      return res.body.execution;
    }

    async function until(id: string, done: (e: Json) => boolean, what: string): Promise<Json> {
      const last = await poll(() => execution(id), done);
      if (!done(last)) throw new Error(`${id} never became ${what}: ${JSON.stringify({ status: last.status })}`);
      return last;
    }

    /** Approves the runs of `ids` one at a time, whichever holds the key's permit next, until every one has completed. */
    async function approveInTurn(ids: string[]): Promise<void> {
      const left = [...ids];
      while (left.length > 0) {
        const views = await poll(
          () => Promise.all(left.map((id) => execution(id))),
          (all) => all.some(holding),
        );
        const next = left[views.findIndex(holding)]!;
        await approve(next);
        await until(next, (e) => e.status === 'COMPLETED', 'COMPLETED');
        left.splice(left.indexOf(next), 1);
      }
    }

    const holding = (e: Json) => e.status === 'RUNNING' && e.steps[0]?.status === 'WAITING_FOR_APPROVAL';
    const queued = (e: Json) => e.status === 'QUEUED';
    const approve = async (id: string) =>
      expect(
        (
          await request(stack.service.server)
            .post(`${runPath(id)}/steps/hold/approve`)
            .set('Authorization', admin())
        ).status,
      ).toBe(200);

    it(`${BURST} deliveries of one key at once, half to each API process, accept exactly ${LIMIT} + ${QUEUE_BOUND}; the rest answer 429 QUEUE_FULL and record nothing; each run gives its place back when it ends`, async () => {
      const to = await automation();
      const lane = laneWorkflowId(to.id, 'burst');
      const events = Array.from({ length: BURST }, () => randomUUID());
      const answers = await Promise.all(events.map((eventId, i) => post(to, i % 2, { k: 'burst' }, eventId)));

      const accepted = answers.filter((res) => res.status === 200);
      const refused = answers.filter((res) => res.status !== 200);
      expect(accepted.length).toBe(LIMIT + QUEUE_BOUND);
      expect(refused.length).toBe(BURST - LIMIT - QUEUE_BOUND);
      for (const res of refused) {
        expect(res.status).toBe(429);
        expect(res.body.code).toBe(8);
        expect(res.body.details).toEqual([expect.objectContaining({ reason: 'QUEUE_FULL' })]);
        expect(res.headers['retry-after']).toBe('30');
      }
      // Nothing recorded for a refused event: no run exists for its id.
      const refusedEvents = events.filter((_, i) => answers[i]!.status !== 200);
      const listenerId = to.path.split('/').pop()!;
      for (const eventId of refusedEvents) expect(await engine().runOf(listenerId, eventId)).toBeUndefined();
      expect(await lanePlacesTaken(db, lane)).toBe(LIMIT + QUEUE_BOUND);

      // One holds, three wait.
      const ids = accepted.map((res) => res.body.executionId as string);
      const views = await Promise.all(
        ids.map((id) =>
          poll(
            () => execution(id),
            (e) => holding(e) || queued(e),
          ),
        ),
      );
      expect(views.filter(holding)).toHaveLength(LIMIT);
      expect(views.filter(queued)).toHaveLength(QUEUE_BOUND);

      // A queued run canceled gives its place back at once; its refused neighbour's retry is then accepted.
      const waitingIds = ids.filter((_, i) => queued(views[i]));
      const canceled = waitingIds[0]!;
      const cancel = await request(stack.service.server)
        .post(`${runPath(canceled)}/cancel`)
        .set('Authorization', admin());
      expect(cancel.status).toBe(200);
      await until(canceled, (e) => e.status === 'CANCELED', 'CANCELED');
      expect(
        await poll(
          () => lanePlacesTaken(db, lane),
          (n) => n === LIMIT + QUEUE_BOUND - 1,
        ),
      ).toBe(LIMIT + QUEUE_BOUND - 1);
      const retried = await post(to, 1, { k: 'burst' }, refusedEvents[0]);
      expect(retried.status).toBe(200);
      const overAgain = await post(to, 0, { k: 'burst' }, refusedEvents[1]);
      expect(overAgain.status).toBe(429);

      // Every run ends: every place is given back, without any delivery to reconcile them.
      const rest = [...ids.filter((id) => id !== canceled), retried.body.executionId as string];
      await approveInTurn(rest);
      expect(
        await poll(
          () => lanePlacesTaken(db, lane),
          (n) => n === 0,
        ),
      ).toBe(0);
    }, 300_000);

    it('a full lane reconciles the places of runs terminated (no code ran) and of runs that never started', async () => {
      const to = await automation();
      const lane = laneWorkflowId(to.id, 'leak');
      const ids: string[] = [];
      for (let i = 0; i < LIMIT + QUEUE_BOUND; i++) {
        const res = await post(to, i % 2, { k: 'leak' });
        expect(res.status).toBe(200);
        ids.push(res.body.executionId);
      }
      await until(ids.at(-1)!, queued, 'QUEUED');
      // Terminated while queued: the run runs no code, its place stays taken.
      await stack.client.workflow.getHandle(ids.at(-1)!).terminate('test: a place left behind');
      await until(ids.at(-1)!, (e) => e.status === 'TERMINATED', 'TERMINATED');
      expect(await lanePlacesTaken(db, lane)).toBe(LIMIT + QUEUE_BOUND);
      // The next delivery finds the lane full, reconciles the terminated run's place, and is accepted.
      const next = await post(to, 0, { k: 'leak' });
      expect(next.status).toBe(200);
      expect(await lanePlacesTaken(db, lane)).toBe(LIMIT + QUEUE_BOUND);

      // Places of runs that never started (a delivery stopped between its place and its start): the
      // old ones are freed, a young one is kept (its start may be on its way).
      const orphans = laneWorkflowId(to.id, 'orphan');
      const never = Array.from({ length: LIMIT + QUEUE_BOUND }, () => `webhook:never-started:${randomUUID()}`);
      for (const runId of never)
        expect((await takeLanePlace(db, orphans, runId, LIMIT + QUEUE_BOUND)).admitted).toBe(true);
      const young = never.at(-1)!;
      await db.query(
        `UPDATE lane_places SET taken_at = taken_at - make_interval(secs => $2::double precision / 1000)
          WHERE lane = $1 AND run_id <> $3`,
        [orphans, UNSTARTED_PLACE_MS + 60_000, young],
      );
      const afterOrphans = await post(to, 1, { k: 'orphan' });
      expect(afterOrphans.status).toBe(200);
      expect((await oldestLanePlaces(db, orphans, 10)).map((place) => place.runId).sort()).toEqual(
        [young, afterOrphans.body.executionId as string].sort(),
      );

      await approveInTurn([...ids.slice(0, -1), next.body.executionId as string]);
      await approveInTurn([afterOrphans.body.executionId as string]);
    }, 300_000);
  });
}
