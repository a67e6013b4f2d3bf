/**
 * The token endpoint's defences against being used as a CPU-exhaustion lever: generated secrets
 * verified by a keyed hash (no scrypt), scrypt only for operator-chosen secrets and refusals (the
 * same scrypt for every refusal, so that its cost tells no client id apart) and gated (503 with
 * Retry-After beyond the cap), legacy scrypt hashes
 * still accepted (and upgraded), and the audit of client changes and failed attempts.
 */
import request from 'supertest';
import { DATABASES, describeOn, openTestDb } from '../helpers/databases';
import type { Db } from '../../src/store/db';
import { startTestService, type TestService } from '../helpers/test-service';
import { createClient } from '../../src/auth/clients';
import { hashChosenSecret, kdf } from '../../src/auth/client-secret-hashes';
import { createTokenGuard, type TokenGuard } from '../../src/auth/token-guard';
import { loadConfig } from '../../src/config';
import { listAuditEvents } from '../../src/store/audit';
import { randomToken } from '../../src/ids';
import { ConfigError } from '../../src/errors';

function tokenRequest(service: TestService, clientId: string, clientSecret: string): request.Test {
  return request(service.server)
    .post('/auth/v1/token')
    .type('form')
    .send({ grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret });
}

async function secretHashOf(service: TestService, clientId: string): Promise<string> {
  const rows = await service.deps.db.query<{ secret_hash: string }>(
    'SELECT secret_hash FROM api_clients WHERE client_id = $1',
    [clientId],
  );
  return rows[0]!.secret_hash;
}

for (const target of DATABASES) {
  describeOn(target)(`token endpoint guards (${target.label})`, () => {
    let service: TestService;
    let guard: TokenGuard;
    let generated: { clientId: string; clientSecret: string };
    const chosen = { clientId: 'operator-chosen', clientSecret: 'an operator chose this secret, 32+ chars' };

    let db: Db;

    beforeAll(async () => {
      db = await openTestDb(target);
      guard = createTokenGuard(db, { perSourcePerMinute: 1_000_000, maxSlowVerifications: 1 });
      service = await startTestService({ target, db, deps: { tokenGuard: guard } });
      const made = await createClient(service.deps.db, service.deps.secretBox, {
        displayName: 'generated',
        roles: ['admin'],
      });
      generated = { clientId: made.client.clientId, clientSecret: made.clientSecret };
      await createClient(service.deps.db, service.deps.secretBox, {
        displayName: 'chosen',
        roles: ['read_only'],
        ...chosen,
      });
    });
    afterAll(async () => {
      await service?.close();
      await db?.close();
    });

    it('stores a generated secret as a keyed hash and an operator-chosen one as scrypt', async () => {
      expect(await secretHashOf(service, generated.clientId)).toMatch(/^hmac-sha256\$[A-Za-z0-9_-]{43}$/);
      expect(await secretHashOf(service, chosen.clientId)).toMatch(/^scrypt\$/);
      expect((await tokenRequest(service, generated.clientId, generated.clientSecret)).status).toBe(200);
      expect((await tokenRequest(service, chosen.clientId, chosen.clientSecret)).status).toBe(200);
    });

    it('answers 503 with Retry-After when the slow verifications are at their cap; a generated secret is not held up', async () => {
      let release!: () => void;
      const held = guard.slowVerifications.run(() => new Promise<void>((resolve) => (release = resolve)));
      try {
        const busy = await tokenRequest(service, chosen.clientId, chosen.clientSecret);
        expect(busy.status).toBe(503);
        expect(busy.headers['retry-after']).toMatch(/^[1-9][0-9]*$/);
        expect(busy.body).toEqual({ code: 14, message: expect.stringContaining('retry later'), details: [] });
        expect(JSON.stringify(busy.body)).not.toContain(chosen.clientSecret);
        // A generated secret (keyed hash) needs no slow verification.
        expect((await tokenRequest(service, generated.clientId, generated.clientSecret)).status).toBe(200);
        // A refusal does (the decoy), so an unknown id meets the cap as the chosen-secret client
        // does: the 503 does not tell which ids exist either.
        for (const clientId of ['cli_unknown', generated.clientId, chosen.clientId]) {
          const refused = await tokenRequest(service, clientId, 'whatever');
          expect([clientId, refused.status]).toEqual([clientId, 503]);
        }
      } finally {
        release();
        await held;
      }
      expect((await tokenRequest(service, chosen.clientId, chosen.clientSecret)).status).toBe(200);
    });

    it('a refusal costs one scrypt of the same parameters whether the client id exists (token endpoint and local sign-in)', async () => {
      const runs = jest.spyOn(kdf, 'scrypt');
      try {
        const costOf = async (attempt: () => request.Test) => {
          runs.mockClear();
          const res = await attempt();
          return {
            status: res.status,
            scrypts: runs.mock.calls.map(([, salt, keyLength, options]) => ({ salt: salt.length, keyLength, options })),
          };
        };
        const oneScrypt = [{ salt: 16, keyLength: 32, options: { N: 16384, r: 8, p: 1 } }];
        for (const clientId of [chosen.clientId, generated.clientId, `cli_${randomToken(12)}`]) {
          expect([clientId, await costOf(() => tokenRequest(service, clientId, 'a wrong guess'))]).toEqual([
            clientId,
            { status: 401, scrypts: oneScrypt },
          ]);
          const local = () =>
            request(service.server).post('/console/auth/local').send({ clientId, clientSecret: 'a wrong guess' });
          expect([clientId, await costOf(local)]).toEqual([clientId, { status: 401, scrypts: oneScrypt }]);
        }
      } finally {
        runs.mockRestore();
      }
    });

    it('still accepts a generated secret stored as scrypt (before keyed hashes), and upgrades its hash', async () => {
      const legacySecret = randomToken(32);
      await service.deps.db.query(
        `INSERT INTO api_clients (id, client_id, secret_hash, display_name, roles) VALUES ($1, $2, $3, 'legacy', '["admin"]'::jsonb)`,
        [`legacy-${randomToken(6)}`, 'legacy-client', await hashChosenSecret(legacySecret)],
      );
      expect((await tokenRequest(service, 'legacy-client', 'wrong')).status).toBe(401);
      expect(await secretHashOf(service, 'legacy-client')).toMatch(/^scrypt\$/);
      expect((await tokenRequest(service, 'legacy-client', legacySecret)).status).toBe(200);
      expect(await secretHashOf(service, 'legacy-client')).toMatch(/^hmac-sha256\$/);
      expect((await tokenRequest(service, 'legacy-client', legacySecret)).status).toBe(200);
    });

    it('audits failed attempts with the client id and source, never the secret', async () => {
      const wrong = `wrong-secret-${randomToken(8)}`;
      const deniedBefore = (await listAuditEvents(service.deps.db, 'api_client', generated.clientId)).filter(
        (e) => e.action === 'api_client.token_denied',
      ).length;
      expect((await tokenRequest(service, generated.clientId, wrong)).status).toBe(401);
      const events = await listAuditEvents(service.deps.db, 'api_client', generated.clientId);
      const denied = events.filter((e) => e.action === 'api_client.token_denied').slice(deniedBefore);
      expect(denied).toHaveLength(1);
      expect(denied[0]).toMatchObject({
        actor: 'anonymous',
        details: { clientId: generated.clientId, reason: 'invalid_client' },
      });
      expect(JSON.stringify(denied)).not.toContain(wrong);
    });

    it('audits API client create and delete, with the roles and the acting client', async () => {
      const token = await service.tokenFor('super_admin');
      const made = await request(service.server)
        .post('/api/v1/iam/clients')
        .set('Authorization', `Bearer ${token}`)
        .send({ displayName: 'audited', roles: ['admin', 'read_only'] });
      expect(made.status).toBe(200);
      const id = made.body.client.id as string;
      expect(
        (await request(service.server).delete(`/api/v1/iam/clients/${id}`).set('Authorization', `Bearer ${token}`))
          .status,
      ).toBe(200);
      const events = await listAuditEvents(service.deps.db, 'api_client', id);
      const actor = `client:${(await service.deps.tokens.verify(token))!.clientId}`;
      expect(actor).toMatch(/^client:cli_/);
      expect(events.map((e) => [e.action, e.actor, e.details.roles])).toEqual([
        ['api_client.create', actor, ['admin', 'read_only']],
        ['api_client.delete', actor, ['admin', 'read_only']],
      ]);
      expect(JSON.stringify(events)).not.toContain(made.body.clientSecret);
    });
  });
}

