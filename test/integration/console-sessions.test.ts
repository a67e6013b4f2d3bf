/**
 * The console's sessions and its API (`/console/api/...`) through real HTTP on both stores: local
 * sign-in with an API client's credentials, the cookie and what the store keeps of it, `/me`,
 * logout, idle and absolute lifetimes (a clock the test holds), the last-seen write at most once a
 * minute, CSRF and Origin checks of unsafe requests sent as a second origin would, `/api` staying
 * bearer-only, and the flood guards local sign-in shares with the token endpoint.
 */
import request from 'supertest';
import { DATABASES, describeOn, openTestDb } from '../helpers/databases';
import { startTestService, type TestService } from '../helpers/test-service';
import { createClient } from '../../src/auth/clients';
import { ConsoleSessions, hashSessionId } from '../../src/auth/sessions';
import { createTokenGuard } from '../../src/auth/token-guard';
import type { Role } from '../../src/auth/roles';
import type { Db } from '../../src/store/db';

const OTHER_ORIGIN = 'https://attacker.example';

interface SignedIn {
  cookie: string;
  /** The cookie's value: the session id. */
  id: string;
  csrfToken: string;
  clientId: string;
  setCookie: string;
}

async function signIn(service: TestService, roles: Role[], name = 'operator'): Promise<SignedIn> {
  const { client, clientSecret } = await createClient(service.deps.db, service.deps.secretBox, {
    displayName: name,
    roles,
  });
  const res = await request(service.server)
    .post('/console/auth/local')
    .send({ clientId: client.clientId, clientSecret });
  expect(res.status).toBe(200);
  const setCookie = (res.headers['set-cookie'] as unknown as string[])[0]!;
  const pair = setCookie.split(';')[0]!;
  return {
    cookie: pair,
    id: pair.slice(pair.indexOf('=') + 1),
    csrfToken: res.body.csrfToken,
    clientId: client.clientId,
    setCookie,
  };
}

async function sessionRows(db: Db): Promise<Array<{ id_hash: string; last_seen_at: Date; expires_at: Date }>> {
  return db.query('SELECT id_hash, last_seen_at, expires_at FROM console_sessions');
}

