/**
 * Schedule triggers on Temporal Schedules, against the real dev server and a real worker, on both
 * stores: publish makes the Schedule and its actions run with ids derived from the automation and
 * the scheduled time; `enabled: false` pauses it at once; trigger-now and backfill run `manual` and
 * `backfill` actions (a backfilled time that ran is skipped and counted; the 1,000 bound names
 * `endAt`); unpublish and delete remove it; reconciliation heals a Schedule lost or left behind by
 * a crash; a daylight-saving day in Europe/Berlin fires at the contract's instants, read from the
 * server's own computation (its matching times). An engine that does not answer makes a publish a
 * 503 that changes nothing.
 */
import { DATABASES, describeOn } from '../helpers/databases';
import { startStack, type Stack } from '../helpers/stack';
import { startTestService, type TestService } from '../helpers/test-service';
import { callerFor, type Caller } from '../helpers/governance';
import { poll } from '../helpers/wait';
import { reconcileSchedules, scheduledRunId, scheduleDefinitionOf } from '../../src/domain/schedules';
import { getAutomation } from '../../src/store/automations';

const STEPS = [{ id: 'seen', setVariables: { kind: 'ctx.trigger.kind', at: 'ctx.trigger.scheduledAt' } }];

for (const target of DATABASES) {
  describeOn(target)(`schedule triggers (${target.label})`, () => {
    let stack: Stack;
    let admin: Caller;
    const made: string[] = [];

    beforeAll(async () => {
      stack = await startStack({ target });
      admin = callerFor(stack.service, stack.adminToken);
    });
    afterAll(async () => {
      // No Schedule of this suite outlives it on the shared server.
      for (const id of made) await stack?.service.deps.engine.deleteSchedule(id).catch(() => undefined);
      await stack?.close();
    });

    const engine = () => stack.service.deps.engine;
    const db = () => stack.service.deps.db;
    const create = async (schedule: Record<string, unknown>, publish = true) => {
      const { automation } = await stack.createAutomation(
        { displayName: `Scheduled ${made.length}`, trigger: { schedule }, steps: STEPS },
        publish,
      );
      made.push(automation.id);
      return automation;
    };
    const listenerOf = async (id: string) => (await getAutomation(db(), id))!.listenerId;
    const runsOf = async (id: string) => (await engine().list(id, 200, undefined)).runs;

    it('a daylight-saving day in Europe/Berlin fires once at the contract instants (the server computes them)', async () => {
      const automation = await create({ cron: '30 2 * * *', timezone: 'Europe/Berlin', enabled: false });
      const spring = await engine().scheduleTimes(
        automation.id,
        new Date('2027-03-27T12:00:00Z'),
        new Date('2027-03-29T00:00:00Z'),
      );
      expect(spring).toEqual(['2027-03-28T01:00:00.000Z']);
      const autumn = await engine().scheduleTimes(
        automation.id,
        new Date('2027-10-30T12:00:00Z'),
        new Date('2027-11-01T00:00:00Z'),
      );
      expect(autumn).toEqual(['2027-10-31T00:30:00.000Z']);
      // An ordinary day is the zone's 02:30 (CET: 01:30Z).
      expect(
        await engine().scheduleTimes(automation.id, new Date('2027-01-10T00:00:00Z'), new Date('2027-01-11T00:00:00Z')),
      ).toEqual(['2027-01-10T01:30:00.000Z']);
    });

    it("a dry run answers the next times as the server computes them; a draft's trigger answers its own", async () => {
      const automation = await create({ cron: '15 2 * * SUN', timezone: 'Europe/Berlin' });
      const server = (await admin.get(`/api/v1/automations/${automation.id}`)).body.automation.schedule.nextRuns;
      expect(server).toHaveLength(5);
      const tested = await admin.post(`/api/v1/automations/${automation.id}/test`, { payload: {} });
      expect(tested.status).toBe(200);
      expect(tested.body.nextRuns).toEqual(server);
      const draft = await admin.post(`/api/v1/automations/${automation.id}/test`, {
        payload: {},
        automation: { trigger: { schedule: { interval: '7s', offset: '3s' } } },
      });
      expect(draft.status).toBe(200);
      expect(draft.body.nextRuns).toHaveLength(5);
      for (const time of draft.body.nextRuns as string[]) expect(Date.parse(time) % 7000).toBe(3000);
      const bad = await admin.post(`/api/v1/automations/${automation.id}/test`, {
        payload: {},
        automation: { trigger: { schedule: { cron: '0 25 * * *' } } },
      });
      expect(bad.status).toBe(400);
      expect(JSON.stringify(bad.body)).toContain('automation.trigger.schedule.cron');
      await admin.post(`/api/v1/automations/${automation.id}/unpublish`);
    });

    it('publish makes the Schedule: its actions run with derived ids, a read shows the next runs, a pause stops them', async () => {
      const automation = await create({ interval: '2s' });
      const listenerId = await listenerOf(automation.id);
      const read = await admin.get(`/api/v1/automations/${automation.id}`);
      expect(read.status).toBe(200);
      const schedule = read.body.automation.schedule as { nextRuns: string[]; paused: boolean };
      expect(schedule.paused).toBe(false);
      expect(schedule.nextRuns).toHaveLength(5);
      expect([...schedule.nextRuns].sort()).toEqual(schedule.nextRuns);
      for (const time of schedule.nextRuns) expect(Date.parse(time) % 2000).toBe(0);

      const runs = await poll(
        () => runsOf(automation.id),
        (list) => list.filter((run) => run.status === 'COMPLETED').length >= 2,
      );
      const done = runs.find((run) => run.status === 'COMPLETED')!;
      const input = (await engine().input(done.id))!;
      const trigger = input.trigger as { kind: string; scheduledAt: string; firedAt: string };
      expect(trigger.kind).toBe('scheduled');
      expect(Date.parse(trigger.scheduledAt) % 2000).toBe(0);
      expect(Date.parse(trigger.firedAt)).toBeGreaterThanOrEqual(Date.parse(trigger.scheduledAt));
      expect(done.id).toBe(scheduledRunId(listenerId, trigger.scheduledAt));
      const record = (await engine().get(done.id))!;
      expect(record.steps.map((step) => step.output)).toEqual([{ kind: 'scheduled', at: trigger.scheduledAt }]);

      // A trigger update applies at once: paused, no next runs, and no new action.
      const paused = await admin.post(`/api/v1/automations/${automation.id}`, {
        automation: { trigger: { schedule: { interval: '2s', enabled: false } } },
        updateMask: 'trigger',
      });
      expect(paused.status).toBe(200);
      const after = await admin.get(`/api/v1/automations/${automation.id}`);
      expect(after.body.automation.schedule).toEqual({
        nextRuns: [],
        paused: true,
        lastRunAt: expect.any(String),
      });
      const pausedAt = Date.now();
      const settled = (await runsOf(automation.id)).length;
      await new Promise((resolve) => setTimeout(resolve, 4500));
      expect((await runsOf(automation.id)).length).toBeLessThanOrEqual(settled + 1);

      // Resumed: it fires again, and the times due while paused never run (inside the catch-up window too).
      const resumedAt = Date.now();
      const resumed = await admin.post(`/api/v1/automations/${automation.id}`, {
        automation: { trigger: { schedule: { interval: '2s', enabled: true } } },
        updateMask: 'trigger',
      });
      expect(resumed.status).toBe(200);
      const later = await poll(
        () => runsOf(automation.id),
        (list) => list.some((run) => Date.parse(run.eventId!) > resumedAt + 1000 && run.status === 'COMPLETED'),
      );
      const duringPause = later.filter(
        (run) => Date.parse(run.eventId!) > pausedAt + 2000 && Date.parse(run.eventId!) < resumedAt - 1000,
      );
      expect(duringPause.map((run) => run.eventId)).toEqual([]);
      await admin.post(`/api/v1/automations/${automation.id}/unpublish`);
    });

    it('trigger-now runs a manual action while paused; unpublish removes the Schedule', async () => {
      const automation = await create({ cron: '0 0 1 1 *', enabled: false });
      const listenerId = await listenerOf(automation.id);
      const before = Date.now();
      const triggered = await admin.post(`/api/v1/automations/${automation.id}/schedule/trigger`);
      expect(triggered.status).toBe(200);
      const { executionId } = triggered.body as { executionId: string };
      const run = await poll(
        () => engine().get(executionId),
        (found) => found?.status === 'COMPLETED',
      );
      const input = (await engine().input(executionId))!;
      const trigger = input.trigger as { kind: string; scheduledAt: string; firedAt: string };
      expect(trigger.kind).toBe('manual');
      expect(Date.parse(trigger.scheduledAt)).toBeGreaterThanOrEqual(before);
      expect(executionId).toBe(scheduledRunId(listenerId, trigger.scheduledAt));
      expect(run!.steps[0]!.output).toEqual({ kind: 'manual', at: trigger.scheduledAt });
      const read = await admin.get(`/api/v1/automations/${automation.id}`);
      expect(read.body.automation.schedule.lastRunAt).not.toBeNull();

      expect(await engine().describeSchedule(automation.id, 5)).toEqual({ nextRuns: [], paused: true });
      const unpublished = await admin.post(`/api/v1/automations/${automation.id}/unpublish`);
      expect(unpublished.status).toBe(200);
      expect(await engine().describeSchedule(automation.id, 5)).toBeUndefined();
      expect((await admin.get(`/api/v1/automations/${automation.id}`)).body.automation.schedule).toBeUndefined();
      // Not published: no action by hand either.
      expect((await admin.post(`/api/v1/automations/${automation.id}/schedule/trigger`)).status).toBe(409);
    });

    it('backfill runs the past range once: a second backfill skips and counts what ran; bad ranges are 400s', async () => {
      const automation = await create({ interval: '60s', enabled: false });
      const listenerId = await listenerOf(automation.id);
      const end = Math.floor(Date.now() / 60_000) * 60_000 - 60_000;
      const range = { startAt: new Date(end - 300_000).toISOString(), endAt: new Date(end).toISOString() };
      const first = await admin.post(`/api/v1/automations/${automation.id}/schedule/backfill`, {
        ...range,
        overlap: 'ALLOW_ALL',
      });
      expect(first.status).toBe(200);
      expect(first.body).toEqual({ started: 5, skipped: 0 });
      const expected = [0, 1, 2, 3, 4].map((i) =>
        scheduledRunId(listenerId, new Date(end - 300_000 + i * 60_000).toISOString()),
      );
      const runs = await poll(
        () => runsOf(automation.id),
        (list) => list.filter((run) => run.status === 'COMPLETED').length === 5,
      );
      expect(runs.map((run) => run.id).sort()).toEqual([...expected].sort());
      const input = (await engine().input(expected[0]!))!;
      expect((input.trigger as { kind: string }).kind).toBe('backfill');

      // Overlapping the first range by two times, one after another (BUFFER_ALL): 2 skipped, 2 new.
      const second = await admin.post(`/api/v1/automations/${automation.id}/schedule/backfill`, {
        startAt: new Date(end - 420_000).toISOString(),
        endAt: new Date(end - 180_000).toISOString(),
        overlap: 'BUFFER_ALL',
      });
      expect(second.status).toBe(200);
      expect(second.body).toEqual({ started: 2, skipped: 2 });
      const all = await poll(
        () => runsOf(automation.id),
        (list) => list.filter((run) => run.status === 'COMPLETED').length === 7,
      );
      expect(new Set(all.map((run) => run.id)).size).toBe(7);
      // The delivery log: seven started actions, and the two skipped times of the second backfill.
      const log = await admin.get(`/api/v1/automations/${automation.id}/deliveries?page_size=50`);
      expect(log.status).toBe(200);
      const entries = (log.body.list as Array<{ delivery: Record<string, unknown> }>).map(({ delivery }) => delivery);
      expect(entries.filter((entry) => entry.reason === 'started')).toHaveLength(7);
      expect(entries.filter((entry) => entry.reason === 'skipped').map((entry) => entry.eventId)).toEqual(
        expect.arrayContaining([new Date(end - 300_000).toISOString(), new Date(end - 240_000).toISOString()]),
      );
      for (const entry of entries) {
        expect(entry).toMatchObject({ source: 'schedule', status: null, sourceAddress: null });
        if (entry.reason === 'started')
          expect(entry.executionId).toBe(scheduledRunId(listenerId, entry.eventId as string));
      }

      const bad = async (body: Record<string, unknown>, field: string) => {
        const answer = await admin.post(`/api/v1/automations/${automation.id}/schedule/backfill`, body);
        expect(answer.status).toBe(400);
        expect(JSON.stringify(answer.body)).toContain(`"${field}"`);
      };
      await bad({ startAt: range.endAt, endAt: range.startAt }, 'endAt');
      await bad({ startAt: range.startAt, endAt: new Date(Date.now() + 3_600_000).toISOString() }, 'endAt');
      await bad({ startAt: 'yesterday', endAt: range.endAt }, 'startAt');
      await bad({ ...range, overlap: 'QUEUE' }, 'overlap');
      // 1,001 actions of a 1 s interval: over the bound, nothing started.
      const dense = await create({ interval: '1s', enabled: false });
      const denseEnd = Math.floor(Date.now() / 1000) * 1000 - 5000;
      const over = await admin.post(`/api/v1/automations/${dense.id}/schedule/backfill`, {
        startAt: new Date(denseEnd - 1_001_000).toISOString(),
        endAt: new Date(denseEnd).toISOString(),
      });
      expect(over.status).toBe(400);
      expect(JSON.stringify(over.body)).toContain('1001 actions');
      expect(await runsOf(dense.id)).toEqual([]);
    });

    it('reconciliation puts back a lost Schedule and removes one without its automation', async () => {
      const automation = await create({ cron: '0 3 * * *', enabled: false });
      await engine().deleteSchedule(automation.id);
      expect(await engine().describeSchedule(automation.id, 5)).toBeUndefined();
      // A Schedule whose automation never committed (a crash between the Schedule call and the commit).
      const record = (await getAutomation(db(), automation.id))!;
      const orphan = { ...record, id: `orphan-${automation.id}` };
      await engine().putSchedule(scheduleDefinitionOf(orphan)!);
      made.push(orphan.id);
      await reconcileSchedules(db(), engine());
      expect(await engine().describeSchedule(automation.id, 5)).toEqual({ nextRuns: [], paused: true });
      expect(await engine().describeSchedule(orphan.id, 5)).toBeUndefined();
    });

    it('delete removes the Schedule; a schedule automation has no secret to rotate', async () => {
      const automation = await create({ interval: '3600s', enabled: false });
      const rotate = await admin.post(`/api/v1/automations/${automation.id}/trigger/rotate-secret`);
      expect(rotate.status).toBe(400);
      expect(JSON.stringify(rotate.body)).toContain('"trigger"');
      expect((await engine().describeSchedule(automation.id, 5))?.paused).toBe(true);
      expect((await admin.delete(`/api/v1/automations/${automation.id}`)).status).toBe(200);
      expect(await engine().describeSchedule(automation.id, 5)).toBeUndefined();
    });
  });

  describeOn(target)(`schedule triggers without an engine (${target.label})`, () => {
    let service: TestService;
    beforeAll(async () => {
      service = await startTestService({ target });
    });
    afterAll(async () => service?.close());

    it('publishing a schedule automation while the engine is down is a 503 that changes nothing', async () => {
      const admin = callerFor(service, await service.tokenFor('super_admin'));
      const created = await admin.post('/api/v1/automations', {
        displayName: 'Nightly',
        trigger: { schedule: { cron: '@daily' } },
        steps: STEPS,
      });
      expect(created.status).toBe(200);
      const id = created.body.automation.id as string;
      const published = await admin.post(`/api/v1/automations/${id}/publish`);
      expect(published.status).toBe(503);
      const read = await admin.get(`/api/v1/automations/${id}`);
      expect(read.body.automation.published).toBe(false);
      expect(read.body.automation.publishedVersion).toBeNull();
    });
  });
}
