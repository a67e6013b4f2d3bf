/**
 * The bounds on automation expressions (src/cel/limits.ts) at their edges, and the conversion of
 * values between JSON and CEL (src/cel/convert.ts): each limit lets through exactly its value and
 * refuses one more, with its code and message. cel.test.ts shows that hostile expressions stop;
 * these pin where, found as mutants StrykerJS left alive (docs/testing.md#mutation-testing).
 */
import { celLimits, checkExpression, evaluate, evaluateAll, type CelContext } from '../../src/cel';
import { costUsed } from '../../src/cel/cost';
import { CelEvaluationError } from '../../src/errors';

const {
  MAX_COMPREHENSION_ITERATIONS,
  MAX_EVALUATION_COST,
  MAX_INPUT_DEPTH,
  MAX_RESULT_SIZE,
  MAX_AST_NODES,
  MAX_EXPRESSION_LENGTH,
} = celLimits;

function context(trigger: unknown, steps: Record<string, unknown> = {}): CelContext {
  return { trigger, steps };
}

function failure(
  source: string,
  ctx: CelContext = context({}),
): { code: string; message: string; field: string | undefined } {
  try {
    evaluateAll({ value: source }, ctx);
  } catch (err) {
    if (!(err instanceof CelEvaluationError)) throw err;
    return { code: err.code, message: err.message, field: err.field };
  }
  throw new Error(`expected ${source} to fail`);
}

/** `depth` arrays around a number. */
function nested(depth: number): unknown {
  let value: unknown = 1;
  for (let i = 0; i < depth; i++) value = [value];
  return value;
}

describe('compile-time limits, at their edges', () => {
  it('accepts an expression of exactly the longest length, and refuses one character more', () => {
    const filler = (length: number): string => `'${'x'.repeat(length - 2)}'`;
    expect(checkExpression(filler(MAX_EXPRESSION_LENGTH))).toBeUndefined();
    expect(checkExpression(filler(MAX_EXPRESSION_LENGTH + 1))).toBe(
      `expression is too long: ${MAX_EXPRESSION_LENGTH + 1} characters, at most ${MAX_EXPRESSION_LENGTH}`,
    );
    expect(failure(filler(MAX_EXPRESSION_LENGTH + 1)).code).toBe('ERR_CEL_LIMIT');
  });

  it('accepts exactly the most AST nodes, and refuses one more', () => {
    // A list of n constants is n + 1 nodes.
    const list = (nodes: number): string => `[${Array.from({ length: nodes - 1 }, () => '1').join(',')}]`;
    expect(checkExpression(list(MAX_AST_NODES))).toBeUndefined();
    expect(checkExpression(list(MAX_AST_NODES + 1))).toBe(`expression is too big: more than ${MAX_AST_NODES} nodes`);
    expect(failure(list(MAX_AST_NODES + 1)).code).toBe('ERR_CEL_LIMIT');
  });

  it('refuses an empty or blank expression as a syntax error, and a non-string as not an expression', () => {
    expect(checkExpression('')).toBe('expression is empty');
    expect(failure(' \n\t').code).toBe('ERR_CEL_SYNTAX');
    expect(checkExpression(42 as unknown as string)).toBe('expression must be a string');
  });
});

