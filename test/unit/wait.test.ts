/** test/helpers/wait.ts: a wait that runs out of time fails, naming what it waited for and what it saw last. */
import { poll, until, WaitTimeout } from '../helpers/wait';

describe('waiting in tests', () => {
  it('poll returns the answer that satisfied it', async () => {
    let n = 0;
    expect(
      await poll(
        () => ++n,
        (value) => value === 3,
        { intervalMs: 1 },
      ),
    ).toBe(3);
  });

  it('poll throws when the time is up, naming what it waited for and the last value', async () => {
    let n = 0;
    const failure = await poll(
      () => ({ count: ++n }),
      (value) => value.count < 0,
      { timeoutMs: 50, intervalMs: 5, what: 'a negative count' },
    ).then(
      () => 'returned',
      (err: unknown) => err,
    );
    expect(failure).toBeInstanceOf(WaitTimeout);
    expect((failure as WaitTimeout).message).toMatch(
      /^timed out after 50 ms waiting for a negative count; last value: \{ count: \d+ \}$/,
    );
    expect((failure as WaitTimeout).lastValue).toEqual({ count: n });
  });

  it('poll names the predicate when no `what` is given', async () => {
    await expect(
      poll(
        () => 1,
        (value) => value === 2,
        20,
      ),
    ).rejects.toThrow(/waiting for \(value\) ?=> ?value === 2; last value: 1$/);
  });

  it('until throws naming `what`', async () => {
    await expect(until(() => false, 'the impossible', { timeoutMs: 20, intervalMs: 5 })).rejects.toThrow(
      'waiting for the impossible; last value: false',
    );
  });
});
