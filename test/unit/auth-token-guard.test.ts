/**
 * The token endpoint's cap on slow verifications (src/auth/token-guard.ts); its limits shared
 * through the store are tested on the stores (test/integration/token-limits.test.ts), and the source
 * key (an IPv6 /64) with the other address rules (test/unit/net-source-prefix.test.ts).
 */
import { ConcurrencyCap } from '../../src/auth/token-guard';
import { GuardRefusal } from '../../src/errors';

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