for (const target of DATABASES) {
  describeOn(target)(`credential bodies over the limit (${target.label})`, () => {
    const LIMIT = 16 * 1024;
    /** A service whose per-source limit is 3 a minute, on a store of its own. */
    async function limited(): Promise<{ service: TestService; db: Db }> {
      const db = await openTestDb(target);
      const tokenGuard = createTokenGuard(db, { perSourcePerMinute: 3, maxSlowVerifications: 2 });
      return { service: await startTestService({ target, db, deps: { tokenGuard } }), db };
    }
    const tokenForm = (length: number) => {
      const start = 'grant_type=client_credentials&client_id=nobody&client_secret=';
      return `${start}${'x'.repeat(length - start.length)}`;
    };

    it('the token endpoint: 16 KiB is read, one byte more is 413 in the error shape, and it counts against the source', async () => {
      const { service, db } = await limited();
      try {
        const send = (body: string) =>
          request(service.server)
            .post('/auth/v1/token')
            .set('Content-Type', 'application/x-www-form-urlencoded')
            .send(body);
        expect((await send(tokenForm(LIMIT))).status).toBe(401);
        for (let i = 0; i < 2; i++) {
          const over = await send(tokenForm(LIMIT + 1));
          expect([over.status, over.body]).toEqual([
            413,
            { code: 8, message: `request body exceeds ${LIMIT} bytes`, details: [] },
          ]);
        }
        // Three requests from this source this minute: the next is over its limit.
        expect((await send(tokenForm(100))).status).toBe(429);
      } finally {
        await service.close();
        await db.close();
      }
    });

    it('the local sign-in: a body over 16 KiB is 413 and counts against the source as well', async () => {
      const { service, db } = await limited();
      try {
        const signIn = (clientSecret: string) =>
          request(service.server).post('/console/auth/local').send({ clientId: 'nobody', clientSecret });
        for (let i = 0; i < 3; i++) {
          const over = await signIn('x'.repeat(LIMIT));
          expect([over.status, over.body.code]).toEqual([413, 8]);
        }
        const next = await signIn('a guess');
        expect([next.status, next.body.code]).toEqual([429, 8]);
      } finally {
        await service.close();
        await db.close();
      }
    });
  });
}

describe('BOOTSTRAP_CLIENT_SECRET', () => {
  it('must be long enough: a clear start-up error otherwise', () => {
    const short = () => loadConfig({ BOOTSTRAP_CLIENT_ID: 'boot', BOOTSTRAP_CLIENT_SECRET: 'short-secret' });
    expect(short).toThrow(ConfigError);
    expect(short).toThrow('BOOTSTRAP_CLIENT_SECRET must be at least 32 characters');
    expect(
      loadConfig({ BOOTSTRAP_CLIENT_ID: 'boot', BOOTSTRAP_CLIENT_SECRET: 'x'.repeat(32) }).bootstrap?.clientId,
    ).toBe('boot');
  });
});
