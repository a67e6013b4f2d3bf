/**
 * Bounds on automation expressions. CEL evaluation is synchronous, so a hostile expression must be
 * stopped by these limits rather than by cancelling a promise:
 *
 * - at compile time: source length, AST nesting depth and AST node count (after macro expansion);
 * - at evaluation: a budget of comprehension iterations (every macro such as `map`, `exists`,
 *   `all`, `filter` counts the size of the list or map it ranges over, nested ones included), a
 *   cap on the size of the result, and a hard wall-clock limit enforced by V8 itself
 *   (`vm.Script#runInContext` with `timeout` terminates whatever JavaScript runs in the isolate,
 *   our CEL interpreter included).
 */

/** Longest accepted expression, in UTF-16 code units. */
export const MAX_EXPRESSION_LENGTH = 4096;
/** Deepest accepted AST (macros expanded; `ctx.a.b` is depth 3). */
export const MAX_AST_DEPTH = 64;
/** Most AST nodes in one expression (macros expanded). */
export const MAX_AST_NODES = 1000;
/** Most comprehension iterations in one expression evaluation, nested comprehensions included. */
export const MAX_COMPREHENSION_ITERATIONS = 10_000;
/** Largest result: JSON nodes plus string characters, roughly bytes of JSON. */
export const MAX_RESULT_SIZE = 256 * 1024;
/** Deepest JSON payload converted to CEL values. */
export const MAX_INPUT_DEPTH = 256;
/** Wall-clock limit for one evaluation batch (all expressions of one step). */
export const EVALUATION_TIME_LIMIT_MS = 1000;
/** Compiled expressions kept in memory. */
export const COMPILE_CACHE_SIZE = 1000;
