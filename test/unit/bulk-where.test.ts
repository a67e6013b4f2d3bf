/**
 * A bulk action's `where` over its candidates (src/domain/bulk-actions.ts `matchRuns`): payloads
 * are read a page at a time, the event loop turns between pages and within a page of large
 * payloads (so the API keeps answering while a dry run evaluates), and all candidates share one
 * cost budget, refused naming `filter.where` when spent. The engine is a fake here: what is under
 * test is the domain's paging and budget, which no engine answer changes.
 */
import { BULK_LIMITS, matchRuns, WHERE_PAGE_SIZE, WHERE_SLICE, type BulkLimits } from '../../src/domain/bulk-actions';
import type { RunEngine } from '../../src/domain/engine';
import { InvalidArgumentError } from '../../src/errors';
import { unavailableEngine } from '../helpers/engine';

/** An engine whose visibility matches `ids` and whose payloads are `payloadOf(id)`; it records each payload read. */
function engineOver(ids: string[], payloadOf: (id: string) => unknown) {
  const reads: number[] = [];
  const engine: RunEngine = {
    ...unavailableEngine(),
    count: async () => ids.length,
    matchIds: async (_match, max) => ids.slice(0, max + 1),
    payloads: async (runIds) => {
      reads.push(runIds.length);
      return new Map(runIds.map((id) => [id, payloadOf(id)]));
    },
  };
  return { engine, reads };
}

const filter = (where: string) => ({ automationId: 'a-1', where });
const ids = (n: number) => Array.from({ length: n }, (_, i) => `run-${i}`);

describe("a bulk action's where over its candidates", () => {
  it('reads the payloads a page at a time and keeps the runs where is true for', async () => {
    const { engine, reads } = engineOver(ids(250), (id) => ({ even: Number(id.slice(4)) % 2 === 0 }));
    const matched = await matchRuns(engine, filter('ctx.trigger.even'), BULK_LIMITS);
    expect(reads).toEqual([WHERE_PAGE_SIZE, WHERE_PAGE_SIZE, 250 - 2 * WHERE_PAGE_SIZE]);
    expect(matched.runIds).toHaveLength(125);
    expect(matched.runIds.slice(0, 3)).toEqual(['run-0', 'run-2', 'run-4']);
    expect(matched.whereErrors).toBe(0);
  });

  it('counts a payload it cannot read, an error and a non-bool as where errors', async () => {
    const { engine } = engineOver(ids(4), (id) => (id === 'run-3' ? undefined : { n: id === 'run-1' ? 'x' : 1 }));
    const unreadable: RunEngine = {
      ...engine,
      payloads: async (runIds) => {
        const found = await engine.payloads(runIds);
        found.delete('run-3');
        return found;
      },
    };
    const matched = await matchRuns(unreadable, filter('ctx.trigger.n > 0'), BULK_LIMITS);
    // run-0 and run-2: true; run-1: 'x' > 0 has no overload; run-3: no payload.
    expect(matched).toEqual({ runIds: ['run-0', 'run-2'], whereErrors: 2 });
  });

  it('lets the event loop turn while it evaluates a page of large payloads', async () => {
    const large = { blob: 'x'.repeat(33_000), kind: 'hire' };
    const { engine } = engineOver(ids(120), () => large);
    let turns = 0;
    let ticking = true;
    const tick = (): void => {
      turns += 1;
      if (ticking) setImmediate(tick);
    };
    setImmediate(tick);
    const matched = await matchRuns(engine, filter("ctx.trigger.kind == 'hire'"), BULK_LIMITS);
    ticking = false;
    expect(matched.runIds).toHaveLength(120);
    // Each payload pays about 3,300 for its JSON: the loop turns each time WHERE_SLICE of it is spent.
    expect(turns).toBeGreaterThanOrEqual(Math.floor(120 / Math.ceil(WHERE_SLICE / 3_300)) - 1);
  });

  it('refuses, naming filter.where, once all candidates together spend the budget', async () => {
    const { engine } = engineOver(ids(50), () => ({ blob: 'x'.repeat(10_000) }));
    const limits: BulkLimits = { ...BULK_LIMITS, whereBudget: 20 * 1_001 };
    const refusal = await matchRuns(engine, filter('ctx.trigger.blob != ""'), limits).catch((err: unknown) => err);
    expect(refusal).toBeInstanceOf(InvalidArgumentError);
    const { violations } = refusal as InvalidArgumentError;
    expect(violations).toHaveLength(1);
    expect(violations[0]!.field).toBe('filter.where');
    expect(violations[0]!.description).toContain('cost budget of 20020');
    // The same candidates fit the default budget.
    expect((await matchRuns(engine, filter('ctx.trigger.blob != ""'), BULK_LIMITS)).runIds).toHaveLength(50);
  });
});
