/**
 * One deadline for a call to Temporal: the adapter's calls (starts, describes, run control) each
 * race it, so a request never waits on the engine longer than its own budget.
 */

/** Rejects with "deadline exceeded" when `fn` has not settled by `deadline` (epoch ms). */
export async function raceDeadline<T>(deadline: number, fn: () => Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('deadline exceeded')), Math.max(0, deadline - Date.now()));
  });
  const call = fn();
  // When the deadline wins, the call may still settle later (e.g. a retry failing once the
  // connection is closed): that late rejection is expected and must not go unhandled.
  call.catch(() => undefined);
  try {
    return await Promise.race([call, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
