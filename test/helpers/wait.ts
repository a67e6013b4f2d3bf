/**
 * Waiting in tests, in one place: on a condition, never on a guess of how long something takes (a
 * loaded machine makes things slow, not wrong). Fixed pauses are for pacing only.
 */

/** Resolves after `ms` milliseconds. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export interface PollOptions {
  /** Give up after this long. */
  timeoutMs?: number;
  /** Pause between two calls. */
  intervalMs?: number;
}

/**
 * Calls `fn` until `done` holds for its answer, or the time is up; returns the last answer either
 * way, so the caller's assertion on it says what was wrong.
 */
export async function poll<T>(fn: () => T | Promise<T>, done: (value: T) => boolean, options: PollOptions | number = {}): Promise<T> {
  const { timeoutMs = 90_000, intervalMs = 250 } = typeof options === 'number' ? { timeoutMs: options } : options;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await fn();
    if (done(value) || Date.now() > deadline) return value;
    await sleep(intervalMs);
  }
}

/** Waits until `condition` holds; throws naming `what` when the time is up. */
export async function until(condition: () => boolean | Promise<boolean>, what: string, options: PollOptions = {}): Promise<void> {
  const held = await poll(condition, (value) => value, { timeoutMs: 30_000, intervalMs: 50, ...options });
  if (!held) throw new Error(`timed out waiting for ${what}`);
}
