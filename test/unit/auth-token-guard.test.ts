/**
 * The token endpoint's flood guards (src/auth/token-guard.ts): the per-source token bucket on an
 * injected clock (no waiting), its eviction when the map is full, and the cap on slow verifications.
 */
import { ConcurrencyCap, createTokenGuard, RateLimiter } from '../../src/auth/token-guard';
import { GuardRefusal } from '../../src/errors';

/** A clock the test moves. */
function clock(start = 1_000_000): { now: () => number; advance: (ms: number) => void } {
  let t = start;
  return { now: () => t, advance: (ms) => (t += ms) };
}

function refusal(fn: () => void): GuardRefusal {
  try {
    fn();
  } catch (err) {
    if (err instanceof GuardRefusal) return err;
    throw err;
  }
  throw new Error('expected a refusal');
}

describe('RateLimiter', () => {
  it('allows perMinute requests at once, then refuses with 429 and a Retry-After', () => {
    const c = clock();
    const limiter = new RateLimiter(3, 100, c.now);
    limiter.take('a');
    limiter.take('a');
    limiter.take('a');
    const refused = refusal(() => limiter.take('a'));
    expect(refused.status).toBe(429);
    expect(refused.name).toBe('GuardRefusal');
    expect(refused.message).toBe('too many token requests from this address; retry later');
    // One token refills in 20 s at 3 per minute.
    expect(refused.retryAfterSeconds).toBe(20);
  });

  it('counts sources apart', () => {
    const c = clock();
    const limiter = new RateLimiter(1, 100, c.now);
    limiter.take('a');
    limiter.take('b');
    expect(() => limiter.take('a')).toThrow(GuardRefusal);
    expect(() => limiter.take('b')).toThrow(GuardRefusal);
  });

  it('refills continuously: one token after 60/perMinute seconds, not a millisecond before', () => {
    const c = clock();
    const limiter = new RateLimiter(3, 100, c.now);
    for (let i = 0; i < 3; i += 1) limiter.take('a');
    c.advance(19_999);
    const refused = refusal(() => limiter.take('a'));
    // Almost a whole token is back: at least 1 s still.
    expect(refused.retryAfterSeconds).toBe(1);
    c.advance(1);
    expect(() => limiter.take('a')).not.toThrow();
    expect(() => limiter.take('a')).toThrow(GuardRefusal);
  });

  it('a refused request does not cost a token; the Retry-After shrinks as time passes', () => {
    const c = clock();
    const limiter = new RateLimiter(6, 100, c.now);
    for (let i = 0; i < 6; i += 1) limiter.take('a');
    expect(refusal(() => limiter.take('a')).retryAfterSeconds).toBe(10);
    c.advance(4_000);
    expect(refusal(() => limiter.take('a')).retryAfterSeconds).toBe(6);
    c.advance(5_500);
    expect(refusal(() => limiter.take('a')).retryAfterSeconds).toBe(1);
    c.advance(500);
    limiter.take('a');
  });

  it('never holds more than perMinute tokens, however long a source was idle', () => {
    const c = clock();
    const limiter = new RateLimiter(2, 100, c.now);
    limiter.take('a');
    c.advance(3_600_000);
    limiter.take('a');
    limiter.take('a');
    expect(() => limiter.take('a')).toThrow(GuardRefusal);
  });

  it('when the map is full it drops sources whose bucket is full again, keeping the others', () => {
    const c = clock();
    const limiter = new RateLimiter(2, 2, c.now);
    limiter.take('a');
    limiter.take('a');
    c.advance(60_000);
    // a's bucket is full again by now; b is fresh and half spent.
    limiter.take('b');
    // The map is full: c evicts a (full), not b.
    limiter.take('c');
    limiter.take('b');
    expect(() => limiter.take('b')).toThrow(GuardRefusal);
    // a was forgotten: it starts full again.
    limiter.take('a');
  });

  it('a full bucket is dropped even when it is not the oldest; then nothing else is', () => {
    const c = clock();
    const limiter = new RateLimiter(2, 2, c.now);
    // a (the oldest) empties its bucket: full again only after 60 s.
    limiter.take('a');
    limiter.take('a');
    // b spends one token: full again after exactly 30 s.
    limiter.take('b');
    c.advance(30_000);
    // The map is full: c drops b (full), and keeps a (one token back, not full).
    limiter.take('c');
    limiter.take('a');
    expect(() => limiter.take('a')).toThrow(GuardRefusal);
  });

  it('when the map is full of busy sources it drops the least recently used one', () => {
    const c = clock();
    const limiter = new RateLimiter(1, 2, c.now);
    limiter.take('a');
    limiter.take('b');
    // a used again (refused, still counts as use): b is now the oldest.
    expect(() => limiter.take('a')).toThrow(GuardRefusal);
    limiter.take('c');
    // a was kept (still empty); b was evicted: it starts full again.
    expect(() => limiter.take('a')).toThrow(GuardRefusal);
    limiter.take('b');
  });

  it('with room in the map, nothing is evicted', () => {
    const c = clock();
    const limiter = new RateLimiter(1, 3, c.now);
    limiter.take('a');
    limiter.take('b');
    limiter.take('c');
    expect(() => limiter.take('a')).toThrow(GuardRefusal);
    expect(() => limiter.take('b')).toThrow(GuardRefusal);
  });

  it('reads the real clock when none is given', () => {
    const limiter = new RateLimiter(1);
    limiter.take('a');
    expect(() => limiter.take('a')).toThrow(GuardRefusal);
  });
});

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
    expect(refused).toMatchObject({ status: 503, retryAfterSeconds: 7, message: 'too many client authentications in progress; retry later' });
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

describe('createTokenGuard', () => {
  it('builds both guards from the limits', () => {
    const guard = createTokenGuard({ perSourcePerMinute: 4, maxSlowVerifications: 3 });
    expect(guard.perSource.perMinute).toBe(4);
    expect(guard.slowVerifications.max).toBe(3);
    for (let i = 0; i < 4; i += 1) guard.perSource.take('x');
    expect(() => guard.perSource.take('x')).toThrow(GuardRefusal);
  });
});
