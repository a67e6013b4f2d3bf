/**
 * A seeded stand-in for Math.random in the long randomized tests (the drill, the crash test): the
 * seed comes from TEST_RANDOM_SEED when set, else is drawn once, and the test prints it at the start
 * and names it in its failures, so that a failing order of deliveries can be replayed with
 * `TEST_RANDOM_SEED=<seed>` (as fast-check's runs do with FC_SEED).
 */
import { randomInt } from 'node:crypto';

export interface SeededRandom {
  seed: number;
  /** Uniform in [0, 1), like Math.random. */
  next(): number;
  /** How to replay this sequence. */
  replay: string;
}

export function seededRandom(env: NodeJS.ProcessEnv = process.env): SeededRandom {
  const raw = env.TEST_RANDOM_SEED;
  const seed = raw === undefined || raw === '' ? randomInt(2 ** 31) : Number(raw);
  if (!Number.isSafeInteger(seed)) throw new Error(`TEST_RANDOM_SEED must be an integer, got ${JSON.stringify(raw)}`);
  // mulberry32: small, fast and good enough for picking orders and coin flips.
  let state = seed >>> 0;
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return { seed, next, replay: `TEST_RANDOM_SEED=${seed}` };
}
