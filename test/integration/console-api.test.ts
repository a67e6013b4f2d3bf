/**
 * What the console needs of the API, through real HTTP on both stores: the roles of the contract
 * (admin reads automations, never a secret, but changes none), ETag and If-Match on automations
 * (a stale If-Match is 412 and changes nothing), the audit trail read (super_admin only, filters,
 * pages, never a secret value), and one actor string everywhere, a person's name and email in the
 * details of what they do.
 */
import request from 'supertest';
import { DATABASES, describeOn } from '../helpers/databases';
import { startTestService, type TestService } from '../helpers/test-service';
import { createClient } from '../../src/auth/clients';
import { sessionsOf } from '../../src/http/console-session';

const AUTOMATION = {
  displayName: 'Offboard contractor',
  trigger: { incomingWebhook: { authMethod: 'HMAC' } },
  steps: [{ id: 'note', setVariables: { who: 'ctx.trigger.user' } }],
};

for (const target of DATABASES) {
  describeOn(target)(`console API (${target.label})`, () => {
    let service: TestService;
    let superAdmin: string;
    let admin: string;
    let readOnly: string;

    beforeAll(async () => {
      service = await startTestService({ target });
      superAdmin = await service.tokenFor('super_admin');
      admin = await service.tokenFor('admin');
      readOnly = await service.tokenFor('read_only');
    });
    afterAll(async () => service?.close());

    const as = (token: string) => ({
      get: (path: string) => request(service.server).get(path).set('Authorization', `Bearer ${token}`),
      post: (path: string, body: object = {}) =>
        request(service.server).post(path).set('Authorization', `Bearer ${token}`).send(body),
      delete: (path: string) => request(service.server).delete(path).set('Authorization', `Bearer ${token}`),
    });

    async function newAutomation(): Promise<{ id: string; etag: string }> {
      const res = await as(superAdmin).post('/api/v1/automations', AUTOMATION);
      expect(res.status).toBe(200);
      return { id: res.body.automation.id, etag: String(res.headers.etag) };
    }

    describe('roles', () => {
      it('lets an admin read automations (never a secret) but not change them; read_only neither', async () => {
        const { id } = await newAutomation();
        const one = await as(admin).get(`/api/v1/automations/${id}`);
        expect(one.status).toBe(200);
        expect(one.body.automation.id).toBe(id);
        expect(JSON.stringify(one.body)).not.toMatch(/signingSecret|signing_secret/);
        expect((await as(admin).get('/api/v1/automations')).status).toBe(200);
        expect((await as(admin).get(`/api/v1/automations/${id}/deliveries`)).status).toBe(200);
        expect((await as(admin).post(`/api/v1/automations/${id}/publish`)).status).toBe(403);
        expect((await as(admin).post(`/api/v1/automations/${id}/trigger/rotate-secret`)).status).toBe(403);
        expect((await as(admin).delete(`/api/v1/automations/${id}`)).status).toBe(403);
        expect((await as(readOnly).get(`/api/v1/automations/${id}`)).status).toBe(403);
      });
    });

    describe('ETag and If-Match', () => {
      it('names the revision in a strong ETag that every write advances and a read does not', async () => {
        const { id, etag: created } = await newAutomation();
        expect(created).toMatch(/^"r\d+"$/);
        const read = await as(admin).get(`/api/v1/automations/${id}`);
        expect(read.headers.etag).toBe(created);
        expect((await as(admin).get(`/api/v1/automations/${id}`)).headers.etag).toBe(created);
        const seen = [created];
        const writes = [
          () =>
            as(superAdmin).post(`/api/v1/automations/${id}`, {
              automation: { displayName: 'Renamed' },
              updateMask: 'displayName',
            }),
          () => as(superAdmin).post(`/api/v1/automations/${id}/publish`),
          () => as(superAdmin).post(`/api/v1/automations/${id}/trigger/rotate-secret`, { gracePeriod: '0s' }),
          () => as(superAdmin).post(`/api/v1/automations/${id}/unpublish`),
        ];
        for (const write of writes) {
          const res = await write();
          expect(res.status).toBe(200);
          expect(seen).not.toContain(res.headers.etag);
          expect((await as(superAdmin).get(`/api/v1/automations/${id}`)).headers.etag).toBe(res.headers.etag);
          seen.push(String(res.headers.etag));
        }
      });

      it('answers a stale If-Match with 412 (code 9) and the current ETag, and changes nothing', async () => {
        const { id, etag: first } = await newAutomation();
        const renamed = await as(superAdmin)
          .post(`/api/v1/automations/${id}`, { automation: { displayName: 'Second' }, updateMask: 'displayName' })
          .set('If-Match', first);
        expect(renamed.status).toBe(200);
        const current = String(renamed.headers.etag);
        expect(current).not.toBe(first);

        const stale = [
          () =>
            as(superAdmin)
              .post(`/api/v1/automations/${id}`, {
                automation: { displayName: 'Lost update' },
                updateMask: 'displayName',
              })
              .set('If-Match', first),
          () => as(superAdmin).post(`/api/v1/automations/${id}/publish`).set('If-Match', first),
          () => as(superAdmin).post(`/api/v1/automations/${id}/unpublish`).set('If-Match', first),
          () => as(superAdmin).delete(`/api/v1/automations/${id}`).set('If-Match', first),
          () => as(superAdmin).delete(`/api/v1/automations/${id}`).set('If-Match', `W/${current}`),
        ];
        for (const attempt of stale) {
          const res = await attempt();
          expect([res.status, res.body.code, res.headers.etag]).toEqual([412, 9, current]);
        }
        const after = await as(superAdmin).get(`/api/v1/automations/${id}`);
        expect(after.headers.etag).toBe(current);
        expect(after.body.automation).toMatchObject({ displayName: 'Second', published: false });

        const published = await as(superAdmin).post(`/api/v1/automations/${id}/publish`).set('If-Match', current);
        expect(published.status).toBe(200);
        expect(published.body.automation.published).toBe(true);
        const deleted = await as(superAdmin)
          .delete(`/api/v1/automations/${id}`)
          .set('If-Match', `"r0", ${published.headers.etag}`);
        expect(deleted.status).toBe(200);
        expect((await as(superAdmin).get(`/api/v1/automations/${id}`)).status).toBe(404);
      });

      it('takes If-Match: * as any revision, and answers 404 for an unknown automation whatever If-Match says', async () => {
        const { id } = await newAutomation();
        expect((await as(superAdmin).post(`/api/v1/automations/${id}/publish`).set('If-Match', '*')).status).toBe(200);
        expect((await as(superAdmin).post('/api/v1/automations/nope/publish').set('If-Match', '"r1"')).status).toBe(
          404,
        );
      });
    });

    describe('actors', () => {
      it("attributes a person's change to person:<issuer>#<subject> with their name and email in the details", async () => {
        const actor = 'person:https://idp.example#u-42';
        // A super_admin: writing an outbound secret is theirs alone.
        const { id } = await sessionsOf(service.deps).create({
          actor,
          person: { id: actor, name: 'Grace Hopper', email: 'grace@example.com' },
          roles: ['super_admin'],
        });
        const session = await sessionsOf(service.deps).resolve(id);
        const res = await request(service.server)
          .post('/console/api/v1/secrets')
          .set('Cookie', `console_session=${id}`)
          .set('X-CSRF-Token', session!.csrfToken)
          .send({ name: 'person_made', value: 'never-shown-1', allowedOrigins: ['https://crm.example'] });
        expect(res.status).toBe(200);
        const rows = await service.deps.db.query<{ actor: string; details: Record<string, unknown> }>(
          "SELECT actor, details FROM audit_events WHERE action = 'outbound_secret.create' AND resource_id = 'person_made'",
        );
        expect(rows).toEqual([
          {
            actor,
            details: { allowedOrigins: ['https://crm.example'], name: 'Grace Hopper', email: 'grace@example.com' },
          },
        ]);
      });
    });

    describe('GET /api/v1/audit', () => {
      it('lists the audit trail newest first for a super_admin only, filtered by actor, action, subject and since, in pages', async () => {
        const { client, clientSecret } = await createClient(service.deps.db, service.deps.secretBox, {
          displayName: 'auditor',
          roles: ['super_admin'],
        });
        const token = await service.deps.tokens.issue(client.clientId, ['super_admin']);
        void clientSecret;
        const before = new Date(Date.now() - 1000).toISOString();
        const made: string[] = [];
        for (let i = 0; i < 11; i++) {
          const res = await as(token).post('/api/v1/automations', { ...AUTOMATION, displayName: `audited ${i}` });
          made.push(res.body.automation.id);
        }
        await as(token).post('/api/v1/secrets', {
          name: `audited_secret_${target.name}`,
          value: 'secret-value-xyz',
          allowedOrigins: ['https://crm.example'],
        });

        expect((await as(admin).get('/api/v1/audit')).status).toBe(403);
        const actor = `client:${client.clientId}`;
        const mine = await as(superAdmin).get('/api/v1/audit').query({ actor, action: 'automation.create' });
        expect(mine.status).toBe(200);
        expect(mine.body.list.map((item: { auditEvent: { subject: string } }) => item.auditEvent.subject)).toEqual(
          made.map((id) => `automation:${id}`).reverse(),
        );
        expect(mine.body.list[0].auditEvent).toEqual({
          at: expect.stringMatching(/Z$/),
          actor,
          // Names beside the ids: the client's display name, the automation's.
          actorDisplayName: 'auditor',
          action: 'automation.create',
          subject: `automation:${made[10]}`,
          subjectDisplayName: 'audited 10',
          details: {},
        });
        // A subject without a display name of its own (a secret: its name is its id) has none.
        const secret = await as(superAdmin).get('/api/v1/audit').query({ actor, action: 'outbound_secret.create' });
        expect(secret.body.list[0].auditEvent).toMatchObject({ actorDisplayName: 'auditor', subjectDisplayName: null });

        const bySubject = await as(superAdmin)
          .get('/api/v1/audit')
          .query({ subject: `automation:${made[1]}` });
        expect(bySubject.body.list.map((item: { auditEvent: { action: string } }) => item.auditEvent.action)).toEqual([
          'automation.create',
        ]);

        const all = await as(superAdmin).get('/api/v1/audit').query({ actor, since: before, page_size: 10 });
        expect(all.body.list).toHaveLength(10);
        expect(all.body.nextPageToken).not.toBe('');
        expect(JSON.stringify(all.body)).not.toContain('secret-value-xyz');
        expect(
          (
            await as(superAdmin)
              .get('/api/v1/audit')
              .query({ actor, since: new Date(Date.now() + 60_000).toISOString() })
          ).body.list,
        ).toEqual([]);

        const first = await as(superAdmin).get('/api/v1/audit').query({ actor, page_size: 10 });
        expect(first.body.list).toHaveLength(10);
        const paged: string[] = [];
        let pageToken = '';
        do {
          const page = await as(superAdmin)
            .get('/api/v1/audit')
            .query({ actor, pageSize: 10, ...(pageToken ? { pageToken } : {}) });
          expect(page.status).toBe(200);
          paged.push(...page.body.list.map((item: { auditEvent: { subject: string } }) => item.auditEvent.subject));
          pageToken = page.body.nextPageToken;
        } while (pageToken);
        expect(paged).toHaveLength(12);
        expect(new Set(paged).size).toBe(12);
      });

      it('refuses a bad since (400 naming it)', async () => {
        const res = await as(superAdmin).get('/api/v1/audit').query({ since: 'yesterday' });
        expect(res.status).toBe(400);
        expect(res.body.details[0].fieldViolations[0].field).toBe('since');
      });
    });
  });
}
