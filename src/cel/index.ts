/**
 * CEL for automation steps: `checkExpression` when an automation is saved, `evaluate` /
 * `evaluateAll` when a run executes a step. Expressions see one variable, `ctx`:
 * `ctx.trigger` (the webhook JSON body) and `ctx.steps.<id>.<field>` (outputs of earlier steps).
 *
 * Hostile expressions are bounded (see ./limits): length, AST depth and node count at compile
 * time; a comprehension iteration budget, a result size cap and a hard wall-clock limit at
 * evaluation. The wall-clock limit runs the synchronous evaluation inside
 * `vm.Script#runInContext({ timeout })`: V8's watchdog then terminates the running JavaScript,
 * whichever context its functions come from, and the call throws.
 */
import vm from 'node:vm';
import { isCelError } from '@bufbuild/cel';
import { budgetExceeded, compile, resetBudget, type CompiledExpression } from './compile';
import { fromCelValue, toCelInput } from './convert';
import { CelEvaluationError } from './errors';
import { EVALUATION_TIME_LIMIT_MS, MAX_COMPREHENSION_ITERATIONS } from './limits';

export { CelEvaluationError, type CelErrorCode } from './errors';
export * as celLimits from './limits';

/** What an expression sees as `ctx`. */
export interface CelContext {
  trigger: unknown;
  steps: Record<string, unknown>;
}

/**
 * Save-time check: returns a message (syntax error with its position, too long, too deep, too big,
 * a name other than `ctx`) or undefined when the expression compiles.
 */
export function checkExpression(source: string): string | undefined {
  if (typeof source !== 'string') return 'expression must be a string';
  try {
    withTimeLimit(() => compile(source), EVALUATION_TIME_LIMIT_MS);
    return undefined;
  } catch (err) {
    if (err instanceof CelEvaluationError) return err.message;
    if ((err as { code?: unknown }).code === 'ERR_SCRIPT_EXECUTION_TIMEOUT') return 'expression takes too long to compile';
    throw err;
  }
}

/** Evaluates one expression; throws CelEvaluationError. Returns a JSON-compatible value. */
export function evaluate(source: string, ctx: CelContext): unknown {
  return evaluateAll({ value: source }, ctx).value;
}

/**
 * Evaluates a map of expressions over one context, converted to CEL values once. Throws
 * CelEvaluationError with `field` set to the name of the failing expression.
 */
export function evaluateAll(expressions: Record<string, string>, ctx: CelContext, options: { timeLimitMs?: number } = {}): Record<string, unknown> {
  const state: { field: string | undefined } = { field: undefined };
  try {
    return withTimeLimit(() => {
      const bindings = { ctx: toCelInput({ trigger: ctx.trigger, steps: ctx.steps }) };
      const out: Record<string, unknown> = {};
      for (const [field, source] of Object.entries(expressions)) {
        state.field = field;
        out[field] = run(compile(source), bindings);
      }
      return out;
    }, options.timeLimitMs ?? EVALUATION_TIME_LIMIT_MS);
  } catch (err) {
    if (err instanceof CelEvaluationError) {
      err.field ??= state.field;
      throw err;
    }
    if ((err as { code?: unknown }).code === 'ERR_SCRIPT_EXECUTION_TIMEOUT') {
      const limit = options.timeLimitMs ?? EVALUATION_TIME_LIMIT_MS;
      throw new CelEvaluationError('ERR_CEL_TIMEOUT', `evaluation exceeded the time limit of ${limit} ms`, state.field);
    }
    if (err instanceof RangeError) {
      throw new CelEvaluationError('ERR_CEL_LIMIT', `evaluation ran out of resources: ${err.message}`, state.field);
    }
    throw err;
  }
}

function run(compiled: CompiledExpression, bindings: { ctx: unknown }): unknown {
  resetBudget();
  const result = compiled.run(bindings);
  if (budgetExceeded()) {
    throw new CelEvaluationError('ERR_CEL_LIMIT', `comprehensions iterate more than ${MAX_COMPREHENSION_ITERATIONS} times`);
  }
  if (isCelError(result)) {
    const where = compiled.position(result.exprId);
    throw new CelEvaluationError('ERR_CEL_EVALUATION', `${result.message}${where ? ` at ${where}` : ''} in ${quote(compiled.source)}`);
  }
  return fromCelValue(result);
}

function quote(source: string): string {
  const short = source.length > 200 ? `${source.slice(0, 200)}…` : source;
  return JSON.stringify(short);
}

/** One shared context and script: creating a context per call would cost more than most evaluations. */
let sandbox: { context: vm.Context; script: vm.Script; slot: { fn: (() => unknown) | undefined } } | undefined;

/**
 * Runs `fn` synchronously under V8's execution timeout (throws an error with code
 * ERR_SCRIPT_EXECUTION_TIMEOUT when exceeded).
 */
function withTimeLimit<T>(fn: () => T, timeLimitMs: number): T {
  if (!sandbox) {
    const slot: { fn: (() => unknown) | undefined } = { fn: undefined };
    sandbox = { context: vm.createContext({ slot }), script: new vm.Script('slot.fn()'), slot };
  }
  const { context, script, slot } = sandbox;
  if (slot.fn !== undefined) return fn(); // re-entered from inside a limited call: already bounded
  slot.fn = fn;
  try {
    return script.runInContext(context, { timeout: timeLimitMs }) as T;
  } finally {
    slot.fn = undefined;
  }
}