describe('evaluation budgets, at their edges', () => {
  it('allows exactly the comprehension iteration budget, and refuses one iteration more', () => {
    const list = (n: number): CelContext => context({ l: Array.from({ length: n }, (_, i) => i) });
    expect(evaluate('ctx.trigger.l.all(x, true)', list(MAX_COMPREHENSION_ITERATIONS))).toBe(true);
    expect(failure('ctx.trigger.l.all(x, true)', list(MAX_COMPREHENSION_ITERATIONS + 1))).toEqual({
      code: 'ERR_CEL_LIMIT',
      message: `comprehensions iterate more than ${MAX_COMPREHENSION_ITERATIONS} times`,
      field: 'value',
    });
    // nested comprehensions count together: 100 × 100 is the budget exactly, 100 × 101 is not
    const square = (outer: number, inner: number): CelContext =>
      context({ a: Array.from({ length: outer }, () => 0), b: Array.from({ length: inner }, () => 0) });
    expect(evaluate('ctx.trigger.a.all(x, ctx.trigger.b.all(y, true))', square(99, 100))).toBe(true);
    expect(failure('ctx.trigger.a.all(x, ctx.trigger.b.all(y, true))', square(100, 100)).code).toBe('ERR_CEL_LIMIT');
  });

  it('allows exactly the cost budget, and refuses one unit more', () => {
    // size() pays one unit per element of its operand, so the cost grows by one per element.
    const source = 'ctx.trigger.l.size() >= 0';
    const list = (n: number): CelContext => context({ l: new Array<number>(n).fill(0) });
    expect(evaluate(source, list(0))).toBe(true);
    const fixed = costUsed();
    expect(evaluate(source, list(10))).toBe(true);
    expect(costUsed()).toBe(fixed + 10);
    expect(evaluate(source, list(MAX_EVALUATION_COST - fixed))).toBe(true);
    expect(costUsed()).toBe(MAX_EVALUATION_COST);
    expect(failure(source, list(MAX_EVALUATION_COST - fixed + 1))).toEqual({
      code: 'ERR_CEL_LIMIT',
      message: `evaluation exceeds the cost budget of ${MAX_EVALUATION_COST}`,
      field: 'value',
    });
  });

  it('starts every evaluation with the whole budget', () => {
    const big = context({ l: new Array<number>(MAX_EVALUATION_COST / 2).fill(0) });
    for (let i = 0; i < 3; i++)
      expect(evaluateAll({ a: 'ctx.trigger.l.size() >= 0', b: 'ctx.trigger.l.size() >= 0' }, big)).toEqual({
        a: true,
        b: true,
      });
  });
});

describe('input conversion (JSON → CEL)', () => {
  it(`converts input nested ${MAX_INPUT_DEPTH} levels deep, and refuses one level more`, () => {
    // ctx is level 0 and ctx.trigger level 1: the number inside n arrays is at level n + 1.
    expect(evaluate('size(ctx.trigger)', context(nested(MAX_INPUT_DEPTH - 1)))).toBe(1);
    expect(failure('size(ctx.trigger)', context(nested(MAX_INPUT_DEPTH)))).toEqual({
      code: 'ERR_CEL_LIMIT',
      message: `input is nested too deeply (at most ${MAX_INPUT_DEPTH} levels)`,
      field: undefined, // the input is converted once, before any expression runs
    });
  });

  it('reads dates as RFC 3339 strings, bytes as bytes, integers as int, and missing values as null or absent', () => {
    const at = new Date('2024-05-01T10:00:00.123Z');
    const ctx = context(
      { bytes: new Uint8Array([104, 105]), big: 5n, gone: undefined, fn: () => 1, sym: Symbol('s') },
      { own: { createdAt: at } },
    );
    expect(evaluate('ctx.steps.own.createdAt', ctx)).toBe('2024-05-01T10:00:00.123Z');
    expect(evaluate('type(ctx.steps.own.createdAt) == string', ctx)).toBe(true);
    expect(evaluate('ctx.trigger.bytes == b"hi"', ctx)).toBe(true);
    expect(evaluate('ctx.trigger.bytes', ctx)).toBe('aGk=');
    expect(evaluate('ctx.trigger.big + 1', ctx)).toBe(6);
    expect(evaluate('has(ctx.trigger.gone)', ctx)).toBe(false);
    expect(evaluate('ctx.trigger.fn == null && ctx.trigger.sym == null', ctx)).toBe(true);
    expect(evaluate('has(ctx.trigger)', context(undefined))).toBe(false);
    expect(evaluate('ctx.trigger.l[0] == null && size(ctx.trigger.l) == 2', context({ l: [undefined, 1] }))).toBe(true);
    expect(evaluate('ctx.trigger == null', context(null))).toBe(true);
    expect(evaluate('[ctx.trigger.a, ctx.trigger.b]', context({ a: false, b: 'x' }))).toEqual([false, 'x']);
  });
});

