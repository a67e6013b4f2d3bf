/**
 * How long a filtered event's id answers 409: the retention, 7 days (docs/api.md#check-order: "event id already
 * received by this listener within retention (7 days), whatever its first delivery became"). The
 * record of a filtered event is aged in the store (filtered_events.received_at) rather than waited
 * for: 2 days and 6 days 23 hours old it still refuses the repeat, 7 days 1 hour old it does not
 * (the repeat is taken as a new event), while the filter is still there (the record is taken over)
 * and after it is gone (the lookup of filtered ids); the prune drops only records past the 7 days.
 * Real app and store, both stores; no workflow engine (a run start answers 503 here).
 */
import request from 'supertest';
import { DATABASES, describeOn } from '../helpers/databases';
import { hmacEvent } from '../helpers/stack';
import { startTestService, type TestService } from '../helpers/test-service';
import { NO_TEMPORAL } from '../helpers/engine';
import { pruneFlowControl } from '../../src/store/flow-control';
import { until } from '../helpers/wait';

for (const target of DATABASES) {
  describeOn(target)(`the 409 window of filtered events (${target.label})`, () => {
    let service: TestService;
    let token: string;

    beforeAll(async () => {
      // No Temporal: the filtered path asks the engine only whether the event started a run (none did).
      service = await startTestService({ target, engine: { ...NO_TEMPORAL, runOf: async () => undefined } });
      token = await service.tokenFor('super_admin');
    });
    afterAll(async () => service?.close());

    const api = () => ({
      post: (path: string, body?: object) =>
        request(service.server).post(path).set('Authorization', `Bearer ${token}`).send(body),
    });

    /** A published HMAC automation with this filter: its listener's path, id and signing secret. */
    async function automation(
      filter: string,
    ): Promise<{ id: string; path: string; listenerId: string; secret: string }> {
      const created = await api().post('/api/v1/automations', {
        displayName: 'filtered window',
        trigger: { incomingWebhook: { authMethod: 'HMAC' } },
        steps: [{ id: 'v', setVariables: { t: 'ctx.trigger.type' } }],
        filter,
      });
      expect(created.status).toBe(200);
      const published = await api().post(`/api/v1/automations/${created.body.automation.id}/publish`);
      expect(published.status).toBe(200);
      const url = new URL(published.body.automation.trigger.incomingWebhook.url);
      return {
        id: created.body.automation.id,
        path: url.pathname,
        listenerId: published.body.automation.trigger.incomingWebhook.listenerId,
        secret: created.body.signingSecret,
      };
    }

    const deliver = (target: { path: string; secret: string }, eventId: string) => {
      const event = hmacEvent(target.secret, { type: 'user.deleted' }, { eventId });
      return request(service.server).post(target.path).set(event.headers).send(event.body);
    };

    /** Moves the filtered record of `eventId` back to `age` (a PostgreSQL interval) ago. */
    async function age(listenerId: string, eventId: string, interval: string): Promise<void> {
      const rows = await service.deps.db.query(
        `UPDATE filtered_events SET received_at = now() - $3::interval
         WHERE listener_id = $1 AND event_id = $2 RETURNING 1`,
        [listenerId, eventId, interval],
      );
      expect([eventId, rows.length]).toEqual([eventId, 1]);
    }

    it('refuses the repeat of a filtered id for 7 days, and takes it as new after them (the filter still there)', async () => {
      const target = await automation('false');
      const eventId = crypto.randomUUID();
      const first = await deliver(target, eventId);
      expect([first.status, first.body]).toEqual([200, { eventId, executionId: null, filtered: true }]);

      for (const interval of ['2 days', '6 days 23 hours']) {
        await age(target.listenerId, eventId, interval);
        const repeat = await deliver(target, eventId);
        expect([interval, repeat.status, repeat.body.code]).toEqual([interval, 409, 6]);
      }
      await age(target.listenerId, eventId, '7 days 1 hour');
      const later = await deliver(target, eventId);
      expect([later.status, later.body]).toEqual([200, { eventId, executionId: null, filtered: true }]);
      // Taken over as a new record: its repeat is refused again.
      expect((await deliver(target, eventId)).status).toBe(409);
    });

    it('refuses it for 7 days after the filter is gone too, and lets it start a run after them', async () => {
      const target = await automation('false');
      const eventId = crypto.randomUUID();
      expect((await deliver(target, eventId)).body.filtered).toBe(true);
      // A new version without a filter: the lookup of filtered ids decides the repeat now.
      const updated = await api().post(`/api/v1/automations/${target.id}`, {
        automation: { filter: null },
        updateMask: 'filter',
      });
      expect(updated.status).toBe(200);
      expect((await api().post(`/api/v1/automations/${target.id}/publish`)).status).toBe(200);
      // Once the receiver runs the new version, a fresh event is no longer filtered (it goes on to
      // start a run: 503 without an engine).
      await until(
        async () => (await deliver(target, crypto.randomUUID())).status === 503,
        'the version without a filter to be live',
      );

      await age(target.listenerId, eventId, '2 days');
      const repeat = await deliver(target, eventId);
      expect([repeat.status, repeat.body.code]).toEqual([409, 6]);
      await age(target.listenerId, eventId, '7 days 1 hour');
      // Not a repeat any more: the delivery goes on to start its run (no engine here: 503).
      const later = await deliver(target, eventId);
      expect([later.status, later.body.code]).toEqual([503, 14]);
    });

    it('the prune drops filtered records past the 7 days only', async () => {
      const target = await automation('false');
      const [recent, old] = [crypto.randomUUID(), crypto.randomUUID()];
      for (const eventId of [recent, old]) expect((await deliver(target, eventId)).body.filtered).toBe(true);
      await age(target.listenerId, recent, '6 days 23 hours');
      await age(target.listenerId, old, '7 days 1 hour');
      await pruneFlowControl(service.deps.db);
      const kept = await service.deps.db.query<{ event_id: string }>(
        'SELECT event_id FROM filtered_events WHERE listener_id = $1',
        [target.listenerId],
      );
      expect(kept.map((row) => row.event_id)).toEqual([recent]);
    });
  });
}
