/**
 * The deterministic cost budget of one evaluation, modelled on cel-go's runtime cost limit.
 *
 * Every function and operator call of the interpreter goes through the environment's function
 * resolver, and @bufbuild/cel binds each call site to a resolver entry once, when the expression
 * is planned. `chargingResolver` wraps those entries, so each call first pays for its operands
 * (before any work is done) and then for what it produced:
 *
 * - 1 per call;
 * - strings and bytes: 1 per 10 characters (bytes); regular expressions: 5 per character of the
 *   input and of the pattern (RE2 is linear in both, but its JavaScript port is slow);
 * - lists and maps: 1 per element; list `+` pays for the elements it copies (./append-list);
 *   equality, `in`, `join` and `format` walk nested values, so
 *   they pay for every nested element (the walk itself stops as soon as the budget is gone);
 * - `replace` pays, before it runs, for rescanning the string once per replacement (that is how
 *   the library implements it) and for the output it grows;
 * - comprehensions: the range is wrapped in `@iteration_budget` (see compile.ts), which pays
 *   range size × the number of AST nodes of the loop body, so attribute reads and `&&`/`||`
 *   inside a loop (which are not calls) are paid for too.
 *
 * Outside comprehensions every non-call node runs at most once and the AST has at most
 * MAX_AST_NODES nodes, so these charges bound the work of an evaluation; the verdict depends on
 * the expression and its input only, never on the machine or its load.
 *
 * Evaluation is synchronous, so one module-level meter is safe.
 */
import { isCelList, isCelMap, type CelInput } from '@bufbuild/cel';
import { concatCopies } from './append-list';
import { MAX_COMPREHENSION_ITERATIONS, MAX_EVALUATION_COST } from './limits';

/** Name of the budget function wrapped around every comprehension range; `@` cannot be typed in CEL. */
export const BUDGET_FUNCTION = '@iteration_budget';

/** Thrown (outside any function body, so the interpreter does not turn it into a CEL error value) when a budget runs out. */
export class BudgetExceeded extends Error {}

const meter = {
  cost: MAX_EVALUATION_COST,
  iterations: MAX_COMPREHENSION_ITERATIONS,
  /** Which budget ran out first, if any. */
  exceeded: undefined as 'cost' | 'iterations' | undefined,
};

/** Resets both budgets before one expression is evaluated. */
export function resetBudget(): void {
  meter.cost = MAX_EVALUATION_COST;
  meter.iterations = MAX_COMPREHENSION_ITERATIONS;
  meter.exceeded = undefined;
}

/** Which budget the last evaluation ran out of, if any (even if `||` or `&&` absorbed the error). */
export function budgetExceeded(): 'cost' | 'iterations' | undefined {
  return meter.exceeded;
}

/** Cost units used by the last evaluation so far (diagnostics and tests). */
export function costUsed(): number {
  return MAX_EVALUATION_COST - meter.cost;
}

function charge(amount: number): void {
  meter.cost -= amount;
  if (meter.cost < 0) {
    meter.exceeded ??= 'cost';
    throw new BudgetExceeded(`evaluation exceeds the cost budget of ${MAX_EVALUATION_COST}`);
  }
}

function chargeIterations(count: number, bodyNodes: number): void {
  meter.iterations -= count;
  if (meter.iterations < 0) {
    meter.exceeded ??= 'iterations';
    throw new BudgetExceeded(`comprehensions iterate more than ${MAX_COMPREHENSION_ITERATIONS} times`);
  }
  charge(count * bodyNodes);
}

/** Shallow size of a value: characters / 10, bytes / 10, elements, or 1. */
function sizeOf(value: unknown): number {
  switch (typeof value) {
    case 'string':
      return Math.ceil(value.length / 10);
    case 'object':
      if (value === null) return 1;
      if (value instanceof Uint8Array) return Math.ceil(value.length / 10);
      if (isCelList(value) || isCelMap(value)) return value.size;
      return 1;
    default:
      return 1;
  }
}

