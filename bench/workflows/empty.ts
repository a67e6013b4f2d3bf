/**
 * The one workflow of the idle-memory floor's worker (bench/memory-floor.js): it returns at once.
 * A bundle of its own, so that the floor's workflow thread holds the SDK's workflow runtime and
 * nothing else. Deterministic: imports nothing.
 */
export async function empty(): Promise<string> {
  return 'done';
}
