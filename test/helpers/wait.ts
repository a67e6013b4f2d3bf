/**
 * Waiting in tests, in one place: on a condition, never on a guess of how long something takes (a
 * loaded machine makes things slow, not wrong). Fixed pauses are for pacing only. A wait that runs
 * out of time fails the test: it throws, naming what it waited for and the last value it saw.
 */
import { inspect } from 'node:util';

/** Resolves after `ms` milliseconds. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export interface PollOptions {
  /** Give up (throw) after this long. */
  timeoutMs?: number;
  /** Pause between two calls. */
  intervalMs?: number;
  /** What the wait is for, in the error when the time is up (by default the source of `done`). */
  what?: string;
}

/** The error of a wait whose time ran out: what it waited for, and the last value it saw. */
export class WaitTimeout extends Error {
  constructor(
    readonly what: string,
    readonly timeoutMs: number,
    readonly lastValue: unknown,
  ) {
    super(
      `timed out after ${timeoutMs} ms waiting for ${what}; last value: ${inspect(lastValue, { depth: 6, breakLength: 120, maxStringLength: 2000 })}`,
    );
    this.name = 'WaitTimeout';
  }
}

/**
 * Calls `fn` until `done` holds for its answer and returns that answer; throws a WaitTimeout when
 * the time is up (an exception of `fn` ends the wait at once).
 */
export async function poll<T>(
  fn: () => T | Promise<T>,
  done: (value: T) => boolean,
  options: PollOptions | number = {},
): Promise<T> {
  const {
    timeoutMs = 90_000,
    intervalMs = 250,
    what = done.toString(),
  } = typeof options === 'number' ? { timeoutMs: options } : options;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await fn();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new WaitTimeout(what, timeoutMs, value);
    await sleep(intervalMs);
  }
}

/** Waits until `condition` holds; throws naming `what` when the time is up. */
export async function until(
  condition: () => boolean | Promise<boolean>,
  what: string,
  options: PollOptions = {},
): Promise<void> {
  // eslint-disable-next-line no-restricted-syntax -- its answer is only `true`: the wait is the assertion
  await poll(condition, (value) => value, { timeoutMs: 30_000, intervalMs: 50, what, ...options });
}
