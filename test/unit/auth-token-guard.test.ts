/**
 * The token endpoint's guards (src/auth/token-guard.ts): the cap on slow verifications, and the
 * limits kept in the store (per source, the failure backoff per client and source, the reset of its
 * count, the prune) on a real PGlite store, which is what StrykerJS runs for the module
 * (docs/testing.md#mutation-testing). test/integration/token-limits.test.ts checks the same limits through HTTP on
 * both stores and across two API apps; the source key (an IPv6 /64) with the other address rules is
 * in test/unit/net-source-prefix.test.ts.
 */
import {
  ConcurrencyCap,
  createTokenGuard,
  SharedSourceLimit,
  SharedTokenLimits,
  TOKEN_FAILURE_BACKOFF,
} from '../../src/auth/token-guard';
import { GuardRefusal } from '../../src/errors';
import type { Db } from '../../src/store/db';
import type { BackoffPolicy } from '../../src/store/token-limits';
import { openTestDb, PGLITE } from '../helpers/databases';

describe('ConcurrencyCap', () => {
  it('runs up to max at once and refuses the next with 503 (never queued)', async () => {
    const cap = new ConcurrencyCap(2, 7);
    const releases: Array<() => void> = [];
    const hold = (): Promise<string> => new Promise((resolve) => releases.push(() => resolve('done')));
    const first = cap.run(hold);
    const second = cap.run(hold);
    expect(cap.inUse).toBe(2);
    const refused = await cap.run(hold).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(GuardRefusal);
    expect(refused).toMatchObject({
      status: 503,
      retryAfterSeconds: 7,
      message: 'too many client authentications in progress; retry later',
    });
    expect(releases).toHaveLength(2);
    releases[0]!();
    await expect(first).resolves.toBe('done');
    expect(cap.inUse).toBe(1);
    // A slot is free again.
    const third = cap.run(() => Promise.resolve('third'));
    await expect(third).resolves.toBe('third');
    releases[1]!();
    await expect(second).resolves.toBe('done');
    expect(cap.inUse).toBe(0);
  });

  it('frees the slot when the work fails, and passes the failure on', async () => {
    const cap = new ConcurrencyCap(1);
    await expect(cap.run(() => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(cap.inUse).toBe(0);
    await expect(cap.run(() => Promise.resolve(1))).resolves.toBe(1);
  });

  it('defaults to Retry-After 1 s', async () => {
    const cap = new ConcurrencyCap(0);
    await expect(cap.run(() => Promise.resolve(1))).rejects.toMatchObject({ status: 503, retryAfterSeconds: 1 });
  });
});

describe('SharedTokenLimits on a PGlite store', () => {
  // Three failures free, then 10 s (doubled up to 40 s); a failure a minute after the previous one starts again.
  const POLICY: BackoffPolicy = { free: 3, baseMs: 10_000, maxMs: 40_000, forgetAfterMs: 60_000 };
  let db: Db;

  beforeAll(async () => {
    db = await openTestDb(PGLITE);
  });
  afterAll(async () => {
    await db.close();
  });
  beforeEach(async () => {
    await db.exec('DELETE FROM token_source_limits; DELETE FROM token_failures');
  });
  afterEach(() => {
    jest.restoreAllMocks();
  });

  const refusal = (promise: Promise<unknown>): Promise<unknown> =>
    promise.then(
      () => {
        throw new Error('admitted; expected a refusal');
      },
      (err: unknown) => err,
    );

  async function failures(): Promise<{ client_id: string; source: string; failures: number }[]> {
    return db.query('SELECT client_id, source, failures FROM token_failures ORDER BY client_id, source');
  }

  it('keeps the default policy: five free failures, then 1 s doubling up to 15 minutes, forgotten after 15 minutes', () => {
    expect(TOKEN_FAILURE_BACKOFF).toEqual({ free: 5, baseMs: 1000, maxMs: 900_000, forgetAfterMs: 900_000 });
    const guard = createTokenGuard(db, { perSourcePerMinute: 7, maxSlowVerifications: 4 });
    expect(guard.limits.perMinute).toBe(7);
    expect(guard.limits.backoff).toBe(TOKEN_FAILURE_BACKOFF);
    expect(guard.slowVerifications.max).toBe(4);
    expect(guard.slowVerifications.inUse).toBe(0);
    expect(createTokenGuard(db, { perSourcePerMinute: 1, maxSlowVerifications: 1 }, POLICY).limits.backoff).toBe(
      POLICY,
    );
  });

  it('admits perMinute requests per source, refuses the next with 429 and Retry-After; another source has its own', async () => {
    const limits = new SharedTokenLimits(db, 3, POLICY);
    for (let i = 0; i < 3; i++) await expect(limits.admit('198.51.100.1', `client-${i}`)).resolves.toBe('198.51.100.1');
    const refused = await refusal(limits.admit('198.51.100.1', 'client-9'));
    expect(refused).toBeInstanceOf(GuardRefusal);
    // One request per 20 s refills the limit.
    expect(refused).toMatchObject({
      status: 429,
      retryAfterSeconds: 20,
      message: 'too many token requests from this address; retry later',
    });
    await expect(limits.admit('198.51.100.2', 'client-9')).resolves.toBe('198.51.100.2');
    // An IPv6 source is its /64: the key admit returns for failed.
    await expect(limits.admit('2001:db8:1:2::a', 'client-9')).resolves.toBe('2001:db8:1:2::/64');
  });

  it('makes a client wait after its free failures from one source, doubling; other clients and sources are not held', async () => {
    const limits = new SharedTokenLimits(db, 1000, POLICY);
    const source = await limits.admit('203.0.113.5', 'cli_a');
    for (let i = 0; i < POLICY.free; i++) await limits.failed(source, 'cli_a');
    // The free failures leave no wait.
    await expect(limits.admit('203.0.113.5', 'cli_a')).resolves.toBe(source);
    await limits.failed(source, 'cli_a');
    const refused = await refusal(limits.admit('203.0.113.5', 'cli_a'));
    expect(refused).toBeInstanceOf(GuardRefusal);
    expect(refused).toMatchObject({
      status: 429,
      retryAfterSeconds: 10,
      message: 'too many failed attempts for this client from this address; retry later',
    });
    // Another client from the same source, and the same client from another source, go on.
    await expect(limits.admit('203.0.113.5', 'cli_b')).resolves.toBe(source);
    await expect(limits.admit('203.0.113.6', 'cli_a')).resolves.toBe('203.0.113.6');
    await limits.failed(source, 'cli_a');
    await expect(refusal(limits.admit('203.0.113.5', 'cli_a'))).resolves.toMatchObject({
      status: 429,
      retryAfterSeconds: 20,
    });
    expect(await failures()).toEqual([{ client_id: 'cli_a', source: '203.0.113.5', failures: 5 }]);
  });

  it('keys the client as sent without NUL characters and cut at 200 characters', async () => {
    const limits = new SharedTokenLimits(db, 1000, { ...POLICY, free: 0 });
    const source = await limits.admit('203.0.113.7', 'x');
    await limits.failed(source, 'cli\u0000nul');
    await expect(refusal(limits.admit('203.0.113.7', 'clinul'))).resolves.toMatchObject({
      status: 429,
      retryAfterSeconds: 10,
    });
    await limits.failed(source, 'y'.repeat(250));
    await expect(refusal(limits.admit('203.0.113.7', 'y'.repeat(200) + 'z'.repeat(20)))).resolves.toMatchObject({
      status: 429,
    });
    expect(await failures()).toEqual([
      { client_id: 'clinul', source: '203.0.113.7', failures: 1 },
      { client_id: 'y'.repeat(200), source: '203.0.113.7', failures: 1 },
    ]);
  });

  it('starts the count again after forgetAfterMs without failures', async () => {
    const limits = new SharedTokenLimits(db, 1000, POLICY);
    const source = await limits.admit('203.0.113.8', 'cli_r');
    for (let i = 0; i <= POLICY.free; i++) await limits.failed(source, 'cli_r');
    await expect(refusal(limits.admit('203.0.113.8', 'cli_r'))).resolves.toMatchObject({ status: 429 });
    // The last failure a minute and a second ago (moved back in the store, rather than waiting).
    await db.query(
      'UPDATE token_failures SET last_failure_ms = last_failure_ms - 61000, blocked_until_ms = blocked_until_ms - 61000',
    );
    await expect(limits.admit('203.0.113.8', 'cli_r')).resolves.toBe(source);
    await limits.failed(source, 'cli_r');
    expect(await failures()).toEqual([{ client_id: 'cli_r', source: '203.0.113.8', failures: 1 }]);
    await expect(limits.admit('203.0.113.8', 'cli_r')).resolves.toBe(source);
  });

  it('drops the rows that limit nothing any more, at most once a minute per process', async () => {
    const start = Date.now();
    let now = start;
    jest.spyOn(Date, 'now').mockImplementation(() => now);
    const limits = new SharedTokenLimits(db, 1000, POLICY);
    const stale = async (address: string): Promise<void> => {
      const source = await limits.admit(address, 'cli_p');
      await limits.failed(source, 'cli_p');
      // A full limit again and a failure long forgotten: moved back in the store, rather than waiting.
      await db.query('UPDATE token_source_limits SET tat_ms = tat_ms - 600000 WHERE source = $1', [source]);
      await db.query(
        'UPDATE token_failures SET last_failure_ms = last_failure_ms - 600000, blocked_until_ms = 0 WHERE source = $1',
        [source],
      );
    };
    const sources = async (): Promise<string[]> =>
      (await db.query<{ source: string }>('SELECT source FROM token_source_limits ORDER BY source')).map(
        (r) => r.source,
      );
    await stale('192.0.2.1');
    now = start + 59_999;
    await limits.admit('192.0.2.2', 'cli_p');
    expect(await sources()).toEqual(['192.0.2.1', '192.0.2.2']);
    expect(await failures()).toHaveLength(1);
    now = start + 60_000;
    await limits.admit('192.0.2.3', 'cli_p');
    // The stale rows went; the live limits stay.
    expect(await sources()).toEqual(['192.0.2.2', '192.0.2.3']);
    expect(await failures()).toEqual([]);
    // Not again within the minute.
    await stale('192.0.2.4');
    now = start + 119_999;
    await limits.admit('192.0.2.5', 'cli_p');
    expect(await sources()).toEqual(['192.0.2.2', '192.0.2.3', '192.0.2.4', '192.0.2.5']);
    expect(await failures()).toHaveLength(1);
  });

  describe('SharedSourceLimit (the OIDC sign-in starts)', () => {
    const sources = async (): Promise<string[]> =>
      (await db.query<{ source: string }>('SELECT source FROM token_source_limits ORDER BY source')).map(
        (r) => r.source,
      );

    it('admits perMinute requests per source and kind, then a 429 with its own message and Retry-After', async () => {
      const logins = new SharedSourceLimit(db, 'console-login', 2, 'too many sign-ins from this source');
      await logins.admit('198.51.100.20');
      await logins.admit('198.51.100.20');
      const refused = await refusal(logins.admit('198.51.100.20'));
      expect(refused).toBeInstanceOf(GuardRefusal);
      // Two a minute: the next one is free again in 30 s.
      expect(refused).toMatchObject({
        status: 429,
        message: 'too many sign-ins from this source',
        retryAfterSeconds: 30,
      });
      // Another source, another IPv6 /64 member of the same /64, and the token endpoint's count are apart.
      await logins.admit('198.51.100.21');
      await logins.admit('2001:db8:9:9::1');
      await logins.admit('2001:db8:9:9::2');
      await expect(refusal(logins.admit('2001:db8:9:9::3'))).resolves.toMatchObject({ status: 429 });
      const tokens = new SharedTokenLimits(db, 1, POLICY);
      await expect(tokens.admit('198.51.100.20', 'cli_x')).resolves.toBe('198.51.100.20');
      expect(await sources()).toEqual([
        '198.51.100.20',
        'console-login:198.51.100.20',
        'console-login:198.51.100.21',
        'console-login:2001:db8:9:9::/64',
      ]);
    });

    it('drops the stale rows at most once a minute per process', async () => {
      const start = Date.now();
      let now = start;
      jest.spyOn(Date, 'now').mockImplementation(() => now);
      // One a minute: a live row stays a minute of the store's clock, longer than this test.
      const logins = new SharedSourceLimit(db, 'console-login', 1, 'too many');
      const age = (source: string): Promise<unknown> =>
        db.query('UPDATE token_source_limits SET tat_ms = tat_ms - 3600000 WHERE source = $1', [source]);
      await logins.admit('192.0.2.60');
      await age('console-login:192.0.2.60');
      now = start + 59_999;
      await logins.admit('192.0.2.61');
      expect(await sources()).toEqual(['console-login:192.0.2.60', 'console-login:192.0.2.61']);
      now = start + 60_000;
      await logins.admit('192.0.2.62');
      expect(await sources()).toEqual(['console-login:192.0.2.61', 'console-login:192.0.2.62']);
      await age('console-login:192.0.2.61');
      now = start + 119_999;
      await logins.admit('192.0.2.63');
      expect(await sources()).toEqual([
        'console-login:192.0.2.61',
        'console-login:192.0.2.62',
        'console-login:192.0.2.63',
      ]);
      now = start + 120_000;
      await logins.admit('192.0.2.64');
      expect(await sources()).toEqual([
        'console-login:192.0.2.62',
        'console-login:192.0.2.63',
        'console-login:192.0.2.64',
      ]);
    });
  });
});
