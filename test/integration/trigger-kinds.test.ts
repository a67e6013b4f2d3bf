/**
 * The trigger kinds (src/triggers): an automation's trigger is exactly one of incomingWebhook,
 * schedule and event, checked by its kind when saved. A schedule or event automation has no
 * listener and no signing secret (rotate-secret 400 naming `trigger`); bad input is a 400 naming
 * the field, with nothing written. On both stores, without Temporal (nothing here publishes a schedule).
 */
import { DATABASES, describeOn } from '../helpers/databases';
import { startTestService, type TestService } from '../helpers/test-service';
import { callerFor, type Caller } from '../helpers/governance';
import { getListener } from '../../src/store/listeners';
import { getAutomation } from '../../src/store/automations';

const STEPS = [{ id: 'note', log: { message: "'hello'" } }];

/** The fields a 400 names. */
function fieldsOf(body: { details?: Array<{ fieldViolations?: Array<{ field: string }> }> }): string[] {
  return (body.details ?? []).flatMap((detail) => (detail.fieldViolations ?? []).map((violation) => violation.field));
}

for (const target of DATABASES) {
  describeOn(target)(`trigger kinds (${target.label})`, () => {
    let service: TestService;
    let admin: Caller;

    beforeAll(async () => {
      service = await startTestService({ target });
      admin = callerFor(service, await service.tokenFor('super_admin'));
    });
    afterAll(async () => service?.close());

    const count = async () => (await admin.get('/api/v1/automations?pageSize=100')).body.list.length as number;

    it('a schedule automation is stored with its defaults and shows no listener, URL or secret', async () => {
      const made = await admin.post('/api/v1/automations', {
        displayName: 'Nightly check',
        trigger: { schedule: { cron: '0 9 * * MON-FRI', timezone: 'Europe/Berlin' } },
        steps: STEPS,
      });
      expect(made.status).toBe(200);
      expect(made.body.signingSecret).toBeUndefined();
      expect(made.body.automation.trigger).toEqual({
        schedule: {
          cron: '0 9 * * MON-FRI',
          timezone: 'Europe/Berlin',
          overlap: 'SKIP',
          catchupWindow: '300s',
          enabled: true,
        },
      });
      const interval = await admin.post('/api/v1/automations', {
        displayName: 'Every hour at :05',
        trigger: { schedule: { interval: '3600s', offset: '300s', overlap: 'BUFFER_ALL', catchupWindow: '60s' } },
        steps: STEPS,
      });
      expect(interval.status).toBe(200);
      expect(interval.body.automation.trigger.schedule).toEqual({
        interval: '3600s',
        offset: '300s',
        timezone: 'UTC',
        overlap: 'BUFFER_ALL',
        catchupWindow: '60s',
        enabled: true,
      });
    });

    it('an event automation is stored with its types; its listener id answers no listener', async () => {
      const made = await admin.post('/api/v1/automations', {
        displayName: 'Baseline access',
        trigger: { event: { types: ['user.created', 'user.updated'] } },
        steps: STEPS,
      });
      expect(made.status).toBe(200);
      expect(made.body.signingSecret).toBeUndefined();
      expect(made.body.automation.trigger).toEqual({
        event: { types: ['user.created', 'user.updated'], enabled: true },
      });
      const record = (await getAutomation(service.deps.db, made.body.automation.id))!;
      expect(record.sealedSigningSecret).toBeNull();
      // The store still has the row under its listener id: the intake's cache answers none for it.
      expect((await getListener(service.deps.db, record.listenerId))?.automation.id).toBe(record.id);
      const published = await admin.post(`/api/v1/automations/${made.body.automation.id}/publish`);
      expect(published.status).toBe(200);
      const delivered = await admin.post(`/api/v1/webhooks/incoming/${record.listenerId}`, {});
      expect(delivered.status).toBe(404);
    });

    it.each([
      ['a cron that does not parse', { schedule: { cron: '61 * * * *' } }, 'trigger.schedule.cron'],
      ['a cron with 6 fields', { schedule: { cron: '0 0 9 * * MON' } }, 'trigger.schedule.cron'],
      ['cron and interval both', { schedule: { cron: '@daily', interval: '60s' } }, 'trigger.schedule.cron'],
      ['neither cron nor interval', { schedule: { timezone: 'UTC' } }, 'trigger.schedule.cron'],
      ['an unknown time zone', { schedule: { cron: '@daily', timezone: 'Mars/Olympus' } }, 'trigger.schedule.timezone'],
      ['an interval under 1 s', { schedule: { interval: '0.5s' } }, 'trigger.schedule.interval'],
      ['an offset not under the interval', { schedule: { interval: '60s', offset: '60s' } }, 'trigger.schedule.offset'],
      [
        'a catch-up window under 10 s',
        { schedule: { cron: '@daily', catchupWindow: '5s' } },
        'trigger.schedule.catchupWindow',
      ],
      [
        'a catch-up window over a day',
        { schedule: { cron: '@daily', catchupWindow: '86401s' } },
        'trigger.schedule.catchupWindow',
      ],
      ['an unknown overlap policy', { schedule: { cron: '@daily', overlap: 'QUEUE' } }, 'trigger.schedule.overlap'],
      ['an event type not in the list', { event: { types: ['user.deleted'] } }, 'trigger.event.types[0]'],
      ['a repeated event type', { event: { types: ['user.created', 'user.created'] } }, 'trigger.event.types[1]'],
      ['no event types', { event: { types: [] } }, 'trigger.event.types'],
      ['two kinds at once', { event: { types: ['user.created'] }, schedule: { cron: '@daily' } }, 'trigger'],
      ['no kind', {}, 'trigger'],
    ])('%s is a 400 naming the field, nothing written', async (_name, trigger, field) => {
      const before = await count();
      const refused = await admin.post('/api/v1/automations', { displayName: 'Bad', trigger, steps: STEPS });
      expect(refused.status).toBe(400);
      expect(fieldsOf(refused.body)).toContain(field);
      expect(await count()).toBe(before);
    });

    it.each(['filter', 'concurrency', 'rateLimit'])(
      'a schedule automation with %s is a 400 naming it',
      async (name) => {
        const settings = {
          filter: 'true',
          concurrency: { key: "'k'", limit: 1 },
          rateLimit: { key: "'k'", limit: 1, period: '60s' },
        }[name];
        const before = await count();
        const refused = await admin.post('/api/v1/automations', {
          displayName: 'Bad',
          trigger: { schedule: { cron: '@hourly' } },
          steps: STEPS,
          [name]: settings,
        });
        expect(refused.status).toBe(400);
        expect(fieldsOf(refused.body)).toEqual([name]);
        expect(await count()).toBe(before);
      },
    );

    it('rotate-secret of a schedule or event automation is a 400 naming trigger', async () => {
      for (const trigger of [{ schedule: { interval: '60s' } }, { event: { types: ['user.updated'] } }]) {
        const made = await admin.post('/api/v1/automations', { displayName: 'No secret', trigger, steps: STEPS });
        const rotated = await admin.post(`/api/v1/automations/${made.body.automation.id}/trigger/rotate-secret`, {});
        expect(rotated.status).toBe(400);
        expect(fieldsOf(rotated.body)).toEqual(['trigger']);
      }
    });

    it('a webhook switched to an event trigger loses its secret; switched back it gets a new one', async () => {
      const made = await admin.post('/api/v1/automations', {
        displayName: 'Switch',
        trigger: { incomingWebhook: { authMethod: 'HMAC' } },
        steps: STEPS,
      });
      expect(typeof made.body.signingSecret).toBe('string');
      const id = made.body.automation.id as string;
      const toEvent = await admin.post(`/api/v1/automations/${id}`, {
        automation: { trigger: { event: { types: ['user.created'] } } },
        updateMask: 'trigger',
      });
      expect(toEvent.status).toBe(200);
      expect(toEvent.body.automation.trigger).toEqual({ event: { types: ['user.created'], enabled: true } });
      expect((await getAutomation(service.deps.db, id))!.sealedSigningSecret).toBeNull();
      const back = await admin.post(`/api/v1/automations/${id}`, {
        automation: { trigger: { incomingWebhook: { authMethod: 'HMAC' } } },
        updateMask: 'trigger',
      });
      expect(back.status).toBe(200);
      expect(typeof back.body.signingSecret).toBe('string');
      expect(back.body.signingSecret).not.toBe(made.body.signingSecret);
      expect(back.body.automation.trigger.incomingWebhook.listenerId).toBe(
        made.body.automation.trigger.incomingWebhook.listenerId,
      );
    });

    it('an update adding a rate limit to a schedule automation is a 400 naming it; nothing changes', async () => {
      const made = await admin.post('/api/v1/automations', {
        displayName: 'Hourly',
        trigger: { schedule: { cron: '@hourly' } },
        steps: STEPS,
      });
      const id = made.body.automation.id as string;
      const refused = await admin.post(`/api/v1/automations/${id}`, {
        automation: { rateLimit: { key: "'k'", limit: 1, period: '60s' } },
        updateMask: 'rateLimit',
      });
      expect(refused.status).toBe(400);
      expect(fieldsOf(refused.body)).toEqual(['automation.rateLimit']);
      expect((await getAutomation(service.deps.db, id))!.version).toBe(made.body.automation.version);
    });
  });
}
