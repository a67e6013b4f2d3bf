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
import { isCelError, parse } from '@bufbuild/cel';
import { literalPrefix, selectedSecrets } from './secret-form';
import { compile, SECRETS_VARIABLE, type CompiledExpression } from './compile';
import { fromCelValue, toCelInput } from './convert';
import { budgetExceeded, BudgetExceeded, resetBudget } from './cost';
import { MAX_COMPREHENSION_ITERATIONS, MAX_EVALUATION_COST } from './limits';
import { CelEvaluationError } from '../errors';

export * as celLimits from './limits';
export { costUsed } from './cost';

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

/**
 * Save-time check of a secret-bearing expression (a callWebhook header value that reads
 * `secrets.<name>`): only `secrets.<name>` and literals, no `ctx`. Answers the problem, or the
 * names of the secrets it reads.
 */
export function checkSecretExpression(
  source: string,
): { problem: string } | { problem?: undefined; secrets: string[] } {
  try {
    return { secrets: [...compile(source, SECRETS_VARIABLE).secrets] };
  } catch (err) {
    if (err instanceof CelEvaluationError) return { problem: err.message };
    throw err;
  }
}

/**
 * Evaluates a secret-bearing expression with `secrets` bound to `values` (name → plain value; the
 * caller resolves every name the expression reads). Throws CelEvaluationError; its message may
 * quote the expression, never a value bound to it, but callers that hold real secrets should still
 * report only the error code.
 */
export function evaluateSecretExpression(source: string, values: Record<string, string>): unknown {
  try {
    const compiled = compile(source, SECRETS_VARIABLE);
    const secrets: Record<string, string> = Object.create(null) as Record<string, string>;
    for (const name of compiled.secrets) {
      const value = values[name];
      if (typeof value !== 'string')
        throw new CelEvaluationError('ERR_CEL_EVALUATION', `secret "${name}" is not available`);
      secrets[name] = value;
    }
    return run(compiled, { [SECRETS_VARIABLE]: toCelInput(secrets) });
  } catch (err) {
    if (err instanceof RangeError)
      throw new CelEvaluationError('ERR_CEL_LIMIT', `evaluation ran out of resources: ${err.message}`);
    throw err;
  }
}

/**
 * The literal text an expression starts with (`complete`: it is only literals), or undefined; for
 * finding the origin of a callWebhook URL on save. Never throws (an expression that does not parse
 * has no prefix).
 */
export function constantPrefix(source: string): { text: string; complete: boolean } | undefined {
  try {
    return literalPrefix(parse(source).expr);
  } catch {
    return undefined;
  }
}

/**
 * Every secret name an expression selects as `secrets.<name>`, whatever else it does (an empty
 * list when it does not parse): for migrating automations saved before the closed grammar.
 */
export function secretsSelectedBy(source: string): string[] {
  try {
    return selectedSecrets(parse(source).expr, SECRETS_VARIABLE);
  } catch {
    return [];
  }
}

/** The names a secret-bearing expression reads; throws CelEvaluationError when it is not one. */
export function secretNames(source: string): string[] {
  return [...compile(source, SECRETS_VARIABLE).secrets];
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

function run(compiled: CompiledExpression, bindings: Record<string, unknown>): unknown {
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
    throw new CelEvaluationError(
      'ERR_CEL_LIMIT',
      `comprehensions iterate more than ${MAX_COMPREHENSION_ITERATIONS} times`,
    );
  }
  if (exceeded === 'cost') {
    throw new CelEvaluationError('ERR_CEL_LIMIT', `evaluation exceeds the cost budget of ${MAX_EVALUATION_COST}`);
  }
  if (result === undefined) throw new CelEvaluationError('ERR_CEL_EVALUATION', 'evaluation produced no value');
  if (isCelError(result)) {
    const where = compiled.position(result.exprId);
    throw new CelEvaluationError(
      'ERR_CEL_EVALUATION',
      `${result.message}${where ? ` at ${where}` : ''} in ${quote(compiled.source)}`,
    );
  }
  return fromCelValue(result);
}

function quote(source: string): string {
  const short = source.length > 200 ? `${source.slice(0, 200)}…` : source;
  return JSON.stringify(short);
}
