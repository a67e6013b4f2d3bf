/**
 * The token endpoint's limits, shared through the store (src/auth/token-guard.ts,
 * src/store/token-limits.ts), on PGlite and on PostgreSQL: two API apps on one store count one
 * per-source limit (on PostgreSQL each has its own connection pool to the same schema, as two
 * processes do); IPv6 sources count by /64; failed attempts of a client from one source make that
 * source wait, while the client's own caller elsewhere still gets its token. Real HTTP, real store;
 * the source address comes through X-Forwarded-For (TRUST_PROXY=1), as behind nginx.
 */
import request from 'supertest';
import { DATABASES, describeOn, openTestDb } from '../helpers/databases';
import { startTestService, type TestService } from '../helpers/test-service';
import { createClient } from '../../src/auth/clients';
import { createTokenGuard } from '../../src/auth/token-guard';
import { openDb, type Db } from '../../src/store/db';
import type { BackoffPolicy } from '../../src/store/token-limits';

const ENV = { TRUST_PROXY: '1', TOKEN_RATE_LIMIT_PER_MINUTE: '3' };

function tokenRequest(service: TestService, from: string, clientId: string, clientSecret: string): request.Test {
  return request(service.server)
    .post('/auth/v1/token')
    .set('X-Forwarded-For', from)
    .type('form')
    .send({ grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret });
}

