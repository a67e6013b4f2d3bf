/**
 * Compiling an expression: parse, check the limits and the names it uses, instrument its
 * comprehensions with the iteration budget, plan it once against the cost-charging environment
 * (./cost) and keep the plan in a bounded cache.
 */
import { celEnv, celFunc, CelScalar, listType, parse, plan, type CelInput, type CelResult } from '@bufbuild/cel';
import { concatLists } from './append-list';
import { strings } from '@bufbuild/cel/ext';
import { checkSecretForm } from './secret-form';
import { BUDGET_FUNCTION, chargingResolver } from './cost';
import { COMPILE_CACHE_SIZE, MAX_AST_DEPTH, MAX_AST_NODES, MAX_EXPRESSION_LENGTH } from './limits';
import { CelEvaluationError } from '../errors';

type ParsedExpr = ReturnType<typeof parse>;
type Expr = ParsedExpr['expr'];

/** The one variable an expression may name. */
export const ROOT_VARIABLE = 'ctx';
/**
 * The variable of a secret-bearing expression (a callWebhook header value): `secrets.<name>`, and
 * nothing else but literals, so the value of a secret depends on no run input.
 */
export const SECRETS_VARIABLE = 'secrets';

/** Which variable an expression may name: `ctx` (every CEL field) or `secrets` (callWebhook header values). */
export type ExpressionRoot = typeof ROOT_VARIABLE | typeof SECRETS_VARIABLE;

/** Type names usable as identifiers (`type(x) == string`). */
const TYPE_IDENTIFIERS = new Set([
  'bool',
  'bytes',
  'double',
  'int',
  'uint',
  'string',
  'list',
  'map',
  'null_type',
  'type',
  'dyn',
]);

/** Functions called with a namespace (`strings.quote(s)` parses as a call on the identifier `strings`). */
const NAMESPACED_FUNCTIONS = new Set(['strings.quote']);

/** Returns the range unchanged; the charging resolver (./cost) pays for its iterations first. */
const budgetFunction = celFunc(
  BUDGET_FUNCTION,
  [CelScalar.DYN, CelScalar.INT],
  CelScalar.DYN,
  (range: unknown) => range as CelInput,
);

/** List `+` without the library's lazy chains (see ./append-list); overrides the standard overload. */
const listConcat = celFunc(
  '_+_',
  [listType(CelScalar.DYN), listType(CelScalar.DYN)],
  listType(CelScalar.DYN),
  concatLists,
);

const baseEnv = celEnv({ funcs: [...strings, budgetFunction, listConcat] });
/** The same environment with every function call charged to the cost budget. */
const env: typeof baseEnv = Object.create(baseEnv, {
  funcs: { value: chargingResolver(baseEnv.funcs) },
}) as typeof baseEnv;

export interface CompiledExpression {
  source: string;
  /** The names read as `secrets.<name>` (secret-bearing expressions only), in order of first use. */
  secrets: string[];
  /** Runs the plan; returns a CelError rather than throwing for evaluation errors. */
  run(bindings: Record<string, unknown>): CelResult;
  /** "line L, column C" of an AST node, for error messages. */
  position(exprId: bigint | undefined): string | undefined;
}

const cache = new Map<string, CompiledExpression>();

/** Compiles `source` once; later calls hit the cache (least recently used entries are evicted). */
export function compile(source: string, root: ExpressionRoot = ROOT_VARIABLE): CompiledExpression {
  const key = root === ROOT_VARIABLE ? source : `${root}\u0000${source}`;
  const hit = cache.get(key);
  if (hit) {
    cache.delete(key);
    cache.set(key, hit);
    return hit;
  }
  const compiled = compileUncached(source, root);
  cache.set(key, compiled);
  if (cache.size > COMPILE_CACHE_SIZE) {
    const oldest = cache.keys().next();
    if (!oldest.done) cache.delete(oldest.value);
  }
  return compiled;
}

