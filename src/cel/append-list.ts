/**
 * List concatenation for the interpreter. @bufbuild/cel concatenates lazily (a list of lists);
 * the `map` and `filter` macros append one element per iteration, so their result becomes a
 * chain as deep as the list is long, and reading it costs time quadratic in its length (and
 * overflows the stack near 9,000 elements). An AppendList is a fixed-length view of a shared
 * array: appending to the newest view of an array pushes onto it (amortised O(appended)); any
 * other append copies. Views never see past their own length, so every list stays immutable.
 */
import { isCelList, type CelInput, type CelList, type CelValue } from '@bufbuild/cel';

const LIST_MARK = Symbol.for('@bufbuild/cel/list');

class AppendList {
  readonly [LIST_MARK] = {};
  constructor(
    private readonly array: CelValue[],
    readonly size: number,
  ) {}

  get(index: number): CelValue | undefined {
    return index >= 0 && index < this.size ? this.array[index] : undefined;
  }

  *values(): IterableIterator<CelValue> {
    for (let i = 0; i < this.size; i++) yield this.array[i]!;
  }

  [Symbol.iterator](): IterableIterator<CelValue> {
    return this.values();
  }

  /** True when appending can push onto the shared array (this is its newest view). */
  canExtend(): boolean {
    return this.array.length === this.size;
  }

  extend(items: Iterable<CelValue>): AppendList {
    for (const item of items) this.array.push(item);
    return new AppendList(this.array, this.array.length);
  }
}

/** Elements `concat` will copy: 0 when the left list is extended in place. */
export function concatCopies(left: unknown): number {
  return left instanceof AppendList && left.canExtend() ? 0 : isCelList(left) ? left.size : 0;
}

/** `left + right` for lists. */
export function concatLists(left: CelList, right: CelList): CelInput {
  if (left instanceof AppendList && left.canExtend()) return left.extend(right) as unknown as CelList;
  const array: CelValue[] = [...left];
  for (const item of right) array.push(item);
  return new AppendList(array, array.length) as unknown as CelList;
}
