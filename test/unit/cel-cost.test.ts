/**
 * The cost model of src/cel/cost.ts, charge by charge: what one evaluation pays is a function of
 * the expression and its input only, so each rule of the model can be checked by how the cost
 * grows with the input (the constant part is the same at every size and cancels out). cel.test.ts
 * shows that hostile expressions stop; these pin what each operation pays, found as mutants
 * StrykerJS left alive (docs/testing.md#mutation-testing).
 */
import { evaluate } from '../../src/cel';
import { costUsed } from '../../src/cel/cost';

/** The cost of `source` over the trigger `input(n)`. */
function cost(source: string, trigger: unknown): number {
  evaluate(source, { trigger, steps: {} });
  return costUsed();
}

/** How much more `source` costs over `input(n)` than over `input(0)`. */
function growth(source: string, input: (n: number) => unknown, n: number): number {
  return cost(source, input(n)) - cost(source, input(0));
}

const text = (n: number): unknown => ({ s: 'a'.repeat(n) });
const pairs = (n: number): unknown => ({ l: Array.from({ length: n }, () => [0, 1]) });

describe('the cost of one evaluation', () => {
  it('charges strings one unit per 10 characters, rounded up, operands and results alike', () => {
    expect(growth('size(ctx.trigger.s) >= 0', text, 1)).toBe(1);
    expect(growth('size(ctx.trigger.s) >= 0', text, 10)).toBe(1);
    expect(growth('size(ctx.trigger.s) >= 0', text, 11)).toBe(2);
    expect(growth('size(ctx.trigger.s) >= 0', text, 100)).toBe(10);
    // `+` pays for both operands and for the string it returns
    expect(growth("ctx.trigger.s + 'x'", text, 100)).toBe(10 + 10);
    expect(growth("size(b'' + ctx.trigger.b) >= 0", (n) => ({ b: new Uint8Array(n) }), 100)).toBe(10 + 10 + 10);
  });

  it('charges regular expressions five units per character of the input and of the pattern', () => {
    expect(growth("ctx.trigger.s.matches('^a*$')", text, 100)).toBe(500);
    expect(growth("'a'.matches(ctx.trigger.s)", text, 100)).toBe(500);
  });

  it('charges equality, `in`, join and format for every nested element they walk', () => {
    // each element [0, 1] is 1 (the list's own size, per element) + 2 (its elements) + 2 (the two numbers)
    expect(growth('ctx.trigger.l == ctx.trigger.l', pairs, 100)).toBe(2 * 100 * 5);
    expect(growth('ctx.trigger.l != []', pairs, 100)).toBe(100 * 5);
    expect(growth('[0] in ctx.trigger.l', pairs, 100)).toBe(100 * 5);
    // format also pays for its result: '[[0, 1], [0, 1], …]' is 800 characters at n = 100, '[]' at 0
    expect(growth("'%s'.format([ctx.trigger.l])", pairs, 100)).toBe(100 * 5 + (80 - 1));
    // a map: per entry its size (1), the key and the value
    const entries = (n: number): unknown => ({
      m: Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, [0]])),
    });
    expect(growth('ctx.trigger.m == ctx.trigger.m', entries, 100)).toBe(2 * 100 * 4);
    // join walks the strings and pays for the joined result
    expect(growth("ctx.trigger.l.join(',')", (n) => ({ l: new Array<string>(n).fill('ab') }), 100)).toBe(
      100 * 2 + Math.ceil((100 * 3 - 1) / 10),
    );
  });

  it('charges other string methods only for their operands', () => {
    expect(growth("ctx.trigger.s.startsWith('a')", text, 100)).toBe(10);
    expect(growth("ctx.trigger.s.contains('aa')", text, 100)).toBe(10);
  });

  it('charges replace for rescanning the string once per replacement and for what it grows by', () => {
    // 100 replacements of one character by two: each pays the target (10) and the replacement (1);
    // then the operands (10) and the result of 200 characters (20)
    expect(growth("ctx.trigger.s.replace('a', 'bb')", text, 100)).toBe(100 * (10 + 1) + 10 + 20);
    // at most 2 replacements: the limit counts
    expect(growth("ctx.trigger.s.replace('a', 'bb', 2)", text, 100)).toBe(2 * (10 + 1) + 10 + 11);
    // a limit of 0 replaces nothing and pays nothing for it
    expect(growth("ctx.trigger.s.replace('a', 'bb', 0)", text, 100)).toBe(10 + 10);
    // a negative limit is no limit
    expect(growth("ctx.trigger.s.replace('a', 'bb', -1)", text, 100)).toBe(100 * (10 + 1) + 10 + 10);
    // an empty pattern matches between characters: n + 1 times, or at most the limit
    // (at n = 0 once, on an empty target: 1 × (0 + 1), and a result of one character)
    expect(growth("ctx.trigger.s.replace('', 'b')", text, 100)).toBe(101 * (10 + 1) - 1 + 10 + (21 - 1));
    expect(growth("ctx.trigger.s.replace('', 'b', 3)", text, 100)).toBe(3 * (10 + 1) - 1 + 10 + (11 - 1));
    // occurrences do not overlap
    expect(growth("ctx.trigger.s.replace('aa', 'b')", text, 100)).toBe(50 * (10 + 1) + 10 + 5);
  });

  it('charges comprehensions their range size times the nodes of the loop body', () => {
    const list = (n: number): unknown => ({ l: new Array<number>(n).fill(0) });
    const map = (n: number): unknown => ({ m: Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, 0])) });
    const a = growth('ctx.trigger.l.all(x, true)', list, 100);
    const b = growth('ctx.trigger.l.all(x, x == x && x == x)', list, 100);
    expect(a).toBeGreaterThan(0);
    expect(growth('ctx.trigger.m.all(k, true)', map, 100)).toBe(a);
    // per iteration: six more body nodes (`x == x && x == x` is seven, `true` one) and two == calls of 3 units
    expect(b - a).toBe(100 * (6 + 3 + 3));
    // every kind of node in the body counts: a select and its operand, a call with a target, a map
    // literal with its keys and values, a list and its elements (and the calls pay as outside loops)
    const body = (expr: string): number => growth(`ctx.trigger.l.all(x, ${expr})`, list, 100) - a;
    // (per iteration: the body's nodes beyond `true`'s one, then what its calls pay)
    // 7 nodes (three selects on each side, the call); == pays 1 and walks both lists (100 + 100 each)
    expect(body('ctx.trigger.l == ctx.trigger.l')).toBe(100 * (7 - 1 + 1 + 2 * (100 + 100)));
    // 6 nodes (map, key, value, size(), >=, 0); size() pays 1 + 1 entry, >= pays 1 + 1 + 1
    expect(body("{'k': x}.size() >= 0")).toBe(100 * (6 - 1 + 2 + 3));
    // 6 nodes (list, two elements, size(), >=, 0); size() pays 1 + 2 elements, >= pays 3
    expect(body('[x, x].size() >= 0')).toBe(100 * (6 - 1 + 3 + 3));
    // 4 nodes (the target 'ab', size(), >=, 0): a call on a target counts the target; size() pays 1 + 1
    expect(body("'ab'.size() >= 0")).toBe(100 * (4 - 1 + 2 + 3));
  });

  it('keeps counting after a comprehension over something that is not a list or a map', () => {
    // `n.all(…)` over a number fails (absorbed by ||) and iterates nothing; the budget stays whole
    const l = Array.from({ length: 10_001 }, (_, i) => i);
    expect(() =>
      evaluate('(ctx.trigger.n.all(x, true) || true) && ctx.trigger.l.all(x, true)', {
        trigger: { n: 1, l },
        steps: {},
      }),
    ).toThrow(
      expect.objectContaining({ code: 'ERR_CEL_LIMIT', message: 'comprehensions iterate more than 10000 times' }),
    );
    expect(
      evaluate('(ctx.trigger.n.all(x, true) || true) && ctx.trigger.l.all(x, true)', {
        trigger: { n: 1, l: [1, 2] },
        steps: {},
      }),
    ).toBe(true);
    expect(costUsed()).toBe(growth('ctx.trigger.l.all(x, true)', (n) => ({ l: new Array<number>(n).fill(0) }), 2));
  });

  it('charges one unit for an operand that is neither a string, bytes, a list nor a map, and keeps counting', () => {
    const l = new Array<number>(1_000_000).fill(0);
    for (const operand of [
      "duration('1s') + duration('1s') == duration('2s')",
      "timestamp('2024-01-01T00:00:00Z') < timestamp('2024-01-02T00:00:00Z')",
      '1u + 1u == 2u',
      'null == null',
    ]) {
      expect(cost(operand, {})).toBeGreaterThan(0);
      expect(() => evaluate(`${operand} && ctx.trigger.l.size() >= 0`, { trigger: { l }, steps: {} })).toThrow(
        expect.objectContaining({ code: 'ERR_CEL_LIMIT', message: 'evaluation exceeds the cost budget of 1000000' }),
      );
    }
    // the added duration('2s') pays 2 (the call and its short string), `+` 1 and one unit per duration
    expect(
      cost("duration('1s') + duration('2s') == duration('3s')", {}) - cost("duration('1s') == duration('3s')", {}),
    ).toBe(2 + 3);
  });
});
