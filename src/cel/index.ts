/**
 * CEL for automation steps: `checkExpression` when an automation is saved, `evaluate` /
 * `evaluateAll` when a run executes a step. Expressions see one variable, `ctx`:
 * `ctx.trigger` (the webhook JSON body) and `ctx.steps.<id>.<field>` (outputs of earlier steps).
 *
 * Hostile expressions are bounded (see ./limits): length, AST depth and node count at compile
 * time; at evaluation a comprehension iteration budget, a deterministic cost budget charged by
 * the interpreter per operation and operand size (./cost), and a result size cap. The same
 * expression over the same input gets the same verdict on every machine; no watchdog runs.
 */
import { isCelError } from '@bufbuild/cel';
import { compile, type CompiledExpression } from './compile';
import { fromCelValue, toCelInput } from './convert';
import { budgetExceeded, BudgetExceeded, resetBudget } from './cost';
import { CelEvaluationError } from './errors';
import { MAX_COMPREHENSION_ITERATIONS, MAX_EVALUATION_COST } from './limits';

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
    compile(source);
    return undefined;
  } catch (err) {
    if (err instanceof CelEvaluationError) return err.message;
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
export function evaluateAll(expressions: Record<string, string>, ctx: CelContext): Record<string, unknown> {
  let field: string | undefined;
  try {
    const bindings = { ctx: toCelInput({ trigger: ctx.trigger, steps: ctx.steps }) };
    const out: Record<string, unknown> = {};
    for (const [name, source] of Object.entries(expressions)) {
      field = name;
      out[name] = run(compile(source), bindings);
    }
    return out;
  } catch (err) {
    const state = { field };
    if (err instanceof CelEvaluationError) {
      err.field ??= state.field;
      throw err;
    }
    if (err instanceof RangeError) {
      throw new CelEvaluationError('ERR_CEL_LIMIT', `evaluation ran out of resources: ${err.message}`, state.field);
    }
    throw err;
  }
}

function run(compiled: CompiledExpression, bindings: { ctx: unknown }): unknown {
  resetBudget();
  let result: ReturnType<CompiledExpression['run']> | undefined;
  try {
    result = compiled.run(bindings);
  } catch (err) {
    // The planner turns throws into CEL errors; this only guards against one slipping through.
    if (!(err instanceof BudgetExceeded)) throw err;
  }
  const exceeded = budgetExceeded();
  if (exceeded === 'iterations') {
    throw new CelEvaluationError('ERR_CEL_LIMIT', `comprehensions iterate more than ${MAX_COMPREHENSION_ITERATIONS} times`);
  }
  if (exceeded === 'cost') {
    throw new CelEvaluationError('ERR_CEL_LIMIT', `evaluation exceeds the cost budget of ${MAX_EVALUATION_COST}`);
  }
  if (result === undefined) throw new CelEvaluationError('ERR_CEL_EVALUATION', 'evaluation produced no value');
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