function compileUncached(source: string, root: ExpressionRoot): CompiledExpression {
  if (source.length > MAX_EXPRESSION_LENGTH) {
    throw new CelEvaluationError(
      'ERR_CEL_LIMIT',
      `expression is too long: ${source.length} characters, at most ${MAX_EXPRESSION_LENGTH}`,
    );
  }
  if (source.trim() === '') throw new CelEvaluationError('ERR_CEL_SYNTAX', 'expression is empty');
  const parsed = parseSource(source);
  const positionOf = (exprId: bigint | undefined): string | undefined => {
    if (exprId === undefined) return undefined;
    const offset = parsed.sourceInfo?.positions[exprId.toString()];
    return offset === undefined ? undefined : lineColumn(source, offset);
  };
  const secrets = inspect(parsed.expr, positionOf, root);
  if (root === SECRETS_VARIABLE && secrets.length === 0) {
    throw new CelEvaluationError(
      'ERR_CEL_UNKNOWN_NAME',
      `an expression that names ${SECRETS_VARIABLE} must read at least one secret as ${SECRETS_VARIABLE}.<name>`,
    );
  }
  if (root === SECRETS_VARIABLE) checkSecretForm(parsed.expr, SECRETS_VARIABLE, positionOf);
  instrumentComprehensions(parsed.expr);
  let evaluate: (bindings: Record<string, unknown>) => CelResult;
  try {
    evaluate = plan(env, parsed.expr) as (bindings: Record<string, unknown>) => CelResult;
  } catch (err) {
    throw new CelEvaluationError('ERR_CEL_SYNTAX', `invalid expression: ${(err as Error).message}`);
  }
  return { source, secrets, run: evaluate, position: positionOf };
}

