/**
 * The circuit breaker, on both stores, with the real dev server, HTTP and worker: the run past
 * maxRuns trips it (filtered events and repeats do not count), paused runs are PAUSED (list,
 * detail, delivery log, GET of the automation, the metric) and run no step; resume starts them in
 * acceptance order through their lane (per key, before a run accepted after them) and the breaker
 * counts from zero; cancel ends them CANCELED with the reason audited; both are idempotent; a
 * single paused run can be canceled or terminated on its own; a breaker saved on a published
 * automation applies to the next delivery; an API killed between the count and the start counts
 * the sender's retry once; two API processes share one count (on PostgreSQL two real processes);
 * roles, 400s naming the field, If-Match.
 */
import request from 'supertest';
import { DATABASES, describeOn } from '../helpers/databases';
import { deliver, hmacEvent, type Stack } from '../helpers/stack';
import { startTwoApis, type TwoApis } from '../helpers/two-apis';
import { runCalls, type Target } from '../helpers/run-calls';
import { runWorkflowId } from '../../src/contract/run';
import { takeBreaker } from '../../src/store/circuit-breaker';
import { poll } from '../helpers/wait';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const QUICK = [{ id: 'v', setVariables: { n: 'ctx.trigger.n' } }];
const HOLD = [
  { id: 'hold', waitForApproval: {} },
  { id: 'done', setVariables: { n: 'ctx.trigger.n' } },
];

