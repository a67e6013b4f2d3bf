/**
 * Bounds on automation expressions. CEL evaluation is synchronous, so a hostile expression must be
 * stopped by these limits rather than by cancelling a promise:
 *
 * - at compile time: source length, AST nesting depth and AST node count (after macro expansion);
 * - at evaluation: a budget of comprehension iterations (every macro such as `map`, `exists`,
 *   `all`, `filter` counts the size of the list or map it ranges over, nested ones included), a
 *   cost budget charged per operation by operand size (see ./cost; the same verdict on every
 *   machine, no watchdog), and a cap on the size of the result.
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
/**
 * Cost units one expression evaluation may use (see ./cost: 1 per call, 1 per 10 characters or
 * per element of an operand, 1 per character a regular expression scans). About 0.1 s of CPU at
 * worst on one core of a small machine.
 */
export const MAX_EVALUATION_COST = 1_000_000;
/** Compiled expressions kept in memory. */
export const COMPILE_CACHE_SIZE = 1000;
