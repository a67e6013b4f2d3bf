/**
 * Runs across automations (GET /api/v1/automation_executions: the console's runs list and
 * approvals inbox) and the lanes of an automation (GET /api/v1/automations/{id}/lanes), on both
 * stores, with the real dev server, HTTP and worker: each item names its automation (the store's
 * current name), every filter (automationId, status incl. QUEUED, waitingForApproval, startedAfter,
 * startedBefore), a queued run's key, the lanes' counts, pagination across pages, roles and 400s.
 * Visibility is shared by every test file and eventually consistent: each query is narrowed to this
 * file's automations and polled until it shows what the test waits for.
 */
import request from 'supertest';
import { DATABASES, describeOn } from '../helpers/databases';
import { deliver, hmacEvent, listenerPath, startStack, type Stack } from '../helpers/stack';
import { poll } from '../helpers/wait';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const TRIGGER = { incomingWebhook: { authMethod: 'HMAC' } };
const HOLD = [
  { id: 'hold', waitForApproval: {} },
  { id: 'done', setVariables: { user: 'ctx.trigger.user' } },
];
const QUICK = [{ id: 'v', setVariables: { user: 'ctx.trigger.user' } }];
const RUNS = '/api/v1/automation_executions';

for (const target of DATABASES) {
  describeOn(target)(`runs across automations and lanes (${target.label})`, () => {
    let stack: Stack;
    const opened: string[] = [];

    beforeAll(async () => {
      stack = await startStack({ target });
    });
    afterAll(async () => {
      // Leave no run of this file waiting in the shared dev server.
      for (const id of opened)
        await stack.client.workflow
          .getHandle(id)
          .terminate('test over')
          .catch(() => undefined);
      await stack?.close();
    });

    const get = (path: string, token = stack.adminToken) =>
      request(stack.service.server).get(path).set('Authorization', `Bearer ${token}`);
    const post = (path: string, body: unknown = {}) =>
      request(stack.service.server)
        .post(path)
        .set('Authorization', `Bearer ${stack.adminToken}`)
        .send(body as object);
    const runPath = (id: string) => `${RUNS}/${encodeURIComponent(id)}`;

    async function automation(
      displayName: string,
      steps: unknown[],
      fields: Record<string, unknown> = {},
    ): Promise<{ id: string; secret: string; path: string }> {
      const created = await stack.createAutomation({ displayName, trigger: TRIGGER, steps, ...fields });
      return { id: created.automation.id, secret: created.signingSecret!, path: listenerPath(created.automation) };
    }

    async function accepted(to: { secret: string; path: string }, payload: unknown): Promise<string> {
      const res = await deliver(stack, to.path, hmacEvent(to.secret, payload));
      expect(res.status).toBe(200);
      opened.push(res.body.executionId);
      return res.body.executionId as string;
    }

    /** The runs a query lists (one page of 100), by id. */
    async function listed(query: string): Promise<Map<string, Json>> {
      const res = await get(`${RUNS}?pageSize=100&${query}`);
      expect(res.status).toBe(200);
      return new Map(res.body.list.map((item: Json) => [item.execution.id, item.execution]));
    }

    const untilListed = (query: string, done: (runs: Map<string, Json>) => boolean) =>
      poll(() => listed(query), done, { what: `${RUNS}?${query}: ${done.toString()}` });

    it('lists the runs of every automation, each naming its automation by the name the store has now; filters by automation, status and start time', async () => {
      const before = new Date(Date.now() - 1000).toISOString();
      const quick = await automation('listing quick', QUICK);
      const held = await automation('listing held', HOLD);
      const done = await accepted(quick, { user: 'q1' });
      const waiting = await accepted(held, { user: 'h1' });
      // Renamed after its run started: the list names it as it is called now.
      expect(
        (
          await post(`/api/v1/automations/${quick.id}`, {
            automation: { displayName: 'listing renamed' },
            updateMask: 'displayName',
          })
        ).status,
      ).toBe(200);

      const both = await untilListed(
        `startedAfter=${encodeURIComponent(before)}&status=COMPLETED&status=RUNNING`,
        (m) => m.get(done)?.status === 'COMPLETED' && m.get(waiting)?.status === 'RUNNING',
      );
      expect(both.get(done)).toMatchObject({
        id: done,
        automationId: quick.id,
        automationName: 'listing renamed',
        status: 'COMPLETED',
        version: 1,
      });
      expect(both.get(waiting)).toMatchObject({
        id: waiting,
        automationId: held.id,
        automationName: 'listing held',
        status: 'RUNNING',
        closedAt: null,
      });

      // automationId: only that automation's runs.
      const ofQuick = await listed(`automationId=${quick.id}`);
      expect([...ofQuick.keys()]).toEqual([done]);
      // status: one or several; a status no run of it has lists nothing.
      expect([...(await listed(`automationId=${held.id}&status=RUNNING`)).keys()]).toEqual([waiting]);
      expect([...(await listed(`automationId=${held.id}&status=COMPLETED&status=FAILED`)).keys()]).toEqual([]);
      expect([...(await listed(`automationId=${quick.id}&status=FAILED&status=COMPLETED`)).keys()]).toEqual([done]);
      // startedAfter / startedBefore: a window after the runs lists neither, one around them both.
      const later = new Date(Date.now() + 60_000).toISOString();
      expect((await listed(`automationId=${quick.id}&startedAfter=${encodeURIComponent(later)}`)).size).toBe(0);
      expect((await listed(`automationId=${quick.id}&startedBefore=${encodeURIComponent(before)}`)).size).toBe(0);
      expect([
        ...(
          await listed(
            `automationId=${quick.id}&startedAfter=${encodeURIComponent(before)}&startedBefore=${encodeURIComponent(later)}`,
          )
        ).keys(),
      ]).toEqual([done]);
    });

    it('eventId finds the run of one event; q a prefix of its run id or event id, in any letter case', async () => {
      const flow = await automation('listing search', QUICK);
      const first = await accepted(flow, { user: 's1' });
      const second = await accepted(flow, { user: 's2' });
      await untilListed(`automationId=${flow.id}`, (m) => m.size === 2);
      const eventOf = (id: string) => id.split(':').pop()!;
      const only = (query: string) => listed(`automationId=${flow.id}&${query}`).then((m) => [...m.keys()].sort());
      expect(await only(`eventId=${encodeURIComponent(eventOf(first))}`)).toEqual([first]);
      expect(await only(`q=${encodeURIComponent(eventOf(second).slice(0, 12).toUpperCase())}`)).toEqual([second]);
      // A run id's prefix: the listener's part names both runs of this automation.
      const listenerPart = first.slice(0, first.lastIndexOf(':') + 1);
      expect(await only(`q=${encodeURIComponent(listenerPart)}`)).toEqual([first, second].sort());
      expect(await only('q=no-such-prefix')).toEqual([]);
      const tooLong = await get(`${RUNS}?q=${'x'.repeat(201)}`);
      expect([tooLong.status, tooLong.body.details[0].fieldViolations[0].field]).toEqual([400, 'q']);
    });

    it('waitingForApproval=true is the approvals inbox: running runs with a step waiting, naming the step; an approved run leaves it', async () => {
      const held = await automation('inbox', HOLD);
      const quick = await automation('inbox quick', QUICK);
      const first = await accepted(held, { user: 'a' });
      const second = await accepted(held, { user: 'b' });
      const notWaiting = await accepted(quick, { user: 'c' });
      const inbox = await untilListed(`waitingForApproval=true&automationId=${held.id}`, (m) => m.size === 2);
      expect(inbox.get(first)).toMatchObject({
        status: 'RUNNING',
        waitingForApproval: { stepId: 'hold' },
        automationName: 'inbox',
      });
      expect(inbox.get(second)?.waitingForApproval).toEqual({ stepId: 'hold' });
      expect((await listed(`waitingForApproval=true&automationId=${quick.id}`)).has(notWaiting)).toBe(false);

      const approved = await post(`${runPath(first)}/steps/hold/approve`, { comment: 'ok' });
      expect(approved.status).toBe(200);
      const after = await untilListed(`waitingForApproval=true&automationId=${held.id}`, (m) => !m.has(first));
      expect([...after.keys()]).toEqual([second]);
      const closed = await untilListed(`automationId=${held.id}&status=COMPLETED`, (m) => m.has(first));
      expect(closed.get(first).waitingForApproval).toBeUndefined();
    });

    it('QUEUED runs show their key; the lanes list the keys with queued runs, with running and queued counts and the oldest queued run', async () => {
      const flow = await automation('lanes', HOLD, { concurrency: { limit: 1, key: 'ctx.trigger.user' } });
      const holder = await accepted(flow, { user: 'u1' });
      const queuedFirst = await accepted(flow, { user: 'u1' });
      const queuedSecond = await accepted(flow, { user: 'u1' });
      const other = await accepted(flow, { user: 'u2' });
      // Every run of a limited automation is QUEUED until its lane's grant arrives, the holder and
      // `other` too for a moment: the list is awaited until it shows the two that stay queued (a
      // wait for any two once caught the holder's short-lived QUEUED record, CI on 42e81b5).
      const queuedIds = [queuedFirst, queuedSecond].sort();
      const queued = await untilListed(
        `automationId=${flow.id}&status=QUEUED`,
        (m) => m.size === 2 && m.has(queuedFirst) && m.has(queuedSecond),
      );
      expect([...queued.keys()].sort()).toEqual(queuedIds);
      for (const run of queued.values()) expect(run).toMatchObject({ status: 'QUEUED', queue: { key: 'u1' } });
      const running = await untilListed(
        `automationId=${flow.id}&status=RUNNING`,
        (m) => m.size === 2 && m.has(holder) && m.has(other),
      );
      expect([...running.keys()].sort()).toEqual([holder, other].sort());
      for (const run of running.values()) expect(run.queue).toBeUndefined();

      const lanes = await poll(
        () => get(`/api/v1/automations/${flow.id}/lanes`),
        (r) =>
          r.status === 200 &&
          r.body.list.length === 1 &&
          r.body.list[0].lane.running === 1 &&
          r.body.list[0].lane.queued === 2,
      );
      expect(lanes.body).toEqual({
        list: [{ lane: { key: 'u1', running: 1, queued: 2, oldestQueuedAt: queued.get(queuedFirst).startedAt } }],
        nextPageToken: '',
      });

      // The holder approved: the first queued run holds, one is left queued.
      expect((await post(`${runPath(holder)}/steps/hold/approve`)).status).toBe(200);
      const moved = await poll(
        () => get(`/api/v1/automations/${flow.id}/lanes`),
        (r) =>
          r.status === 200 &&
          r.body.list.length === 1 &&
          r.body.list[0].lane.queued === 1 &&
          r.body.list[0].lane.running === 1,
      );
      expect(moved.body.list[0].lane).toEqual({
        key: 'u1',
        running: 1,
        queued: 1,
        oldestQueuedAt: queued.get(queuedSecond).startedAt,
      });
    });

    it('pages the lanes by key, 10 at a time, with a signed token', async () => {
      const flow = await automation('many lanes', HOLD, { concurrency: { limit: 1, key: 'ctx.trigger.user' } });
      const keys = Array.from({ length: 11 }, (_, i) => `k${String(i).padStart(2, '0')}`);
      for (const key of keys) {
        await accepted(flow, { user: key });
        await accepted(flow, { user: key });
      }
      const all = await poll(
        () => get(`/api/v1/automations/${flow.id}/lanes?pageSize=100`),
        (r) =>
          r.status === 200 &&
          r.body.list.length === 11 &&
          r.body.list.every((item: Json) => item.lane.queued === 1 && item.lane.running === 1),
      );
      expect(all.body.list.map((item: Json) => item.lane.key)).toEqual(keys);
      // Visibility is eventually consistent: a run's record can be rewritten between two listings
      // (once a lane failed to show in the very next one), so the first page is awaited as well.
      const first = await poll(
        () => get(`/api/v1/automations/${flow.id}/lanes?pageSize=10`),
        (r) => r.status === 200 && r.body.list.length === 10 && r.body.nextPageToken !== '',
      );
      expect(first.body.list.map((item: Json) => item.lane.key)).toEqual(keys.slice(0, 10));
      const second = await get(
        `/api/v1/automations/${flow.id}/lanes?pageSize=10&pageToken=${encodeURIComponent(first.body.nextPageToken)}`,
      );
      expect(second.body).toEqual({ list: [{ lane: expect.objectContaining({ key: 'k10' }) }], nextPageToken: '' });
      // The token belongs to this automation's lanes.
      const elsewhere = await get(
        `/api/v1/automations/${(await automation('no lanes', QUICK)).id}/lanes?pageToken=${encodeURIComponent(first.body.nextPageToken)}`,
      );
      expect(elsewhere.status).toBe(400);
      expect(elsewhere.body.code).toBe(3);
    }, 240_000);

    it('pages through 12 runs 10 at a time; the token is bound to its filter', async () => {
      const quick = await automation('paged', QUICK);
      const started = new Set<string>();
      for (let i = 0; i < 12; i += 1) started.add(await accepted(quick, { user: `p${i}` }));
      const query = `automationId=${quick.id}&status=COMPLETED`;
      await untilListed(query, (m) => m.size === 12);
      const first = await get(`${RUNS}?${query}&page_size=10`);
      expect(first.status).toBe(200);
      expect(first.body.list).toHaveLength(10);
      expect(first.body.nextPageToken).not.toBe('');
      const second = await get(
        `${RUNS}?${query}&page_size=10&page_token=${encodeURIComponent(first.body.nextPageToken)}`,
      );
      expect(second.body.list).toHaveLength(2);
      expect(second.body.nextPageToken).toBe('');
      const walked = [...first.body.list, ...second.body.list].map((item: Json) => item.execution.id);
      expect(new Set(walked)).toEqual(started);
      // Closed runs newest first: the first page's closed no earlier than the second page's.
      const closedAt = (items: Json[]) => items.map((item) => Date.parse(item.execution.closedAt));
      expect(Math.min(...closedAt(first.body.list))).toBeGreaterThanOrEqual(Math.max(...closedAt(second.body.list)));

      const otherFilter = await get(
        `${RUNS}?automationId=${quick.id}&status=FAILED&page_token=${encodeURIComponent(first.body.nextPageToken)}`,
      );
      expect(otherFilter.status).toBe(400);
      expect(JSON.stringify(otherFilter.body.details)).toContain('page_token');
    });

    it('admin reads both; read_only is 403, no token 401; an unknown automation has no lanes (404)', async () => {
      const quick = await automation('roles', QUICK);
      const admin = await stack.service.tokenFor('admin');
      const readOnly = await stack.service.tokenFor('read_only');
      expect((await get(`${RUNS}?automationId=${quick.id}`, admin)).status).toBe(200);
      expect((await get(`/api/v1/automations/${quick.id}/lanes`, admin)).body).toEqual({ list: [], nextPageToken: '' });
      for (const path of [RUNS, `/api/v1/automations/${quick.id}/lanes`]) {
        const denied = await get(path, readOnly);
        expect([denied.status, denied.body.code]).toEqual([403, 7]);
        expect((await request(stack.service.server).get(path)).status).toBe(401);
      }
      const missing = await get('/api/v1/automations/no-such-automation/lanes');
      expect([missing.status, missing.body.code]).toEqual([404, 5]);
    });

    it.each([
      ['status=BOGUS', 'status'],
      ['status=RUNNING&status=done', 'status'],
      ['waitingForApproval=yes', 'waitingForApproval'],
      ['waitingForApproval=false', 'waitingForApproval'],
      ['startedAfter=yesterday', 'startedAfter'],
      ['startedBefore=2026-13-01T00:00:00Z', 'startedBefore'],
      ['startedAfter=2026-01-02T00:00:00Z&startedBefore=2026-01-01T00:00:00Z', 'startedBefore'],
      ['automationId=a&automationId=b', 'automationId'],
      [`automationId=${'x'.repeat(201)}`, 'automationId'],
      ['page_token=not-a-token', 'page_token'],
    ])('%s is 400 naming %s', async (query, field) => {
      const res = await get(`${RUNS}?${query}`);
      expect(res.status).toBe(400);
      expect(res.body.code).toBe(3);
      expect(res.body.message).toContain(field);
      expect(res.body.details[0].fieldViolations.map((v: Json) => v.field)).toEqual([field]);
    });
  });
}