for (const target of DATABASES) {
  describeOn(target)(`circuit breaker (${target.label})`, () => {
    let stack: Stack;
    let apis: TwoApis;

    beforeAll(async () => {
      apis = await startTwoApis(target, 'breaker');
      stack = apis.stack;
    });

    afterAll(async () => {
      await apis?.close();
    });

    /** The other API: on PostgreSQL a real process of its own on the same schema; on PGlite the in-process second service. */
    const otherApi = () => apis.otherApi();

    const { as, api, runPath, automation, send, accepted, execution, untilRun, listed, holding, approve } = runCalls(
      () => stack,
      {
        displayName: 'breaker',
        steps: QUICK,
      },
    );
    const breakerPath = (id: string) => `/api/v1/automations/${id}/circuit-breaker`;
    async function setBreaker(target: Target, maxRuns: number, period = '3600s'): Promise<void> {
      const res = await api().put(breakerPath(target.id), { maxRuns, period });
      expect(res.status).toBe(200);
      expect(res.body.automation.circuitBreaker).toEqual({ maxRuns, period });
    }

    async function breaker(target: Target): Promise<Json> {
      const res = await api().get(`/api/v1/automations/${target.id}`);
      expect(res.status).toBe(200);
      return res.body.automation.breaker;
    }

    it('trips at exactly maxRuns+1 (filtered events and repeats do not count); paused runs are PAUSED everywhere and run no step', async () => {
      const target = await automation({ filter: 'ctx.trigger.go' });
      await setBreaker(target, 2);
      expect(await breaker(target)).toEqual({ state: 'CLOSED', runsInPeriod: 0 });

      // Filtered events count nothing.
      for (let i = 0; i < 3; i++) expect((await send(target, { go: false, n: i })).body.filtered).toBe(true);
      const first = hmacEvent(target.secret, { go: true, n: 1 });
      const one = await deliver(stack, target.path, first);
      expect(one.status).toBe(200);
      // A repeat (409) counts nothing.
      expect(
        (await deliver(stack, target.path, hmacEvent(target.secret, { go: true, n: 1 }, { eventId: first.eventId })))
          .status,
      ).toBe(409);
      expect(await breaker(target)).toEqual({ state: 'CLOSED', runsInPeriod: 1 });
      const two = await accepted(target, { go: true, n: 2 });
      expect(await breaker(target)).toEqual({ state: 'CLOSED', runsInPeriod: 2 });
      await untilRun(two, (e) => e.status === 'COMPLETED');

      // The third run trips the breaker; the fourth is paused too.
      const third = await send(target, { go: true, n: 3 });
      expect(third.status).toBe(200);
      expect(third.body).toEqual({ eventId: expect.any(String), executionId: expect.stringMatching(/^webhook:/) });
      const fourth = await accepted(target, { go: true, n: 4 });
      const paused = await untilRun(third.body.executionId, (e) => e.status === 'PAUSED');
      expect(paused.paused.since).toEqual(expect.stringMatching(/^\d{4}-\d\d-\d\dT/));
      expect(paused.steps.map((step: Json) => step.status)).toEqual(['PENDING']);
      // The Web UI shows a run's current details from the SDK's built-in metadata query.
      const metadata = await stack.client.workflow
        .getHandle(third.body.executionId)
        .query<{ currentDetails?: string }>('__temporal_workflow_metadata');
      expect(metadata.currentDetails).toBe('paused by the circuit breaker');
      await untilRun(fourth, (e) => e.status === 'PAUSED');
      const statuses = await poll(
        () => listed(target.id),
        (runs) => runs.get(fourth) === 'PAUSED' && runs.get(third.body.executionId) === 'PAUSED',
      );
      expect(statuses.get(two)).toBe('COMPLETED');
      const state = await breaker(target);
      expect(state).toEqual({ state: 'OPEN', trippedAt: expect.any(String), pausedRuns: 2 });

      await stack.service.deps.deliveryLog?.flush();
      const log = await api().get(`/api/v1/automations/${target.id}/deliveries?pageSize=50`);
      const paused_ = log.body.list
        .filter((item: Json) => item.delivery.reason === 'paused')
        .map((item: Json) => item.delivery.executionId);
      expect(paused_.sort()).toEqual([third.body.executionId, fourth].sort());

      const metrics = await request(stack.service.server).get('/metrics');
      expect(metrics.text).toContain(`automation_breaker_open{automation_id="${target.id}"} 1`);

      // A repeat of a paused run's event is Temporal's 409, naming the paused run.
      const repeat = await send(target, { go: true, n: 4 }, fourth.split(':').pop());
      expect(repeat.status).toBe(409);
      expect(JSON.stringify(repeat.body.details)).toContain(fourth);
      expect((await breaker(target)).pausedRuns).toBe(2);

      // Cancel them all, so the breaker closes and the metric drops.
      const canceled = await api().post(`/api/v1/automations/${target.id}/breaker/cancel`, { reason: 'bad sync' });
      expect(canceled.status).toBe(200);
      expect(canceled.body.canceled).toBe(2);
      expect((await request(stack.service.server).get('/metrics')).text).not.toContain(
        `automation_breaker_open{automation_id="${target.id}"}`,
      );
    });

    it('resume starts the paused runs in acceptance order through their lane, before a run of the key accepted after them; the breaker counts from zero', async () => {
      const target = await automation({ concurrency: { limit: 1, key: 'ctx.trigger.user' } }, HOLD);
      await setBreaker(target, 1);
      const a = await accepted(target, { user: 'u1', n: 1 });
      await untilRun(a, holding);
      const b = await accepted(target, { user: 'u1', n: 2 });
      const c = await accepted(target, { user: 'u1', n: 3 });
      await untilRun(c, (e) => e.status === 'PAUSED');

      const resumed = await as(await stack.service.tokenFor('admin')).post(
        `/api/v1/automations/${target.id}/breaker/resume`,
        { reason: 'checked the sync' },
      );
      expect(resumed.status).toBe(200);
      expect(resumed.body.resumed).toBe(2);
      expect(resumed.body.automation.breaker).toEqual({ state: 'CLOSED', runsInPeriod: 0 });
      // Nothing paused any more: repeating the resume lets nothing go.
      expect(
        (await api().post(`/api/v1/automations/${target.id}/breaker/resume`, { reason: 'again' })).body.resumed,
      ).toBe(0);

      // Counted in the new window, not paused: queued behind b and c.
      const d = await accepted(target, { user: 'u1', n: 4 });
      expect(await breaker(target)).toEqual({ state: 'CLOSED', runsInPeriod: 1 });
      for (const queued of [b, c, d]) await untilRun(queued, (e) => e.status === 'QUEUED');
      await approve(a);
      await untilRun(b, holding);
      expect((await execution(c)).status).toBe('QUEUED');
      expect((await execution(d)).status).toBe('QUEUED');
      await approve(b);
      await untilRun(c, holding);
      expect((await execution(d)).status).toBe('QUEUED');
      await approve(c);
      await untilRun(d, holding);
      await approve(d);
      for (const run of [a, b, c, d]) await untilRun(run, (e) => e.status === 'COMPLETED');

      const audit = await api().get(`/api/v1/audit?action=automation.breaker.resume&subject=automation:${target.id}`);
      expect(audit.status).toBe(200);
      expect(audit.body.list[audit.body.list.length - 1].auditEvent).toMatchObject({
        action: 'automation.breaker.resume',
        details: { reason: 'checked the sync', resumed: 2 },
      });
    });

    it('cancel ends every paused run CANCELED with no step run, audited with the actor and the reason; a single paused run can be canceled or terminated on its own', async () => {
      const target = await automation({});
      await setBreaker(target, 1);
      const ran = await accepted(target, { n: 1 });
      const p1 = await accepted(target, { n: 2 });
      const p2 = await accepted(target, { n: 3 });
      const p3 = await accepted(target, { n: 4 });
      const p4 = await accepted(target, { n: 5 });
      for (const run of [p1, p2, p3, p4]) await untilRun(run, (e) => e.status === 'PAUSED');
      expect((await breaker(target)).pausedRuns).toBe(4);

      expect((await api().post(`${runPath(p1)}/cancel`, {})).status).toBe(200);
      expect((await api().post(`${runPath(p2)}/terminate`, { reason: 'one bad event' })).status).toBe(200);
      expect((await breaker(target)).pausedRuns).toBe(2);

      const noReason = await api().post(`/api/v1/automations/${target.id}/breaker/cancel`, {});
      expect(noReason.status).toBe(400);
      expect(noReason.body.details[0].fieldViolations[0].field).toBe('reason');
      const tooLong = await api().post(`/api/v1/automations/${target.id}/breaker/cancel`, { reason: 'x'.repeat(501) });
      expect(tooLong.status).toBe(400);
      expect((await breaker(target)).pausedRuns).toBe(2);

      const adminToken = await stack.service.tokenFor('admin');
      const canceled = await as(adminToken).post(`/api/v1/automations/${target.id}/breaker/cancel`, {
        reason: 'the HR sync sent garbage',
      });
      expect(canceled.status).toBe(200);
      expect(canceled.body.canceled).toBe(2);
      expect(canceled.body.automation.breaker).toEqual({ state: 'CLOSED', runsInPeriod: 0 });
      expect(
        (await api().post(`/api/v1/automations/${target.id}/breaker/cancel`, { reason: 'again' })).body.canceled,
      ).toBe(0);

      for (const run of [p1, p3, p4]) {
        const done = await untilRun(run, (e) => e.status === 'CANCELED');
        expect(done.steps.map((step: Json) => step.status)).not.toContain('DONE');
      }
      expect(
        (await untilRun(p2, (e) => e.status === 'TERMINATED')).steps.map((step: Json) => step.status),
      ).not.toContain('DONE');
      expect((await execution(ran)).status).toBe('COMPLETED');

      const audit = await api().get(`/api/v1/audit?action=automation.breaker.cancel&subject=automation:${target.id}`);
      const entry = audit.body.list[audit.body.list.length - 1].auditEvent;
      expect(entry).toMatchObject({ details: { reason: 'the HR sync sent garbage', canceled: 2 } });
      expect(entry.actor).toMatch(/^client:/);
    });

    it('a breaker saved on a published automation applies to the next delivery; DELETE removes it; both audited, ETag advances, If-Match 412', async () => {
      const target = await automation({});
      const early = hmacEvent(target.secret, { n: 1 });
      expect((await deliver(stack, target.path, early)).status).toBe(200);
      const before = await api().get(`/api/v1/automations/${target.id}`);
      expect(before.body.automation.circuitBreaker).toBeNull();
      expect(before.body.automation.breaker).toBeUndefined();
      const etag = before.headers.etag as string;

      const set = await api().put(breakerPath(target.id), { maxRuns: 1, period: '60s' }, { 'If-Match': etag });
      expect(set.status).toBe(200);
      expect(set.headers.etag).not.toBe(etag);
      // Stale If-Match: 412, nothing changes.
      const stale = await api().put(breakerPath(target.id), { maxRuns: 5, period: '60s' }, { 'If-Match': etag });
      expect(stale.status).toBe(412);
      expect(stale.body.code).toBe(9);
      expect((await api().delete(breakerPath(target.id), { 'If-Match': etag })).status).toBe(412);
      expect((await api().get(`/api/v1/automations/${target.id}`)).body.automation.circuitBreaker).toEqual({
        maxRuns: 1,
        period: '60s',
      });

      // A repeat of an event accepted before the breaker is the engine's 409: what it counted is given back.
      expect(
        (await deliver(stack, target.path, hmacEvent(target.secret, { n: 1 }, { eventId: early.eventId }))).status,
      ).toBe(409);
      expect(await breaker(target)).toEqual({ state: 'CLOSED', runsInPeriod: 0 });
      // The next deliveries: one counted, then paused (no publish needed).
      await accepted(target, { n: 2 });
      const paused = await accepted(target, { n: 3 });
      await untilRun(paused, (e) => e.status === 'PAUSED');

      const removed = await api().delete(breakerPath(target.id), { 'If-Match': set.headers.etag as string });
      expect(removed.status).toBe(200);
      expect(removed.body.automation.circuitBreaker).toBeNull();
      // Still listed as open while it holds a run.
      expect(removed.body.automation.breaker).toMatchObject({ state: 'OPEN', pausedRuns: 1 });
      // Without a breaker nothing is paused or counted.
      const free = await accepted(target, { n: 4 });
      await untilRun(free, (e) => e.status === 'COMPLETED');
      expect((await api().post(`/api/v1/automations/${target.id}/breaker/resume`, { reason: 'ok' })).body.resumed).toBe(
        1,
      );
      await untilRun(paused, (e) => e.status === 'COMPLETED');

      const actions = (await api().get(`/api/v1/audit?subject=automation:${target.id}&pageSize=50`)).body.list.map(
        (item: Json) => item.auditEvent.action,
      );
      expect(actions).toEqual(
        expect.arrayContaining([
          'automation.circuit_breaker.set',
          'automation.circuit_breaker.delete',
          'automation.breaker.resume',
        ]),
      );
    });

    it("roles: the setting is super_admin's; resume and cancel admin's too; read_only neither. Bad settings: 400 naming the field, nothing saved", async () => {
      const target = await automation({});
      const admin = as(await stack.service.tokenFor('admin'));
      const readOnly = as(await stack.service.tokenFor('read_only'));
      expect((await admin.put(breakerPath(target.id), { maxRuns: 1, period: '60s' })).status).toBe(403);
      expect((await admin.delete(breakerPath(target.id))).status).toBe(403);
      expect((await readOnly.post(`/api/v1/automations/${target.id}/breaker/resume`, { reason: 'x' })).status).toBe(
        403,
      );
      expect((await readOnly.post(`/api/v1/automations/${target.id}/breaker/cancel`, { reason: 'x' })).status).toBe(
        403,
      );
      expect((await admin.post(`/api/v1/automations/${target.id}/breaker/resume`, { reason: 'x' })).status).toBe(200);
      expect((await api().put(breakerPath('no-such-automation'), { maxRuns: 1, period: '60s' })).status).toBe(404);

      const cases: Array<[unknown, string]> = [
        [{ maxRuns: 0, period: '60s' }, 'maxRuns'],
        [{ maxRuns: 1_000_001, period: '60s' }, 'maxRuns'],
        [{ maxRuns: 1.5, period: '60s' }, 'maxRuns'],
        [{ period: '60s' }, 'maxRuns'],
        [{ maxRuns: 1, period: '59s' }, 'period'],
        [{ maxRuns: 1, period: '2592001s' }, 'period'],
        [{ maxRuns: 1, period: '1h' }, 'period'],
        [{ maxRuns: 1 }, 'period'],
        [{ maxRuns: 1, period: '60s', key: 'x' }, 'key'],
      ];
      for (const [body, field] of cases) {
        const res = await api().put(breakerPath(target.id), body);
        expect([JSON.stringify(body), res.status]).toEqual([JSON.stringify(body), 400]);
        expect(res.body.details[0].fieldViolations.map((v: Json) => v.field)).toEqual([field]);
      }
      expect((await api().get(`/api/v1/automations/${target.id}`)).body.automation.circuitBreaker).toBeNull();
    });

    it("an API killed between the count and the start: the sender's retry starts the run counted once, and the (maxRuns+1)-th run still trips", async () => {
      const target = await automation({});
      await setBreaker(target, 2);
      const listenerId = target.path.split('/').pop()!;
      const lost = hmacEvent(target.secret, { n: 1 });
      // What a process that died right after its statement left behind: the run counted, never started.
      const db = stack.service.deps.db;
      expect(await takeBreaker(db, target.id, runWorkflowId(listenerId, lost.eventId), 2, 3_600_000)).toMatchObject({
        decision: 'counted',
        inserted: true,
      });
      expect(await breaker(target)).toEqual({ state: 'CLOSED', runsInPeriod: 1 });
      // The sender got no 200 and retries: the run starts, and counts no second time.
      const retried = await deliver(stack, target.path, lost);
      expect(retried.status).toBe(200);
      expect(await breaker(target)).toEqual({ state: 'CLOSED', runsInPeriod: 1 });
      await untilRun(retried.body.executionId, (e) => e.status === 'COMPLETED');
      await untilRun(await accepted(target, { n: 2 }), (e) => e.status === 'COMPLETED');
      await untilRun(await accepted(target, { n: 3 }), (e) => e.status === 'PAUSED');
    });

    it(`two API processes share one count (${target.url ? 'two real processes' : 'two services on one store'})`, async () => {
      const target = await automation({});
      await setBreaker(target, 2);
      const other = await otherApi();
      try {
        const viaOther = async (n: number) => {
          const res = await poll(
            () => other.post(target.path, hmacEvent(target.secret, { n })),
            (r) => r.status !== 404,
            { what: 'the other API knows the listener' },
          );
          expect(res.status).toBe(200);
          return res.body.executionId as string;
        };
        const r1 = await accepted(target, { n: 1 });
        const r2 = await viaOther(2);
        const r3 = await viaOther(3);
        const r4 = await accepted(target, { n: 4 });
        for (const run of [r1, r2]) await untilRun(run, (e) => e.status === 'COMPLETED');
        for (const run of [r3, r4]) await untilRun(run, (e) => e.status === 'PAUSED');
        expect(await breaker(target)).toMatchObject({ state: 'OPEN', pausedRuns: 2 });
      } finally {
        await other.stop();
      }
    });
  });
}