for (const target of DATABASES) {
  describeOn(target)(`token endpoint limits shared through the store (${target.label})`, () => {
    let db: Db;
    let second: Db;
    let apiA: TestService;
    let apiB: TestService;

    beforeAll(async () => {
      db = await openTestDb(target);
      if (target.url) {
        // A second connection pool to the same schema: what a second API process holds.
        const [{ schema }] = (await db.query<{ schema: string }>('SELECT current_schema() AS schema')) as [
          { schema: string },
        ];
        second = await openDb({ databaseUrl: target.url, schema });
      } else {
        second = db;
      }
      apiA = await startTestService({ target, db, env: ENV });
      // The same SECRET_KEY, as every API process of one deployment has.
      apiB = await startTestService({ target, db: second, env: ENV, deps: { secretBox: apiA.deps.secretBox } });
    });
    afterAll(async () => {
      await apiA?.close();
      await apiB?.close();
      if (second !== db) await second?.close();
      await db?.close();
    });

    it('two APIs on one store count one limit per source: the fourth request a minute is 429, on either', async () => {
      const from = '198.51.100.20';
      const answers = [];
      for (const api of [apiA, apiB, apiA]) answers.push((await tokenRequest(api, from, 'cli_unknown', 'x')).status);
      expect(answers).toEqual([401, 401, 401]);
      for (const api of [apiB, apiA]) {
        const limited = await tokenRequest(api, from, 'cli_unknown', 'x');
        expect([limited.status, limited.body]).toEqual([
          429,
          { code: 8, message: expect.stringContaining('too many token requests'), details: [] },
        ]);
        expect(limited.headers['retry-after']).toBe('20'); // one request per 20 s refills
      }
      // Another source has its own limit.
      expect((await tokenRequest(apiB, '198.51.100.21', 'cli_unknown', 'x')).status).toBe(401);
      // Twenty seconds later (the stored arrival time moved back, rather than waiting), one more.
      await db.query("UPDATE token_source_limits SET tat_ms = tat_ms - 21000 WHERE source = '198.51.100.20'");
      expect((await tokenRequest(apiB, from, 'cli_unknown', 'x')).status).toBe(401);
      expect((await tokenRequest(apiA, from, 'cli_unknown', 'x')).status).toBe(429);
    });

    it('counts an IPv6 source by its /64: a fresh address in it is the same source; the next /64 is another', async () => {
      const statuses = async (addresses: string[]): Promise<number[]> => {
        const out: number[] = [];
        for (const [i, address] of addresses.entries())
          out.push((await tokenRequest(i % 2 ? apiB : apiA, address, 'cli_unknown', 'x')).status);
        return out;
      };
      expect(
        await statuses(['2001:db8:7:1::1', '2001:db8:7:1::2', '2001:db8:7:1:ffff:1:2:3', '2001:db8:7:1::4']),
      ).toEqual([401, 401, 401, 429]);
      expect(await statuses(['2001:db8:7:2::1'])).toEqual([401]);
      // An IPv4 peer reported as IPv4-mapped IPv6 counts as the IPv4 address.
      expect(await statuses(['203.0.113.50', '::ffff:203.0.113.50', '203.0.113.50', '::ffff:203.0.113.50'])).toEqual([
        401, 401, 401, 429,
      ]);
    });
  });

  describeOn(target)(`token endpoint failure backoff per (client, source) (${target.label})`, () => {
    // Two failures free, then an hour, two hours...: long enough that no test is a race.
    const policy: BackoffPolicy = { free: 2, baseMs: 3_600_000, maxMs: 4 * 3_600_000, forgetAfterMs: 24 * 3_600_000 };
    let db: Db;
    let api: TestService;
    const victim = { clientId: 'victim-client', clientSecret: 'the victim client secret, 32+ characters' };

    beforeAll(async () => {
      db = await openTestDb(target);
      const tokenGuard = createTokenGuard(db, { perSourcePerMinute: 1_000_000, maxSlowVerifications: 8 }, policy);
      api = await startTestService({ target, db, env: { TRUST_PROXY: '1' }, deps: { tokenGuard } });
      await createClient(db, api.deps.secretBox, { displayName: 'victim', roles: ['read_only'], ...victim });
    });
    afterAll(async () => {
      await api?.close();
      await db?.close();
    });

    it("makes the failing source wait, doubling, and never the client's own caller elsewhere", async () => {
      const attacker = '2001:db8:66:1::1';
      const caller = '198.51.100.77';
      const wrong = async (from: string): Promise<number> =>
        (await tokenRequest(api, from, victim.clientId, 'a wrong guess')).status;
      expect([await wrong(attacker), await wrong(attacker), await wrong(attacker)]).toEqual([401, 401, 401]);
      // The third failure (past the two free ones) set a wait: the next attempt, even with the right
      // secret, and from any address of the attacker's /64, is refused before any verification.
      for (const from of [attacker, '2001:db8:66:1::beef']) {
        const waiting = await tokenRequest(api, from, victim.clientId, victim.clientSecret);
        expect([from, waiting.status, waiting.body]).toEqual([
          from,
          429,
          { code: 8, message: expect.stringContaining('too many failed attempts'), details: [] },
        ]);
        expect(Number(waiting.headers['retry-after'])).toBeGreaterThan(3_500);
      }
      // The client's own caller, from its own address, is not held up.
      const own = await tokenRequest(api, caller, victim.clientId, victim.clientSecret);
      expect([own.status, own.body.token_type]).toEqual([200, 'Bearer']);
      // Other clients from the attacker's source are not either: the wait is the client's.
      expect((await tokenRequest(api, attacker, 'another-client', 'x')).status).toBe(401);

      // Each further failure doubles the wait (up to the cap); read in the store, as the processes do.
      await db.query(
        "UPDATE token_failures SET blocked_until_ms = last_failure_ms WHERE client_id = $1 AND source = '2001:db8:66:1::/64'",
        [victim.clientId],
      );
      expect(await wrong(attacker)).toBe(401);
      const waits = async (): Promise<number[]> =>
        (
          await db.query<{ wait: string }>(
            "SELECT blocked_until_ms - last_failure_ms AS wait FROM token_failures WHERE client_id = $1 AND source = '2001:db8:66:1::/64'",
            [victim.clientId],
          )
        ).map((row) => Number(row.wait));
      expect(await waits()).toEqual([2 * 3_600_000]);
      for (const wait of [4 * 3_600_000, 4 * 3_600_000]) {
        await db.query(
          "UPDATE token_failures SET blocked_until_ms = last_failure_ms WHERE client_id = $1 AND source = '2001:db8:66:1::/64'",
          [victim.clientId],
        );
        expect(await wrong(attacker)).toBe(401);
        expect(await waits()).toEqual([wait]);
      }
    });
  });
}
