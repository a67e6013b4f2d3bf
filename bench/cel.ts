/**
 * CEL: evaluations per second of one typical condition through the project's module (src/cel:
 * compile cache, payload conversion, iteration and cost budgets, result conversion) against
 * the raw @bufbuild/cel library (parsed and planned once, evaluated over the plain payload).
 * Rounds alternate between the two; each side keeps its best round.
 */
import { celEnv, parse, plan } from '@bufbuild/cel';
import { evaluate } from '../src/cel';

export const CEL_EXPRESSION =
  'ctx.trigger.user.email.endsWith("@acme.com") && ctx.trigger.count > 3 && ctx.trigger.tags.exists(t, t == "vip")';

export interface CelResult {
  perSec: number;
  rawPerSec: number;
  ratioToRaw: number;
}

/** Calls `fn` in batches for `ms` milliseconds; returns calls per second. */
function rate(fn: () => unknown, ms: number): number {
  let calls = 0;
  const start = performance.now();
  let now = start;
  while (now - start < ms) {
    for (let i = 0; i < 200; i++) fn();
    calls += 200;
    now = performance.now();
  }
  return calls / ((now - start) / 1000);
}

export function runCelBench(options: { roundMs: number; rounds: number }): CelResult {
  const trigger = {
    user: { email: 'dana@acme.com', name: 'Dana', id: 'u-1842' },
    count: 7,
    tags: ['new', 'eu', 'vip', 'annual'],
    plan: 'enterprise',
  };
  const ctx = { trigger, steps: {} };

  const raw = plan(celEnv(), parse(CEL_EXPRESSION).expr);
  const rawEval = (): unknown => raw({ ctx });
  const projectEval = (): unknown => evaluate(CEL_EXPRESSION, ctx);

  for (const [name, fn] of [
    ['raw', rawEval],
    ['project', projectEval],
  ] as const) {
    const value = fn();
    if (value !== true) throw new Error(`CEL ${name} evaluated to ${String(value)}, expected true`);
  }
  // Warm-up: let V8 optimise both paths.
  rate(rawEval, 300);
  rate(projectEval, 300);

  let best = { raw: 0, project: 0 };
  for (let round = 0; round < options.rounds; round++) {
    best = {
      raw: Math.max(best.raw, rate(rawEval, options.roundMs)),
      project: Math.max(best.project, rate(projectEval, options.roundMs)),
    };
  }
  return {
    perSec: best.project,
    rawPerSec: best.raw,
    ratioToRaw: best.project / best.raw,
  };
}
