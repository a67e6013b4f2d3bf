/**
 * CEL: evaluations per second of one typical condition through the project's module (src/cel:
 * compile cache, payload conversion, iteration budget, result conversion, hard time limit) against
 * the raw @bufbuild/cel library (parsed and planned once, evaluated over the plain payload).
 * Rounds alternate between the two; each side keeps its best round.
 */
import { celEnv, parse, plan } from '@bufbuild/cel';
import { evaluate } from '../src/cel';
import { compile, resetBudget } from '../src/cel/compile';
import { fromCelValue, toCelInput } from '../src/cel/convert';

export const CEL_EXPRESSION =
  'ctx.trigger.user.email.endsWith("@acme.com") && ctx.trigger.count > 3 && ctx.trigger.tags.exists(t, t == "vip")';

export interface CelResult {
  perSec: number;
  rawPerSec: number;
  ratioToRaw: number;
  /** Diagnostic, not in the JSON: the project's path without the wall-clock limit (vm timeout). */
  withoutTimeLimitPerSec: number;
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
  // What src/cel does per call minus the vm timeout: cache lookup, conversion, budget, result.
  const untimedEval = (): unknown => {
    const compiled = compile(CEL_EXPRESSION);
    resetBudget();
    return fromCelValue(compiled.run({ ctx: toCelInput({ trigger: ctx.trigger, steps: ctx.steps }) }));
  };

  for (const [name, fn] of [['raw', rawEval], ['project', projectEval], ['untimed', untimedEval]] as const) {
    const value = fn();
    if (value !== true) throw new Error(`CEL ${name} evaluated to ${String(value)}, expected true`);
  }
  // Warm-up: let V8 optimise all three paths.
  rate(rawEval, 300);
  rate(projectEval, 300);
  rate(untimedEval, 300);

  let best = { raw: 0, project: 0, untimed: 0 };
  for (let round = 0; round < options.rounds; round++) {
    best = {
      raw: Math.max(best.raw, rate(rawEval, options.roundMs)),
      project: Math.max(best.project, rate(projectEval, options.roundMs)),
      untimed: Math.max(best.untimed, rate(untimedEval, options.roundMs)),
    };
  }
  return {
    perSec: best.project,
    rawPerSec: best.raw,
    ratioToRaw: best.project / best.raw,
    withoutTimeLimitPerSec: best.untimed,
  };
}
