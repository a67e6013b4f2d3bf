/**
 * Event triggers through the outbox: a user made through the API starts exactly one run of each
 * event automation published and listening to `user.created` when the change committed, with
 * `ctx.trigger` the event and the run's id made from the automation's listener and the event. A
 * crash between the commit and the dispatch (no dispatcher running), and one between the start
 * and marking the event dispatched, still end with one run. The version's filter, and the loop
 * rules (`own_event`, `event_depth`), start none. Real Temporal, real worker, on both stores.
 */
import { DATABASES, describeOn } from '../helpers/databases';
import { startStack, type Stack } from '../helpers/stack';
import { callerFor, type Caller } from '../helpers/governance';
import { poll, until } from '../helpers/wait';
import { EventDispatcher, type TargetOutcome } from '../../src/delivery/event-dispatcher';
import { recordDirectoryEvent } from '../../src/domain/directory-events';
import { getDirectoryEvent, type DirectoryEventRow } from '../../src/store/directory-events';
import { runWorkflowId } from '../../src/contract/run';
import { createLogger } from '../../src/logger';

const STEPS = [{ id: 'seen', setVariables: { who: 'ctx.trigger.user.displayName' } }];

for (const target of DATABASES) {
  describeOn(target)(`event triggers (${target.label})`, () => {
    let stack: Stack;
    let admin: Caller;
    const outcomes: Array<{ event: DirectoryEventRow; outcome: TargetOutcome }> = [];

    beforeAll(async () => {
      stack = await startStack({
        target,
        eventDispatch: { pollMs: 60_000, onOutcome: (event, outcome) => outcomes.push({ event, outcome }) },
      });
      admin = callerFor(stack.service, stack.adminToken);
    });
    afterAll(async () => stack?.close());

    const db = () => stack.service.deps.db;
    const engine = () => stack.service.deps.engine;
    const runsOf = async (automationId: string) => (await engine().list(automationId, 100, undefined)).runs;
    const makeUser = async (displayName: string) => {
      const made = await admin.post('/api/v1/users', {
        displayName,
        email: `${displayName.toLowerCase()}@acme.example`,
        type: 'USER_TYPE_HUMAN',
      });
      expect(made.status).toBe(200);
      return made.body.user as { id: string; displayName: string };
    };
    const outcomesOf = (automationId: string) =>
      outcomes.filter(({ outcome }) => outcome.automationId === automationId).map(({ outcome }) => outcome.reason);

    it('a user made through the API starts one run per listening automation, with the event as ctx.trigger', async () => {
      const listening = await stack.createAutomation({
        displayName: 'Baseline access',
        trigger: { event: { types: ['user.created'] } },
        steps: STEPS,
      });
      const other = await stack.createAutomation({
        displayName: 'On updates only',
        trigger: { event: { types: ['user.updated'] } },
        steps: STEPS,
      });
      const draft = await stack.createAutomation(
        { displayName: 'Never published', trigger: { event: { types: ['user.created'] } }, steps: STEPS },
        false,
      );
      const user = await makeUser('Joiner');
      const runs = await poll(
        () => runsOf(listening.automation.id),
        (list) => list.length > 0 && list.every((run) => run.status === 'COMPLETED'),
      );
      expect(runs).toHaveLength(1);
      const started = outcomes.find(({ outcome }) => outcome.automationId === listening.automation.id)!;
      const listenerId = (
        await stack.service.deps.db.query<{ listener_id: string }>(
          'SELECT listener_id FROM automations WHERE id = $1',
          [listening.automation.id],
        )
      )[0]!.listener_id;
      expect(runs[0]!.id).toBe(runWorkflowId(listenerId, started.event.id));
      const input = (await engine().input(runs[0]!.id))!;
      expect(input.trigger).toEqual({
        type: 'user.created',
        eventId: started.event.id,
        occurredAt: started.event.occurredAt,
        actor: started.event.actor,
        depth: 1,
        user: expect.objectContaining({ id: user.id, displayName: 'Joiner' }),
      });
      const record = (await engine().get(runs[0]!.id))!;
      expect(record.steps.map((step) => [step.id, step.status, step.output])).toEqual([
        ['seen', 'DONE', { who: 'Joiner' }],
      ]);
      expect(await runsOf(other.automation.id)).toEqual([]);
      expect(await runsOf(draft.automation.id)).toEqual([]);
      expect((await getDirectoryEvent(db(), started.event.id))!.dispatchedAt).not.toBeNull();
      // The automation's delivery log lists the event as started, without an HTTP status or address.
      const log = await admin.get(`/api/v1/automations/${listening.automation.id}/deliveries`);
      expect(log.body.list).toEqual([
        {
          delivery: expect.objectContaining({
            source: 'event',
            reason: 'started',
            eventId: started.event.id,
            executionId: runs[0]!.id,
            status: null,
            sourceAddress: null,
          }),
        },
      ]);
    });

    it('a crash between commit and dispatch, and between start and mark, still ends with one run', async () => {
      const automation = await stack.createAutomation({
        displayName: 'Crash-safe',
        trigger: { event: { types: ['user.created'] } },
        steps: STEPS,
      });
      const id = automation.automation.id;
      // The committing process died before dispatching: the change and its event are in the store, undispatched.
      const event = await db().transaction((tx) =>
        recordDirectoryEvent(tx, {
          type: 'user.created',
          actor: 'client:crashed',
          user: { id: 'u-crash', displayName: 'Crash' },
        }),
      );
      expect(event.targets.map((t) => t.automationId)).toContain(id);
      // A process that starts later (here: a second dispatcher on the same store) dispatches it.
      const logger = createLogger('silent');
      const seen: TargetOutcome[] = [];
      const later = new EventDispatcher(
        { db: db(), engine: engine(), logger, onOutcome: (e, o) => e.id === event.id && seen.push(o) },
        { pollMs: 60_000 },
      );
      await later.start();
      await until(async () => (await getDirectoryEvent(db(), event.id))?.dispatchedAt !== null, 'the event dispatched');
      await later.idle();
      // A crash after the start, before the mark: the event is dispatched again, the engine refuses the second start.
      await db().query('UPDATE directory_events SET dispatched_at = NULL WHERE id = $1', [event.id]);
      later.wake();
      await until(async () => (await getDirectoryEvent(db(), event.id))?.dispatchedAt !== null, 'the event dispatched');
      await later.close();
      await stack.service.dispatcher!.idle();
      const runs = await runsOf(id);
      expect(runs).toHaveLength(1);
      expect(seen.filter((o) => o.automationId === id).map((o) => o.reason)).toEqual(
        expect.arrayContaining(['exists']),
      );
      expect(
        [...outcomesOf(id), ...seen.filter((o) => o.automationId === id).map((o) => o.reason)].filter(
          (reason) => reason === 'started',
        ),
      ).toHaveLength(1);
    });

    it("the version's filter false starts no run (filtered)", async () => {
      const automation = await stack.createAutomation({
        displayName: 'Only Ada',
        trigger: { event: { types: ['user.created'] } },
        filter: "ctx.trigger.user.displayName == 'Ada'",
        steps: STEPS,
      });
      const id = automation.automation.id;
      await makeUser('Bob');
      await makeUser('Ada');
      await until(() => outcomesOf(id).length === 2, 'both events judged');
      expect(outcomesOf(id)).toEqual(['filtered', 'started']);
      const log = await admin.get(`/api/v1/automations/${id}/deliveries?reason=filtered`);
      expect(log.body.list).toEqual([{ delivery: expect.objectContaining({ source: 'event', executionId: null }) }]);
      const runs = await poll(
        () => runsOf(id),
        (list) => list.length === 1,
      );
      expect(runs).toHaveLength(1);
    });

    it('an event caused by its own run (own_event) or too deep (event_depth) starts no run', async () => {
      const automation = await stack.createAutomation({
        displayName: 'Loop guard',
        trigger: { event: { types: ['user.updated'] } },
        steps: STEPS,
      });
      const id = automation.automation.id;
      const record = (change: Parameters<typeof recordDirectoryEvent>[1]) =>
        db().transaction((tx) => recordDirectoryEvent(tx, change));
      await record({ type: 'user.updated', actor: `automation:${id}:run-1`, user: { id: 'u1' } });
      await record({ type: 'user.updated', actor: 'client:x', depth: 9, user: { id: 'u2' } });
      await record({
        type: 'user.updated',
        actor: 'automation:other:run-2',
        depth: 8,
        user: { id: 'u3', displayName: 'Three' },
      });
      await until(() => outcomesOf(id).length === 3, 'the three events judged');
      expect(outcomesOf(id)).toEqual(['own_event', 'event_depth', 'started']);
      // Newest first in the delivery log, each reason as judged.
      const log = await admin.get(`/api/v1/automations/${id}/deliveries`);
      expect(log.body.list.map((item: { delivery: { reason: string; source: string } }) => item.delivery)).toEqual([
        expect.objectContaining({ source: 'event', reason: 'started' }),
        expect.objectContaining({ source: 'event', reason: 'event_depth', executionId: null }),
        expect.objectContaining({ source: 'event', reason: 'own_event', executionId: null }),
      ]);
      expect(
        await poll(
          () => runsOf(id),
          (list) => list.length === 1,
        ),
      ).toHaveLength(1);
    });

    it('a user update sends one user.updated with the user as it is now; one that changes nothing sends none', async () => {
      const automation = await stack.createAutomation({
        displayName: 'On updates',
        trigger: { event: { types: ['user.updated'] } },
        steps: STEPS,
      });
      const id = automation.automation.id;
      const user = await makeUser('Mover');
      const updated = await admin.post(`/api/v1/users/${user.id}`, {
        user: { displayName: 'Mover Two', status: 'USER_STATUS_DISABLED' },
        updateMask: 'displayName,status',
      });
      expect(updated.status).toBe(200);
      expect(updated.body.user).toEqual({ ...user, displayName: 'Mover Two', status: 'USER_STATUS_DISABLED' });
      const same = await admin.post(`/api/v1/users/${user.id}`, { user: { displayName: 'Mover Two' } });
      expect(same.status).toBe(200);
      const refused = await admin.post(`/api/v1/users/${user.id}`, { user: { status: 'USER_STATUS_GONE' } });
      expect(refused.status).toBe(400);
      expect(JSON.stringify(refused.body.details)).toContain('user.status');
      const masked = await admin.post(`/api/v1/users/${user.id}`, { user: {}, updateMask: 'type' });
      expect(masked.status).toBe(400);
      expect(JSON.stringify(masked.body.details)).toContain('updateMask');
      expect((await admin.post('/api/v1/users/nobody', { user: { displayName: 'X' } })).status).toBe(404);
      const runs = await poll(
        () => runsOf(id),
        (list) => list.length > 0 && list.every((run) => run.status === 'COMPLETED'),
      );
      expect(runs).toHaveLength(1);
      const input = (await engine().input(runs[0]!.id))!;
      expect(input.trigger).toMatchObject({ type: 'user.updated', depth: 1, user: updated.body.user });
      const events = await db().query<{ n: string }>(
        `SELECT count(*) AS n FROM directory_events WHERE type = 'user.updated' AND payload->'user'->>'id' = $1`,
        [user.id],
      );
      expect(Number(events[0]!.n)).toBe(1);
    });
  });
}
