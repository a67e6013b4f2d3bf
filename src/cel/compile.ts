/**
 * Compiling an expression: parse, check the limits and the names it uses, instrument its
 * comprehensions with the iteration budget, plan it once and keep the plan in a bounded cache.
 */
import { celEnv, celFunc, CelScalar, isCelList, isCelMap, parse, plan, type CelResult } from '@bufbuild/cel';
import { strings } from '@bufbuild/cel/ext';
import { CelEvaluationError } from './errors';
import { COMPILE_CACHE_SIZE, MAX_AST_DEPTH, MAX_AST_NODES, MAX_COMPREHENSION_ITERATIONS, MAX_EXPRESSION_LENGTH } from './limits';

type ParsedExpr = ReturnType<typeof parse>;
type Expr = ParsedExpr['expr'];

/** The one variable an expression may name. */
export const ROOT_VARIABLE = 'ctx';

/** Type names usable as identifiers (`type(x) == string`). */
const TYPE_IDENTIFIERS = new Set(['bool', 'bytes', 'double', 'int', 'uint', 'string', 'list', 'map', 'null_type', 'type', 'dyn']);

/** Functions called with a namespace (`strings.quote(s)` parses as a call on the identifier `strings`). */
const NAMESPACED_FUNCTIONS = new Set(['strings.quote']);

/** Name of the budget function wrapped around every comprehension range; `@` cannot be typed in CEL. */
const BUDGET_FUNCTION = '@iteration_budget';

/** Per-evaluation iteration budget. Evaluation is synchronous, so one module-level counter is safe. */
const budget = { remaining: MAX_COMPREHENSION_ITERATIONS, exceeded: false };

/** Resets the iteration budget before one expression is evaluated. */
export function resetBudget(): void {
  budget.remaining = MAX_COMPREHENSION_ITERATIONS;
  budget.exceeded = false;
}

/** True when the last evaluation ran out of iterations (even if `||` or `&&` absorbed the error). */
export function budgetExceeded(): boolean {
  return budget.exceeded;
}

const budgetFunction = celFunc(BUDGET_FUNCTION, [CelScalar.DYN], CelScalar.DYN, function (range) {
  const size = isCelList(range) || isCelMap(range) ? range.size : 0;
  budget.remaining -= size;
  if (budget.remaining < 0) {
    budget.exceeded = true;
    throw new Error(`comprehensions iterate more than ${MAX_COMPREHENSION_ITERATIONS} times`);
  }
  return range;
});

const env = celEnv({ funcs: [...strings, budgetFunction] });

export interface CompiledExpression {
  source: string;
  /** Runs the plan; returns a CelError rather than throwing for evaluation errors. */
  run(bindings: { ctx: unknown }): CelResult;
  /** "line L, column C" of an AST node, for error messages. */
  position(exprId: bigint | undefined): string | undefined;
}

const cache = new Map<string, CompiledExpression>();

/** Compiles `source` once; later calls hit the cache (least recently used entries are evicted). */
export function compile(source: string): CompiledExpression {
  const hit = cache.get(source);
  if (hit) {
    cache.delete(source);
    cache.set(source, hit);
    return hit;
  }
  const compiled = compileUncached(source);
  cache.set(source, compiled);
  if (cache.size > COMPILE_CACHE_SIZE) {
    const oldest = cache.keys().next();
    if (!oldest.done) cache.delete(oldest.value);
  }
  return compiled;
}

function compileUncached(source: string): CompiledExpression {
  if (source.length > MAX_EXPRESSION_LENGTH) {
    throw new CelEvaluationError('ERR_CEL_LIMIT', `expression is too long: ${source.length} characters, at most ${MAX_EXPRESSION_LENGTH}`);
  }
  if (source.trim() === '') throw new CelEvaluationError('ERR_CEL_SYNTAX', 'expression is empty');
  const parsed = parseSource(source);
  const positionOf = (exprId: bigint | undefined): string | undefined => {
    if (exprId === undefined) return undefined;
    const offset = parsed.sourceInfo?.positions[exprId.toString()];
    return offset === undefined ? undefined : lineColumn(source, offset);
  };
  inspect(parsed.expr, positionOf);
  instrumentComprehensions(parsed.expr);
  let evaluate: (bindings: { ctx: unknown }) => CelResult;
  try {
    evaluate = plan(env, parsed.expr) as (bindings: { ctx: unknown }) => CelResult;
  } catch (err) {
    throw new CelEvaluationError('ERR_CEL_SYNTAX', `invalid expression: ${(err as Error).message}`);
  }
  return { source, run: evaluate, position: positionOf };
}

function parseSource(source: string): ParsedExpr {
  try {
    return parse(source);
  } catch (err) {
    if (err instanceof RangeError) {
      throw new CelEvaluationError('ERR_CEL_LIMIT', `expression is nested too deeply (at most ${MAX_AST_DEPTH} levels)`);
    }
    const e = err as { rawMessage?: unknown; message?: unknown; location?: { start?: { line?: number; column?: number } } };
    const start = e.location?.start;
    const where = start?.line !== undefined && start.column !== undefined ? ` at line ${start.line}, column ${start.column}` : '';
    const detail = typeof e.rawMessage === 'string' ? e.rawMessage : String(e.message ?? err);
    throw new CelEvaluationError('ERR_CEL_SYNTAX', `syntax error${where}: ${detail}`);
  }
}