function parseSource(source: string): ParsedExpr {
  try {
    return parse(source);
  } catch (err) {
    if (err instanceof RangeError) {
      throw new CelEvaluationError(
        'ERR_CEL_LIMIT',
        `expression is nested too deeply (at most ${MAX_AST_DEPTH} levels)`,
      );
    }
    const e = err as {
      rawMessage?: unknown;
      message?: unknown;
      location?: { start?: { line?: number; column?: number } };
    };
    const start = e.location?.start;
    const where =
      start?.line !== undefined && start.column !== undefined ? ` at line ${start.line}, column ${start.column}` : '';
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
 * tree, and this runs before the depth is known). `variable` is the one free name allowed; for
 * `secrets` it must be read as `secrets.<name>`. Answers the secret names read.
 */
function inspect(
  root: Expr,
  positionOf: (id: bigint | undefined) => string | undefined,
  variable: ExpressionRoot,
): string[] {
  const work: Array<{ expr: Expr; depth: number; scope: Scope | undefined }> = [
    { expr: root, depth: 1, scope: undefined },
  ];
  const secrets: string[] = [];
  let nodes = 0;
  for (let item = work.pop(); item; item = work.pop()) {
    const { expr, depth, scope } = item;
    nodes++;
    if (nodes > MAX_AST_NODES) {
      throw new CelEvaluationError('ERR_CEL_LIMIT', `expression is too big: more than ${MAX_AST_NODES} nodes`);
    }
    if (depth > MAX_AST_DEPTH) {
      throw new CelEvaluationError(
        'ERR_CEL_LIMIT',
        `expression is nested too deeply (at most ${MAX_AST_DEPTH} levels)`,
      );
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
          const at = where ? ` at ${where}` : '';
          if (name === SECRETS_VARIABLE && variable === SECRETS_VARIABLE) {
            throw new CelEvaluationError(
              'ERR_CEL_UNKNOWN_NAME',
              `${SECRETS_VARIABLE}${at} must be read as ${SECRETS_VARIABLE}.<name>`,
            );
          }
          if (name === SECRETS_VARIABLE) {
            throw new CelEvaluationError(
              'ERR_CEL_UNKNOWN_NAME',
              `${SECRETS_VARIABLE}.<name>${at} may be used only in callWebhook header values`,
            );
          }
          throw new CelEvaluationError(
            'ERR_CEL_UNKNOWN_NAME',
            `unknown name "${name}"${at}: only ${ROOT_VARIABLE} is defined (ctx.trigger.<field>, ctx.steps.<id>.<field>)`,
          );
        }
        if (name === ROOT_VARIABLE && variable === SECRETS_VARIABLE && !inScope(scope, name)) {
          const where = positionOf(expr.id);
          throw new CelEvaluationError(
            'ERR_CEL_UNKNOWN_NAME',
            `a header value that reads ${SECRETS_VARIABLE} may not read ${ROOT_VARIABLE}${where ? ` (at ${where})` : ''}: only ${SECRETS_VARIABLE}.<name> and literals`,
          );
        }
        break;
      }
      case 'selectExpr': {
        const operand = kind.value.operand;
        if (
          variable === SECRETS_VARIABLE &&
          operand?.exprKind.case === 'identExpr' &&
          operand.exprKind.value.name === SECRETS_VARIABLE &&
          !inScope(scope, SECRETS_VARIABLE) &&
          !kind.value.testOnly
        ) {
          if (!secrets.includes(kind.value.field)) secrets.push(kind.value.field);
          break;
        }
        next(operand);
        break;
      }
      case 'callExpr': {
        const target = kind.value.target;
        const namespaced =
          target?.exprKind.case === 'identExpr' &&
          NAMESPACED_FUNCTIONS.has(`${target.exprKind.value.name}.${kind.value.function}`);
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
  return secrets;
}

/**
 * Wraps the range of every comprehension in the budget function, with the number of AST nodes
 * its loop condition and step evaluate per iteration as the second argument.
 */
function instrumentComprehensions(root: Expr): void {
  let nextId = 1_000_000n;
  const work: Expr[] = [root];
  for (let expr = work.pop(); expr; expr = work.pop()) {
    for (const child of children(expr)) work.push(child);
    const kind = expr.exprKind;
    if (kind.case === 'comprehensionExpr' && kind.value.iterRange) {
      const c = kind.value;
      const bodyNodes = Math.max(1, countNodes(c.loopCondition) + countNodes(c.loopStep));
      c.iterRange = {
        $typeName: 'cel.expr.Expr',
        id: nextId++,
        exprKind: {
          case: 'callExpr',
          value: {
            $typeName: 'cel.expr.Expr.Call',
            function: BUDGET_FUNCTION,
            args: [
              c.iterRange,
              {
                $typeName: 'cel.expr.Expr',
                id: nextId++,
                exprKind: {
                  case: 'constExpr',
                  value: {
                    $typeName: 'cel.expr.Constant',
                    constantKind: { case: 'int64Value', value: BigInt(bodyNodes) },
                  },
                },
              },
            ],
          },
        },
      } as Expr;
    }
  }
}

/** The direct sub-expressions of `expr`. */
function children(expr: Expr): Expr[] {
  const kind = expr.exprKind;
  switch (kind.case) {
    case 'selectExpr':
      return kind.value.operand ? [kind.value.operand] : [];
    case 'callExpr':
      return kind.value.target ? [kind.value.target, ...kind.value.args] : [...kind.value.args];
    case 'listExpr':
      return [...kind.value.elements];
    case 'structExpr': {
      const out: Expr[] = [];
      for (const entry of kind.value.entries) {
        if (entry.keyKind.case === 'mapKey') out.push(entry.keyKind.value);
        if (entry.value) out.push(entry.value);
      }
      return out;
    }
    case 'comprehensionExpr': {
      const c = kind.value;
      return [c.iterRange, c.accuInit, c.loopCondition, c.loopStep, c.result].filter((e): e is Expr => e !== undefined);
    }
    default:
      return [];
  }
}

/** Nodes of a sub-tree (nested comprehensions count their own body once; their iterations are charged when they run). */
function countNodes(root: Expr | undefined): number {
  if (!root) return 0;
  let count = 0;
  const work: Expr[] = [root];
  for (let expr = work.pop(); expr; expr = work.pop()) {
    count++;
    work.push(...children(expr));
  }
  return count;
}