describe('result conversion (CEL → JSON)', () => {
  it(`returns a result nested ${MAX_INPUT_DEPTH} levels deep, and refuses one level more`, () => {
    // the result of ctx.trigger is level 0: the number inside n arrays is at level n
    expect(evaluate('ctx.trigger', context(nested(MAX_INPUT_DEPTH - 1)))).toEqual(nested(MAX_INPUT_DEPTH - 1));
    expect(evaluate('[ctx.trigger]', context(nested(MAX_INPUT_DEPTH - 1)))).toEqual(nested(MAX_INPUT_DEPTH));
    expect(failure('[[ctx.trigger]]', context(nested(MAX_INPUT_DEPTH - 1)))).toEqual({
      code: 'ERR_CEL_LIMIT',
      message: `result is nested too deeply (at most ${MAX_INPUT_DEPTH} levels)`,
      field: 'value',
    });
  });

  it('counts one unit per value and per character of strings and keys against the result size', () => {
    // A string result is 1 + its length.
    const string = (length: number): CelContext => context({ s: 'x'.repeat(length) });
    expect(evaluate('ctx.trigger.s', string(MAX_RESULT_SIZE - 1))).toHaveLength(MAX_RESULT_SIZE - 1);
    expect(failure('ctx.trigger.s', string(MAX_RESULT_SIZE))).toEqual({
      code: 'ERR_CEL_LIMIT',
      message: `result is too large (more than ${MAX_RESULT_SIZE} bytes of JSON)`,
      field: 'value',
    });
    // A map of one entry is 1, plus the key's length, plus its value (1 + its length).
    const keyed = (keyLength: number): CelContext => context({ m: { ['k'.repeat(keyLength)]: 'v' } });
    expect(evaluate('ctx.trigger.m', keyed(MAX_RESULT_SIZE - 3))).toEqual({ ['k'.repeat(MAX_RESULT_SIZE - 3)]: 'v' });
    expect(failure('ctx.trigger.m', keyed(MAX_RESULT_SIZE - 2)).code).toBe('ERR_CEL_LIMIT');
    // A list is 1 plus its elements.
    const list = (n: number): CelContext => context({ l: new Array<boolean>(n).fill(true) });
    expect(evaluate('ctx.trigger.l', list(MAX_RESULT_SIZE - 1))).toHaveLength(MAX_RESULT_SIZE - 1);
    expect(failure('ctx.trigger.l', list(MAX_RESULT_SIZE)).code).toBe('ERR_CEL_LIMIT');
    // Bytes count as their base64 text: 4 characters per 3 bytes, rounded up.
    const bytes = (n: number): CelContext => context({ b: new Uint8Array(n) });
    const fits = 3 * Math.floor((MAX_RESULT_SIZE - 1) / 4); // 1 + base64 length ≤ MAX_RESULT_SIZE
    expect(evaluate('ctx.trigger.b', bytes(fits))).toHaveLength((fits / 3) * 4);
    // one byte more starts another group of four characters
    expect(failure('ctx.trigger.b', bytes(fits + 1)).code).toBe('ERR_CEL_LIMIT');
  });

  it('writes numbers JSON cannot hold as strings', () => {
    const ctx = context({});
    expect(evaluate('[0.0 / 0.0, 1.0 / 0.0, -1.0 / 0.0, 1.5]', ctx)).toEqual(['NaN', 'Infinity', '-Infinity', 1.5]);
    expect(evaluate('[9007199254740991, 9007199254740992, -9007199254740991, -9007199254740992]', ctx)).toEqual([
      9007199254740991,
      '9007199254740992',
      -9007199254740991,
      '-9007199254740992',
    ]);
    expect(evaluate('[9007199254740991u, 9007199254740992u, 18446744073709551615u]', ctx)).toEqual([
      9007199254740991,
      '9007199254740992',
      '18446744073709551615',
    ]);
  });

  it('writes map keys of every type as strings', () => {
    expect(evaluate("{1: 'a', 2u: 'b', true: 'c', 'k': 'd'}", context({}))).toEqual({
      '1': 'a',
      '2': 'b',
      true: 'c',
      k: 'd',
    });
  });

  it('writes types by name, timestamps as RFC 3339 and durations as protobuf JSON', () => {
    const ctx = context({});
    expect(evaluate('[type(1), type("s"), type(ctx)]', ctx)).toEqual(['int', 'string', 'map']);
    expect(
      evaluate(
        "['2024-05-01T10:00:00Z', '2024-05-01T10:00:00.5Z', '2024-05-01T10:00:00.000120Z', '2024-05-01T10:00:00.000000001Z'].map(t, timestamp(t))",
        ctx,
      ),
    ).toEqual([
      '2024-05-01T10:00:00Z',
      '2024-05-01T10:00:00.500Z',
      '2024-05-01T10:00:00.000120Z',
      '2024-05-01T10:00:00.000000001Z',
    ]);
    expect(
      evaluate("['0s', '1.5s', '-1.5s', '-0.25s', '90m', '0.000001s', '1.000000002s'].map(d, duration(d))", ctx),
    ).toEqual(['0s', '1.500s', '-1.500s', '-0.250s', '5400s', '0.000001s', '1.000000002s']);
  });
});
