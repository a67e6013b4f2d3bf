/**
 * List concatenation in CEL expressions (src/cel/append-list.ts): `map` and `filter` append one
 * element per iteration, and `+` on lists shares one array between views. Every list stays
 * immutable (a view never sees elements appended after it), and building a list of n elements
 * costs n, not n² (so the largest comprehension the iteration budget allows fits the cost budget).
 * Found as mutants StrykerJS left alive (docs/testing.md#mutation-testing).
 */
import { celLimits, evaluate, type CelContext } from '../../src/cel';
import { costUsed } from '../../src/cel/cost';

const ctx: CelContext = { trigger: {}, steps: {} };

describe('list concatenation', () => {
  it('keeps each list as it was when something is appended to it twice', () => {
    expect(evaluate('[[1] + [2]].map(l, [l + [3], l + [4], l])', ctx)).toEqual([
      [
        [1, 2, 3],
        [1, 2, 4],
        [1, 2],
      ],
    ]);
    expect(evaluate('[[1] + [2]].map(l, [l + [3], l.size(), 3 in l, l == [1, 2], l.map(x, x)])', ctx)).toEqual([
      [[1, 2, 3], 2, false, true, [1, 2]],
    ]);
    expect(evaluate('([1] + [2]) + ([3] + [4])', ctx)).toEqual([1, 2, 3, 4]);
    expect(evaluate('[] + [1] + [] + [2, 3]', ctx)).toEqual([1, 2, 3]);
  });

  it('reads elements by index inside the list only, even when the shared array holds more', () => {
    expect(evaluate('([1] + [2])[0] + ([1] + [2])[1]', ctx)).toBe(3);
    for (const source of ['([1] + [2])[2]', '([1] + [2])[-1]', '[[1] + [2]].map(l, [l + [3], l[2]])']) {
      expect(() => evaluate(source, ctx)).toThrow(
        expect.objectContaining({
          code: 'ERR_CEL_EVALUATION',
          message: expect.stringMatching(/index -?\d out of bounds/),
        }),
      );
    }
  });

  it('builds lists as long as the iteration budget allows within the cost budget, in order', () => {
    const n = celLimits.MAX_COMPREHENSION_ITERATIONS;
    const big: CelContext = { trigger: { l: Array.from({ length: n }, (_, i) => i) }, steps: {} };
    const mapped = evaluate('ctx.trigger.l.map(x, x + 1.0)', big) as number[];
    expect(mapped).toHaveLength(n);
    expect(mapped.every((value, i) => value === i + 1)).toBe(true);
    // linear: each appended element is paid once, not the whole list again at every step
    expect(costUsed()).toBeLessThan(20 * n);
    expect(evaluate('ctx.trigger.l.filter(x, x >= 5000.0).size()', big)).toBe(n - 5000);
  });

  it('pays for what a concatenation copies: the left list unless it is extended in place, and the right one', () => {
    // Each costs a constant plus a part that grows with the payload list l (n elements); the
    // growth per element is what the copies cost.
    const slope = (source: string): number => {
      const at = (n: number): number => {
        evaluate(source, { trigger: { l: new Array<number>(n).fill(0) }, steps: {} });
        return costUsed();
      };
      return (at(100) - at(0)) / 100;
    };
    // the payload list is copied once: one unit per element
    expect(slope('(ctx.trigger.l + [1]).size() >= 0')).toBe(2); // the copy, and size() reading the result
    expect(slope('([1] + ctx.trigger.l).size() >= 0')).toBe(2); // the right list's elements, and size()
    // m = l + [1] is a fresh copy; m + [2] extends it in place (free), the second m + [3] must copy m
    expect(slope('[ctx.trigger.l + [1]].map(m, [m + [2], m + [3]]).size() >= 0')).toBe(2);
    expect(slope('[ctx.trigger.l + [1]].map(m, [m + [2]]).size() >= 0')).toBe(1);
  });
});