for (const target of DATABASES) {
  describeOn(target)(`console sessions (${target.label})`, () => {
    let service: TestService;
    let db: Db;
    let now = Date.parse('2026-01-01T00:00:00Z');

    beforeAll(async () => {
      db = await openTestDb(target);
      service = await startTestService({
        db,
        deps: {
          sessions: new ConsoleSessions(db, { idleSeconds: 1800, maxSeconds: 43200 }, () => now),
          tokenGuard: createTokenGuard(db, { perSourcePerMinute: 1_000_000, maxSlowVerifications: 2 }),
        },
      });
    });
    afterAll(async () => {
      await service?.close();
      await db?.close();
    });
    beforeEach(async () => {
      await db.query('DELETE FROM console_sessions');
    });

    it('signs in with an API client, sets an HttpOnly SameSite=Lax cookie, and keeps only its hash', async () => {
      const me = await signIn(service, ['admin'], 'Ada');
      expect(me.setCookie).toMatch(
        /^console_session=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Lax; Max-Age=43200$/,
      );
      expect(Buffer.from(me.id, 'base64url')).toHaveLength(32);
      const rows = await db.query<Record<string, unknown>>('SELECT * FROM console_sessions');
      expect(rows.map((row) => row.id_hash)).toEqual([hashSessionId(me.id)]);
      expect(JSON.stringify(rows)).not.toContain(me.id);

      const res = await request(service.server).get('/console/auth/me').set('Cookie', me.cookie);
      expect(res.status).toBe(200);
      expect(res.headers['cache-control']).toBe('no-store');
      expect(res.body).toEqual({
        person: { id: `client:${me.clientId}`, name: 'Ada', email: '', roles: ['admin'] },
        csrfToken: me.csrfToken,
      });
      const [audit] = await db.query<{ actor: string; details: Record<string, unknown> }>(
        "SELECT actor, details FROM audit_events WHERE action = 'console.sign_in' ORDER BY id DESC LIMIT 1",
      );
      expect(audit).toEqual({
        actor: `client:${me.clientId}`,
        details: { method: 'local', name: 'Ada', email: '', roles: ['admin'] },
      });
    });

    it('answers /me with 401 in the error shape without a session or with an unknown one', async () => {
      for (const cookie of [undefined, 'console_session=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA']) {
        let test = request(service.server).get('/console/auth/me');
        if (cookie) test = test.set('Cookie', cookie);
        const res = await test;
        expect(res.status).toBe(401);
        expect(res.body).toEqual({ code: 16, message: expect.stringMatching(/session/), details: [] });
      }
    });

    it('refuses a wrong secret with 401, audits it without the secret, and makes no session', async () => {
      const { client } = await createClient(db, service.deps.secretBox, { displayName: 'x', roles: ['admin'] });
      const res = await request(service.server)
        .post('/console/auth/local')
        .send({ clientId: client.clientId, clientSecret: 'not-the-secret-0123456789' });
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ code: 16, message: 'client authentication failed', details: [] });
      expect(res.headers['set-cookie']).toBeUndefined();
      expect(await sessionRows(db)).toEqual([]);
      const denied = await db.query<{ details: unknown }>(
        "SELECT details FROM audit_events WHERE action = 'api_client.token_denied' AND resource_id = $1",
        [client.clientId],
      );
      expect(denied).toHaveLength(1);
      expect(JSON.stringify(denied)).not.toContain('not-the-secret');
    });

    it('answers a sign-in without its fields with 400 naming them', async () => {
      const res = await request(service.server).post('/console/auth/local').send({ clientId: '' });
      expect(res.status).toBe(400);
      expect(res.body.code).toBe(3);
      expect(res.body.details[0].fieldViolations.map((v: { field: string }) => v.field)).toEqual([
        'clientId',
        'clientSecret',
      ]);
    });

    it('refuses a sign-in posted from another origin (403) and makes no session', async () => {
      const { client, clientSecret } = await createClient(db, service.deps.secretBox, {
        displayName: 'x',
        roles: ['admin'],
      });
      const res = await request(service.server)
        .post('/console/auth/local')
        .set('Origin', OTHER_ORIGIN)
        .send({ clientId: client.clientId, clientSecret });
      expect(res.status).toBe(403);
      expect(res.body.code).toBe(7);
      expect(await sessionRows(db)).toEqual([]);
      const same = await request(service.server)
        .post('/console/auth/local')
        .set('Origin', service.baseUrl)
        .send({ clientId: client.clientId, clientSecret });
      expect(same.status).toBe(200);
    });

    it('serves /api operations under /console/api for the session; /api ignores the cookie', async () => {
      const me = await signIn(service, ['read_only']);
      const viaConsole = await request(service.server).get('/console/api/v1/apps').set('Cookie', me.cookie);
      expect(viaConsole.status).toBe(200);
      expect(viaConsole.body).toEqual({ list: expect.any(Array), nextPageToken: '' });
      const viaApi = await request(service.server).get('/api/v1/apps').set('Cookie', me.cookie);
      expect(viaApi.status).toBe(401);
      expect(viaApi.headers['www-authenticate']).toBe('Bearer');
      const noCookie = await request(service.server).get('/console/api/v1/apps');
      expect(noCookie.status).toBe(401);
      // The session's roles hold: read_only may not write, even with its CSRF token.
      const write = await request(service.server)
        .post('/console/api/v1/apps')
        .set('Cookie', me.cookie)
        .set('X-CSRF-Token', me.csrfToken)
        .send({ displayName: 'A' });
      expect(write.status).toBe(403);
    });

    it('refuses an unsafe request without the CSRF token or from another origin (403 code 7), and nothing changes', async () => {
      // A super_admin: writing an outbound secret is theirs alone.
      const me = await signIn(service, ['super_admin']);
      const secret = { name: 'crm_token', value: 'v-123456', allowedOrigins: ['https://crm.example'] };
      // The right token with its last character changed (to another character: the token may end with either).
      const oneOff = `${me.csrfToken.slice(0, -1)}${me.csrfToken.endsWith('A') ? 'B' : 'A'}`;
      const attempts = [
        { headers: {} },
        // The console's own Origin is no substitute for the token.
        { headers: { Origin: service.baseUrl } },
        { headers: { Origin: service.baseUrl, 'X-CSRF-Token': '' } },
        { headers: { Origin: service.baseUrl, 'X-CSRF-Token': oneOff } },
        { headers: { 'X-CSRF-Token': 'wrong' } },
        { headers: { 'X-CSRF-Token': oneOff } },
        { headers: { 'X-CSRF-Token': me.csrfToken, Origin: OTHER_ORIGIN } },
        { headers: { 'X-CSRF-Token': me.csrfToken, Origin: 'null' } },
      ];
      for (const attempt of attempts) {
        const res = await request(service.server)
          .post('/console/api/v1/secrets')
          .set('Cookie', me.cookie)
          .set(attempt.headers)
          .send(secret);
        expect([JSON.stringify(attempt.headers), res.status, res.body.code]).toEqual([
          JSON.stringify(attempt.headers),
          403,
          7,
        ]);
      }
      expect(await db.query("SELECT name FROM outbound_secrets WHERE name = 'crm_token'")).toEqual([]);

      const ok = await request(service.server)
        .post('/console/api/v1/secrets')
        .set('Cookie', me.cookie)
        .set('X-CSRF-Token', me.csrfToken)
        .set('Origin', service.baseUrl)
        .send(secret);
      expect(ok.status).toBe(200);
      expect(JSON.stringify(ok.body)).not.toContain('v-123456');
      // Replacing or deleting it from the console's origin without the token: 403, and it stays.
      for (const method of ['put', 'delete'] as const) {
        const server = request(service.server);
        const res = await server[method]('/console/api/v1/secrets/crm_token')
          .set('Cookie', me.cookie)
          .set('Origin', service.baseUrl)
          .send({ value: 'v-replaced', allowedOrigins: ['https://elsewhere.example'] });
        expect([method, res.status, res.body.code]).toEqual([method, 403, 7]);
      }
      expect(
        await db.query<{ allowed_origins: unknown }>(
          "SELECT allowed_origins FROM outbound_secrets WHERE name = 'crm_token'",
        ),
      ).toEqual([{ allowed_origins: ['https://crm.example'] }]);
      const [audit] = await db.query<{ actor: string }>(
        "SELECT actor FROM audit_events WHERE action = 'outbound_secret.create' AND resource_id = 'crm_token'",
      );
      expect(audit).toEqual({ actor: `client:${me.clientId}` });
    });

    it('logs out on the server: the cookie is cleared and the session no longer works', async () => {
      const me = await signIn(service, ['admin']);
      const noToken = await request(service.server).post('/console/auth/logout').set('Cookie', me.cookie);
      expect(noToken.status).toBe(403);
      const sameOriginNoToken = await request(service.server)
        .post('/console/auth/logout')
        .set('Cookie', me.cookie)
        .set('Origin', service.baseUrl);
      expect([sameOriginNoToken.status, sameOriginNoToken.body.code]).toEqual([403, 7]);
      expect(await sessionRows(db)).toHaveLength(1);
      const res = await request(service.server)
        .post('/console/auth/logout')
        .set('Cookie', me.cookie)
        .set('X-CSRF-Token', me.csrfToken);
      expect(res.status).toBe(204);
      expect((res.headers['set-cookie'] as unknown as string[])[0]).toMatch(
        /^console_session=; Path=\/; HttpOnly; SameSite=Lax; Max-Age=0$/,
      );
      expect(await sessionRows(db)).toEqual([]);
      expect((await request(service.server).get('/console/auth/me').set('Cookie', me.cookie)).status).toBe(401);
    });

    it('ends a session after its idle time, and writes the last-seen time at most once a minute', async () => {
      const start = now;
      const me = await signIn(service, ['admin']);
      const [created] = await sessionRows(db);
      now = start + 30_000;
      expect((await request(service.server).get('/console/auth/me').set('Cookie', me.cookie)).status).toBe(200);
      expect((await sessionRows(db))[0]!.last_seen_at.getTime()).toBe(created!.last_seen_at.getTime());
      now = start + 61_000;
      expect((await request(service.server).get('/console/auth/me').set('Cookie', me.cookie)).status).toBe(200);
      const [touched] = await sessionRows(db);
      expect(touched!.last_seen_at.getTime()).toBe(start + 61_000);
      expect(touched!.expires_at.getTime()).toBe(start + 61_000 + 1800_000);
      now = start + 61_000 + 1800_000;
      expect((await request(service.server).get('/console/auth/me').set('Cookie', me.cookie)).status).toBe(401);
      expect(await sessionRows(db)).toEqual([]);
      now = start;
    });

    it('ends a session at its absolute lifetime however active it is', async () => {
      const start = now;
      const me = await signIn(service, ['admin']);
      for (let at = start; at < start + 43_200_000; at += 1_500_000) {
        now = at;
        expect((await request(service.server).get('/console/auth/me').set('Cookie', me.cookie)).status).toBe(200);
      }
      now = start + 43_200_000;
      expect((await request(service.server).get('/console/auth/me').set('Cookie', me.cookie)).status).toBe(401);
      now = start;
    });

    it('purges expired sessions when someone signs in', async () => {
      const start = now;
      await signIn(service, ['admin']);
      now = start + 1800_000;
      await signIn(service, ['admin']);
      expect(await sessionRows(db)).toHaveLength(1);
      now = start;
    });

    it('ends the sessions of a deleted API client and follows its current roles', async () => {
      const me = await signIn(service, ['admin']);
      await db.query(`UPDATE api_clients SET roles = '["read_only"]'::jsonb WHERE client_id = $1`, [me.clientId]);
      expect(
        (await request(service.server).get('/console/auth/me').set('Cookie', me.cookie)).body.person.roles,
      ).toEqual(['read_only']);
      await db.query('DELETE FROM api_clients WHERE client_id = $1', [me.clientId]);
      expect((await request(service.server).get('/console/auth/me').set('Cookie', me.cookie)).status).toBe(401);
    });
  });

  describeOn(target)(`console sign-in settings (${target.label})`, () => {
    it('names the cookie __Host- and marks it Secure when BASE_URL is https; the Origin must be that one', async () => {
      const service = await startTestService({ target, env: { BASE_URL: 'https://console.example' } });
      try {
        const { client, clientSecret } = await createClient(service.deps.db, service.deps.secretBox, {
          displayName: 'x',
          roles: ['admin'],
        });
        const res = await request(service.server)
          .post('/console/auth/local')
          .set('Origin', 'https://console.example')
          .send({ clientId: client.clientId, clientSecret });
        expect(res.status).toBe(200);
        const setCookie = (res.headers['set-cookie'] as unknown as string[])[0]!;
        expect(setCookie).toMatch(
          /^__Host-console_session=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Lax; Max-Age=43200; Secure$/,
        );
        const cookie = setCookie.split(';')[0]!;
        expect((await request(service.server).get('/console/auth/me').set('Cookie', cookie)).status).toBe(200);
        // The plain name is not read when the secure one is in use.
        expect(
          (await request(service.server).get('/console/auth/me').set('Cookie', cookie.replace('__Host-', ''))).status,
        ).toBe(401);
        const fromHttp = await request(service.server)
          .post('/console/auth/local')
          .set('Origin', 'http://console.example')
          .send({ clientId: client.clientId, clientSecret });
        expect(fromHttp.status).toBe(403);
      } finally {
        await service.close();
      }
    });

    it('turns local sign-in off with CONSOLE_LOCAL_SIGNIN=false (404)', async () => {
      const service = await startTestService({ target, env: { CONSOLE_LOCAL_SIGNIN: 'false' } });
      try {
        const { client, clientSecret } = await createClient(service.deps.db, service.deps.secretBox, {
          displayName: 'x',
          roles: ['admin'],
        });
        const res = await request(service.server)
          .post('/console/auth/local')
          .send({ clientId: client.clientId, clientSecret });
        expect(res.status).toBe(404);
        expect(res.body.code).toBe(5);
        expect(res.headers['set-cookie']).toBeUndefined();
      } finally {
        await service.close();
      }
    });

    it("applies the token endpoint's per-source limit to local sign-in (429 with Retry-After), shared with /auth/v1/token", async () => {
      const limitedDb = await openTestDb(target);
      const tokenGuard = createTokenGuard(limitedDb, { perSourcePerMinute: 3, maxSlowVerifications: 2 });
      const service = await startTestService({ target, db: limitedDb, deps: { tokenGuard } });
      try {
        const statuses: number[] = [];
        for (let i = 0; i < 2; i++)
          statuses.push(
            (
              await request(service.server)
                .post('/console/auth/local')
                .send({ clientId: 'cli_x', clientSecret: 'guess' })
            ).status,
          );
        statuses.push(
          (
            await request(service.server)
              .post('/auth/v1/token')
              .type('form')
              .send({ grant_type: 'client_credentials', client_id: 'cli_x', client_secret: 'guess' })
          ).status,
        );
        const limited = await request(service.server)
          .post('/console/auth/local')
          .send({ clientId: 'cli_x', clientSecret: 'guess' });
        expect(statuses).toEqual([401, 401, 401]);
        expect(limited.status).toBe(429);
        expect(limited.body.code).toBe(8);
        expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
      } finally {
        await service.close();
        await limitedDb.close();
      }
    });
  });
}