/** Charges for every nested element and character of `value`, walking it as the operation will. */
function chargeDeep(value: unknown): void {
  const stack: unknown[] = [value];
  for (let item = stack.pop(); stack.length > 0 || item !== undefined; item = stack.pop()) {
    charge(sizeOf(item));
    if (isCelList(item)) {
      for (const element of item) stack.push(element);
    } else if (isCelMap(item)) {
      for (const [key, element] of item) stack.push(key, element);
    }
  }
}

/** Functions whose work is proportional to nested content, not just to the top-level size. */
const DEEP = new Set(['_==_', '_!=_', '@in', 'join', 'format']);
/** Regular expressions: RE2 is linear in input and pattern, at a higher constant than other string work. */
const REGEX = new Set(['matches']);
const REGEX_COST_PER_CHAR = 5;

interface Callable {
  call(id: number, target: CelInput | undefined, args: CelInput[]): unknown;
}

function chargeCall(name: string, target: unknown, args: readonly unknown[]): void {
  if (name === BUDGET_FUNCTION) {
    const range = args[0];
    const size = isCelList(range) || isCelMap(range) ? range.size : 0;
    chargeIterations(size, typeof args[1] === 'bigint' ? Number(args[1]) : 1);
    return;
  }
  let cost = 1;
  if (REGEX.has(name)) {
    for (const operand of [target, ...args])
      cost += typeof operand === 'string' ? REGEX_COST_PER_CHAR * operand.length : sizeOf(operand);
    charge(cost);
    return;
  }
  if (DEEP.has(name)) {
    charge(cost);
    if (target !== undefined) chargeDeep(target);
    for (const arg of args) chargeDeep(arg);
    return;
  }
  if (name === '_+_' && isCelList(args[0]) && isCelList(args[1])) {
    // What the concatenation copies (see ./append-list): the appended elements, and the left list too unless extended in place.
    charge(cost + concatCopies(args[0]) + args[1].size);
    return;
  }
  if (target !== undefined) cost += sizeOf(target);
  for (const arg of args) cost += sizeOf(arg);
  charge(cost);
  if (name === 'replace' && typeof target === 'string' && typeof args[0] === 'string' && typeof args[1] === 'string') {
    // The library rebuilds and rescans the string once per replacement, and the output grows by
    // the replacement each time: pay for both before it runs (counting is one linear scan, paid above).
    const limit = typeof args[2] === 'bigint' ? (args[2] < 0n ? Infinity : Number(args[2])) : Infinity;
    const replacements = occurrences(target, args[0], limit);
    charge(replacements * (sizeOf(target) + Math.ceil(args[1].length / 10)));
  }
}

/** Non-overlapping occurrences of `part` in `text`, at most `limit` (an empty `part` matches between characters). */
function occurrences(text: string, part: string, limit: number): number {
  if (part.length === 0) return Math.min(limit, text.length + 1);
  let count = 0;
  for (let at = text.indexOf(part); at !== -1 && count < limit; at = text.indexOf(part, at + part.length)) count++;
  return count;
}

/**
 * Wraps a function group (all overloads of one name) so that every call is charged before it
 * runs and for the size of what it returns.
 */
function chargingGroup(name: string, group: Callable): Callable {
  return {
    call(id, target, args) {
      chargeCall(name, target, args);
      const result = group.call(id, target, args);
      if (typeof result === 'string' || result instanceof Uint8Array) charge(sizeOf(result));
      return result;
    },
  };
}

interface Resolver {
  find(name: string): Callable | undefined;
}

/** A function resolver whose every entry charges the meter; planned once per call site. */
export function chargingResolver<R extends Resolver>(inner: R): R {
  const wrapped = new Map<string, Callable | undefined>();
  const find = (name: string): Callable | undefined => {
    if (!wrapped.has(name)) {
      const group = inner.find(name);
      wrapped.set(name, group ? chargingGroup(name, group) : undefined);
    }
    return wrapped.get(name);
  };
  return new Proxy(inner, {
    get(target, property, receiver) {
      if (property === 'find') return find;
      return Reflect.get(target, property, receiver) as unknown;
    },
  });
}