function lineColumn(source: string, offset: number): string {
  let line = 1;
  let lineStart = 0;
  for (let i = 0; i < offset && i < source.length; i++) {
    if (source.charCodeAt(i) === 10) {
      line++;
      lineStart = i + 1;
    }
  }
  return `line ${line}, column ${offset - lineStart + 1}`;
}

/** Scope of comprehension variables, as a linked list. */
interface Scope {
  name: string;
  parent: Scope | undefined;
}

function inScope(scope: Scope | undefined, name: string): boolean {
  for (let s = scope; s; s = s.parent) if (s.name === name) return true;
  return false;
}

function push(scope: Scope | undefined, ...names: string[]): Scope | undefined {
  let result = scope;
  for (const name of names) if (name !== '') result = { name, parent: result };
  return result;
}

/**
 * Checks depth, node count and names, without recursion (a long `a + b + ...` chain is a deep
 * tree, and this runs before the depth is known).
 */
function inspect(root: Expr, positionOf: (id: bigint | undefined) => string | undefined): void {
  const work: Array<{ expr: Expr; depth: number; scope: Scope | undefined }> = [{ expr: root, depth: 1, scope: undefined }];
  let nodes = 0;
  for (let item = work.pop(); item; item = work.pop()) {
    const { expr, depth, scope } = item;
    nodes++;
    if (nodes > MAX_AST_NODES) {
      throw new CelEvaluationError('ERR_CEL_LIMIT', `expression is too big: more than ${MAX_AST_NODES} nodes`);
    }
    if (depth > MAX_AST_DEPTH) {
      throw new CelEvaluationError('ERR_CEL_LIMIT', `expression is nested too deeply (at most ${MAX_AST_DEPTH} levels)`);
    }
    const next = (child: Expr | undefined, childScope: Scope | undefined = scope): void => {
      if (child) work.push({ expr: child, depth: depth + 1, scope: childScope });
    };
    const kind = expr.exprKind;
    switch (kind.case) {
      case 'identExpr': {
        const name = kind.value.name;
        if (name !== ROOT_VARIABLE && !inScope(scope, name) && !TYPE_IDENTIFIERS.has(name)) {
          const where = positionOf(expr.id);
          throw new CelEvaluationError(
            'ERR_CEL_UNKNOWN_NAME',
            `unknown name "${name}"${where ? ` at ${where}` : ''}: only ${ROOT_VARIABLE} is defined (ctx.trigger.<field>, ctx.steps.<id>.<field>)`,
          );
        }
        break;
      }
      case 'selectExpr':
        next(kind.value.operand);
        break;
      case 'callExpr': {
        const target = kind.value.target;
        const namespaced =
          target?.exprKind.case === 'identExpr' && NAMESPACED_FUNCTIONS.has(`${target.exprKind.value.name}.${kind.value.function}`);
        if (!namespaced) next(target);
        for (const arg of kind.value.args) next(arg);
        break;
      }
      case 'listExpr':
        for (const element of kind.value.elements) next(element);
        break;
      case 'structExpr':
        for (const entry of kind.value.entries) {
          if (entry.keyKind.case === 'mapKey') next(entry.keyKind.value);
          next(entry.value);
        }
        break;
      case 'comprehensionExpr': {
        const c = kind.value;
        next(c.iterRange);
        next(c.accuInit);
        const loopScope = push(scope, c.accuVar, c.iterVar, c.iterVar2);
        next(c.loopCondition, loopScope);
        next(c.loopStep, loopScope);
        next(c.result, push(scope, c.accuVar));
        break;
      }
      default:
        break;
    }
  }
}

/** Wraps the range of every comprehension in the budget function. */
function instrumentComprehensions(root: Expr): void {
  let nextId = 1_000_000n;
  const work: Expr[] = [root];
  for (let expr = work.pop(); expr; expr = work.pop()) {
    const kind = expr.exprKind;
    switch (kind.case) {
      case 'selectExpr':
        if (kind.value.operand) work.push(kind.value.operand);
        break;
      case 'callExpr':
        if (kind.value.target) work.push(kind.value.target);
        work.push(...kind.value.args);
        break;
      case 'listExpr':
        work.push(...kind.value.elements);
        break;
      case 'structExpr':
        for (const entry of kind.value.entries) {
          if (entry.keyKind.case === 'mapKey') work.push(entry.keyKind.value);
          if (entry.value) work.push(entry.value);
        }
        break;
      case 'comprehensionExpr': {
        const c = kind.value;
        for (const child of [c.iterRange, c.accuInit, c.loopCondition, c.loopStep, c.result]) if (child) work.push(child);
        if (c.iterRange) {
          c.iterRange = {
            $typeName: 'cel.expr.Expr',
            id: nextId++,
            exprKind: {
              case: 'callExpr',
              value: { $typeName: 'cel.expr.Expr.Call', function: BUDGET_FUNCTION, args: [c.iterRange] },
            },
          } as Expr;
        }
        break;
      }
      default:
        break;
    }
  }
}
