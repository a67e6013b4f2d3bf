/**
 * Flow control between runs, on both stores, with the real dev server, HTTP and worker: the
 * filter (true, false, error; a filtered id's repeat is 409, also after the filter changed), the
 * concurrency limit (limit 1 and 2 with runs held by waitForApproval: later runs QUEUED in both
 * executions endpoints, FIFO hand-off, cancel and terminate of queued and running holders, the slot
 * of a terminated holder freed by the lane's check), a failing concurrency key, the rate limit
 * (429 with Retry-After, accepted on retry, counted across two API processes sharing the store),
 * the dry run, and the validation of the three fields.
 */
import request from 'supertest';
import { DATABASES, describeOn } from '../helpers/databases';
import { deliver, hmacEvent, type Stack } from '../helpers/stack';
import { startTwoApis, type TwoApis } from '../helpers/two-apis';
import { runCalls } from '../helpers/run-calls';
import { poll, sleep } from '../helpers/wait';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const TRIGGER = { incomingWebhook: { authMethod: 'HMAC' } };
const HOLD = [
  { id: 'hold', waitForApproval: {} },
  { id: 'done', setVariables: { user: 'ctx.trigger.user' } },
];

for (const target of DATABASES) {
  describeOn(target)(`flow control (${target.label})`, () => {
    let stack: Stack;
    let apis: TwoApis;

    beforeAll(async () => {
      apis = await startTwoApis(target, 'flow');
      stack = apis.stack;
    });

    afterAll(async () => {
      await apis?.close();
    });

    /** The second API of the rate-limit case: on PostgreSQL a real process of its own, on PGlite the in-process second service. */
    const otherApi = () => apis.otherApi();

    const { api, runPath, automation, send, accepted, execution, untilRun, listed, holding, approve } = runCalls(
      () => stack,
      {
        displayName: 'flow',
        steps: HOLD,
      },
    );
    const closed = (e: Json) => !['RUNNING', 'QUEUED'].includes(e.status);

    describe('filter', () => {
      it('true starts a run; false answers filtered without one, and the repeat of that id is 409; the delivery log says filtered', async () => {
        const target = await automation({ filter: "ctx.trigger.type == 'user.created'" }, [
          { id: 'v', setVariables: { t: 'ctx.trigger.type' } },
        ]);
        const run = await accepted(target, { type: 'user.created' });
        expect((await untilRun(run, (e) => e.status === 'COMPLETED')).steps[0].output).toEqual({ t: 'user.created' });

        const event = hmacEvent(target.secret, { type: 'user.deleted' });
        const filtered = await deliver(stack, target.path, event);
        expect(filtered.status).toBe(200);
        expect(filtered.body).toEqual({ eventId: event.eventId, executionId: null, filtered: true });
        const again = await deliver(
          stack,
          target.path,
          hmacEvent(target.secret, { type: 'user.deleted' }, { eventId: event.eventId }),
        );
        expect(again.status).toBe(409);
        expect(again.body.code).toBe(6);
        // The other API process knows it too (the record is in the store).
        const elsewhere = await request(apis.second.server)
          .post(target.path)
          .set(hmacEvent(target.secret, { type: 'user.created' }, { eventId: event.eventId }).headers)
          .send(JSON.stringify({ type: 'user.created' }));
        expect(elsewhere.status).toBe(409);

        await stack.service.deps.deliveryLog?.flush();
        const log = await api().get(`/api/v1/automations/${target.id}/deliveries?pageSize=50`);
        const reasons = log.body.list.map((item: Json) => item.delivery.reason);
        expect(reasons).toContain('filtered');
        expect(log.body.list.find((item: Json) => item.delivery.reason === 'filtered').delivery).toMatchObject({
          status: 200,
          eventId: event.eventId,
          executionId: null,
        });
      });

      it('a repeat is 409 whatever its first delivery became: a run, though the filter now says false; a filtered id, though the filter is gone', async () => {
        const target = await automation({ filter: 'ctx.trigger.go' }, [{ id: 'v', setVariables: { ok: 'true' } }]);
        const ran = hmacEvent(target.secret, { go: true });
        const first = await deliver(stack, target.path, ran);
        expect(first.status).toBe(200);
        const dropped = hmacEvent(target.secret, { go: false });
        expect((await deliver(stack, target.path, dropped)).body.filtered).toBe(true);

        // Now every event is filtered: the repeat of the one that ran is still a 409 naming its run.
        expect(
          (
            await api().post(`/api/v1/automations/${target.id}`, {
              automation: { filter: 'false' },
              updateMask: 'filter',
            })
          ).status,
        ).toBe(200);
        expect((await api().post(`/api/v1/automations/${target.id}/publish`)).status).toBe(200);
        const repeat = await poll(
          () => deliver(stack, target.path, hmacEvent(target.secret, { go: true }, { eventId: ran.eventId })),
          (res) => res.status !== 200,
        );
        expect(repeat.status).toBe(409);
        expect(JSON.stringify(repeat.body.details)).toContain(first.body.executionId);

        // No filter at all: the filtered id's repeat is still a 409 (no run starts for it).
        expect(
          (await api().post(`/api/v1/automations/${target.id}`, { automation: { filter: null }, updateMask: 'filter' }))
            .status,
        ).toBe(200);
        expect((await api().post(`/api/v1/automations/${target.id}/publish`)).status).toBe(200);
        const late = await poll(
          () => deliver(stack, target.path, hmacEvent(target.secret, { go: false }, { eventId: dropped.eventId })),
          (res) => res.status !== 200 || res.body.filtered !== true,
        );
        expect(late.status).toBe(409);
      });

      it('an evaluation error drops nothing: a run starts and fails at once, naming filter, with no step run', async () => {
        const target = await automation({ filter: 'ctx.trigger.type == "x"' }, [
          { id: 'v', setVariables: { ok: 'true' } },
        ]);
        const run = await accepted(target, { other: 1 });
        const failed = await untilRun(run, (e) => e.status === 'FAILED');
        expect(failed.error).toMatch(/^filter: /);
        expect(failed.steps).toEqual([]);
      });
    });

    describe('concurrency', () => {
      it('limit 1: later runs of a key are QUEUED (both endpoints, with the key), start in acceptance order; other keys run at once', async () => {
        const target = await automation({ concurrency: { limit: 1, key: 'ctx.trigger.user' } });
        const a = await accepted(target, { user: 'u1', n: 1 });
        const b = await accepted(target, { user: 'u1', n: 2 });
        const c = await accepted(target, { user: 'u1', n: 3 });
        const other = await accepted(target, { user: 'u2', n: 1 });
        await untilRun(a, holding);
        await untilRun(other, holding);
        for (const id of [b, c]) {
          const queued = await untilRun(id, (e) => e.status === 'QUEUED');
          expect(queued.queue).toEqual({ key: 'u1' });
          expect(queued.steps.map((s: Json) => s.status)).toEqual(['PENDING', 'PENDING']);
        }
        const statuses = await poll(
          () => listed(target.id),
          (m) => m.get(b) === 'QUEUED' && m.get(c) === 'QUEUED' && m.get(a) === 'RUNNING',
        );
        expect([statuses.get(a), statuses.get(b), statuses.get(c), statuses.get(other)]).toEqual([
          'RUNNING',
          'QUEUED',
          'QUEUED',
          'RUNNING',
        ]);

        await approve(a);
        await untilRun(a, (e) => e.status === 'COMPLETED');
        const second = await untilRun(b, holding);
        expect(second.queue).toBeUndefined();
        expect((await execution(c)).status).toBe('QUEUED');
        await approve(b);
        await untilRun(c, holding);
        await approve(c);
        await approve(other);
        for (const id of [c, other]) await untilRun(id, (e) => e.status === 'COMPLETED');
      });

      it('a queued run canceled or terminated runs no step; a terminated holder frees its slot (the lane finds it)', async () => {
        const target = await automation({ concurrency: { limit: 1 } });
        const holder = await accepted(target, { user: 'x' });
        const canceled = await accepted(target, { user: 'x' });
        const terminated = await accepted(target, { user: 'x' });
        const next = await accepted(target, { user: 'x' });
        await untilRun(holder, holding);
        await untilRun(terminated, (e) => e.status === 'QUEUED');

        expect((await api().post(`${runPath(canceled)}/cancel`, {})).status).toBe(200);
        expect((await api().post(`${runPath(terminated)}/terminate`, { reason: 'not needed' })).status).toBe(200);
        // Wait for each to close, whatever it closes as, then say which: a queued run that returned
        // normally fails here at once, showing COMPLETED.
        const wasCanceled = await untilRun(canceled, closed);
        const wasTerminated = await untilRun(terminated, closed);
        expect([wasCanceled.status, wasTerminated.status]).toEqual(['CANCELED', 'TERMINATED']);
        // Zero steps ran: none started, none has an output.
        for (const run of [wasCanceled, wasTerminated]) {
          expect([run.id, run.steps.filter((s: Json) => s.status !== 'NOT_RUN' || s.output !== null)]).toEqual([
            run.id,
            [],
          ]);
        }

        // The holder is terminated (no code of it runs): the lane frees the slot by itself, and the next run goes.
        expect((await execution(next)).status).toBe('QUEUED');
        expect((await api().post(`${runPath(holder)}/terminate`, { reason: 'stuck' })).status).toBe(200);
        await untilRun(next, holding);
        // Canceling a running holder hands the slot on at once.
        const after = await accepted(target, { user: 'x' });
        await untilRun(after, (e) => e.status === 'QUEUED');
        expect((await api().post(`${runPath(next)}/cancel`, {})).status).toBe(200);
        await untilRun(after, holding);
        await approve(after);
        await untilRun(after, (e) => e.status === 'COMPLETED');
      }, 240_000);

      it('limit 2: two runs of a key hold, the third waits for either', async () => {
        const target = await automation({ concurrency: { limit: 2, key: "'all'" } });
        const runs = [
          await accepted(target, { user: 'a' }),
          await accepted(target, { user: 'b' }),
          await accepted(target, { user: 'c' }),
        ];
        await untilRun(runs[0]!, holding);
        await untilRun(runs[1]!, holding);
        expect((await untilRun(runs[2]!, (e) => e.status === 'QUEUED')).queue).toEqual({ key: 'all' });
        await approve(runs[1]!);
        await untilRun(runs[2]!, holding);
        await approve(runs[0]!);
        await approve(runs[2]!);
        for (const id of runs) await untilRun(id, (e) => e.status === 'COMPLETED');
      });

      it('a key that fails to evaluate fails the run at once, naming concurrency.key', async () => {
        const target = await automation({ concurrency: { limit: 1, key: 'ctx.trigger.user' } });
        const run = await accepted(target, { nobody: true });
        const failed = await untilRun(run, (e) => e.status === 'FAILED');
        expect(failed.error).toMatch(/^concurrency\.key: /);
      });
    });

    describe('rate limit', () => {
      const across = target.url
        ? 'counted across two API processes (the second one a process of its own on the same PostgreSQL)'
        : 'counted across two API services in one process (PGlite lives inside it: they share one store object)';
      it(`over the limit: 429, code 8, Retry-After; nothing recorded, so the retry after it is accepted; ${across}`, async () => {
        const other = await otherApi();
        try {
          await overTheLimit(other);
        } finally {
          await other.stop();
        }
      });

      async function overTheLimit(other: Awaited<ReturnType<typeof otherApi>>): Promise<void> {
        const target = await automation({ rateLimit: { limit: 1, period: '3s', key: 'ctx.trigger.tenant' } }, [
          { id: 'v', setVariables: { ok: 'true' } },
        ]);
        const first = await send(target, { tenant: 't1' });
        expect(first.status).toBe(200);
        // The other API: the same limit, from the store.
        const event = hmacEvent(target.secret, { tenant: 't1' });
        const refused = await other.post(target.path, event);
        expect(refused.status).toBe(429);
        expect(refused.body.code).toBe(8);
        const retryAfter = Number(refused.headers['retry-after']);
        expect(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 3).toBe(true);
        // Another key is not limited.
        expect((await send(target, { tenant: 't2' })).status).toBe(200);

        await sleep(retryAfter * 1000);
        const retried = await deliver(
          stack,
          target.path,
          hmacEvent(target.secret, { tenant: 't1' }, { eventId: event.eventId }),
        );
        expect(retried.status).toBe(200);
        await stack.service.deps.deliveryLog?.flush();
        await other.flushed();
        const log = await poll(
          () => api().get(`/api/v1/automations/${target.id}/deliveries?pageSize=50&reason=rate_limited`),
          (res) => res.body.list?.length > 0,
          { what: 'the 429 in the delivery log' },
        );
        expect(log.body.list.map((item: Json) => item.delivery.status)).toEqual([429]);
      }

      it('a repeat of an accepted event is 409, not 429, and does not use up the limit', async () => {
        const target = await automation({ rateLimit: { limit: 2, period: '3600s' } }, [
          { id: 'v', setVariables: { ok: 'true' } },
        ]);
        const event = hmacEvent(target.secret, {});
        expect((await deliver(stack, target.path, event)).status).toBe(200);
        for (let i = 0; i < 3; i++)
          expect(
            (await deliver(stack, target.path, hmacEvent(target.secret, {}, { eventId: event.eventId }))).status,
          ).toBe(409);
        expect((await send(target, {})).status).toBe(200);
        expect((await send(target, {})).status).toBe(429);
        expect(
          (await deliver(stack, target.path, hmacEvent(target.secret, {}, { eventId: event.eventId }))).status,
        ).toBe(409);
      });
    });

    describe('saving and the dry run', () => {
      it('each field is compiled on save: 400 naming the field; the saved values are shown and versioned', async () => {
        const bad = async (fields: Record<string, unknown>, field: string) => {
          const res = await api().post('/api/v1/automations', {
            displayName: 'x',
            trigger: TRIGGER,
            steps: [],
            ...fields,
          });
          expect(res.status).toBe(400);
          expect(res.body.details[0].fieldViolations.map((v: Json) => v.field)).toContain(field);
        };
        await bad({ filter: 'ctx.trigger.(' }, 'filter');
        await bad({ concurrency: { limit: 0 } }, 'concurrency.limit');
        await bad({ concurrency: { limit: 1, key: 'ctx.' } }, 'concurrency.key');
        await bad({ rateLimit: { limit: 1, period: '1m' } }, 'rateLimit.period');
        await bad({ rateLimit: { limit: 10_001, period: '1s' } }, 'rateLimit.limit');

        const flow = {
          filter: 'true',
          concurrency: { limit: 3, key: 'ctx.trigger.user' },
          rateLimit: { limit: 5, period: '60s', key: null },
        };
        const target = await automation(flow);
        const shown = await api().get(`/api/v1/automations/${target.id}`);
        expect(shown.body.automation).toMatchObject(flow);
        const update = await api().post(`/api/v1/automations/${target.id}`, {
          automation: { concurrency: null },
          updateMask: 'concurrency',
        });
        expect(update.body.automation).toMatchObject({ filter: 'true', concurrency: null, rateLimit: flow.rateLimit });
      });

      it('the dry run shows the filter verdict and the key values for the sample payload', async () => {
        const target = await automation({
          filter: "ctx.trigger.type == 'a'",
          concurrency: { limit: 1, key: 'ctx.trigger.user' },
          rateLimit: { limit: 5, period: '60s', key: 'ctx.trigger.tenant' },
        });
        const run = await api().post(`/api/v1/automations/${target.id}/test`, {
          payload: { type: 'b', user: 'u7', tenant: 42 },
        });
        expect(run.status).toBe(200);
        expect(run.body.flowControl).toEqual({
          filter: { matches: false, error: null },
          concurrency: { key: 'u7', error: null },
          rateLimit: { key: '42', error: null },
        });
        const broken = await api().post(`/api/v1/automations/${target.id}/test`, { payload: {} });
        expect(broken.body.flowControl.filter.matches).toBeNull();
        expect(broken.body.flowControl.concurrency.error).toEqual(expect.any(String));
      });
    });
  });
}
