/**
 * The lane's admission decisions (workflows/lane-admission.ts), tested directly: the same functions
 * workflows/lane.ts calls, without a Temporal server. test/integration/flow-control.test.ts and
 * lane-trust.test.ts check the lane as a workflow; test/integration/replay.test.ts that it replays.
 */
import {
  admitWaiting,
  applyAsk,
  freeRun,
  MAX_RELEASED,
  queueFull,
  releaseApplies,
  type LaneQueue,
} from '../../workflows/lane-admission';

const SELF = 'lane:auto-1:k';

function queueOf(partial: Partial<LaneQueue> = {}): LaneQueue {
  return { limit: 1, holders: [], waiting: [], released: [], ...partial };
}

describe('applyAsk', () => {
  it('queues a new run at the end of the queue and takes the limit and the queue bound it carries', () => {
    const queue = queueOf({ limit: 1, holders: ['a'], waiting: ['b'] });
    expect(applyAsk(queue, { runId: 'c', limit: 3, lane: SELF, maxWaiting: 7 }, SELF, true)).toBe('queued');
    expect(queue).toStrictEqual({ limit: 3, maxWaiting: 7, holders: ['a'], waiting: ['b', 'c'], released: [] });
  });

  it('keeps the queue bound it had when an ask carries none', () => {
    const queue = queueOf({ maxWaiting: 4 });
    expect(applyAsk(queue, { runId: 'a', limit: 2 }, SELF, true)).toBe('queued');
    expect(queue.maxWaiting).toBe(4);
    const unbounded = queueOf();
    applyAsk(unbounded, { runId: 'a', limit: 2 }, SELF, true);
    expect('maxWaiting' in unbounded).toBe(false);
  });

  it('takes a queue bound of 0 (a bound, not its absence)', () => {
    const queue = queueOf({ maxWaiting: 4 });
    applyAsk(queue, { runId: 'a', limit: 1, maxWaiting: 0 }, SELF, true);
    expect(queue.maxWaiting).toBe(0);
  });

  it('ignores an ask naming another lane under the 0.6.0 protocol, and changes nothing', () => {
    const queue = queueOf({ limit: 1, holders: ['a'] });
    expect(applyAsk(queue, { runId: 'b', limit: 5, lane: 'lane:auto-1:other', maxWaiting: 2 }, SELF, true)).toBe(
      'ignored',
    );
    expect(queue).toStrictEqual(queueOf({ limit: 1, holders: ['a'] }));
    // Even a holder's repeated ask is not granted again when it names another lane.
    expect(applyAsk(queue, { runId: 'a', limit: 1, lane: 'lane:auto-1:other' }, SELF, true)).toBe('ignored');
  });

  it('takes an ask that names no lane (sent before 0.6.0) or this lane', () => {
    const queue = queueOf();
    expect(applyAsk(queue, { runId: 'a', limit: 1 }, SELF, true)).toBe('queued');
    expect(applyAsk(queue, { runId: 'b', limit: 1, lane: SELF }, SELF, true)).toBe('queued');
    expect(queue.waiting).toStrictEqual(['a', 'b']);
  });

  it('takes an ask naming another lane under the protocol before 0.6.0 (it did not compare)', () => {
    const queue = queueOf();
    expect(applyAsk(queue, { runId: 'a', limit: 2, lane: 'lane:auto-1:other' }, SELF, false)).toBe('queued');
    expect(queue).toStrictEqual(queueOf({ limit: 2, waiting: ['a'] }));
  });

  it("answers regrant to a holder's repeated ask, and does not queue it", () => {
    const queue = queueOf({ limit: 2, holders: ['a'], waiting: ['b'] });
    expect(applyAsk(queue, { runId: 'a', limit: 4 }, SELF, true)).toBe('regrant');
    expect(queue).toStrictEqual(queueOf({ limit: 4, holders: ['a'], waiting: ['b'] }));
  });

  it('answers known to a waiting run and to a released one, and queues neither again', () => {
    const queue = queueOf({ holders: ['a'], waiting: ['b'], released: ['c'] });
    expect(applyAsk(queue, { runId: 'b', limit: 1 }, SELF, true)).toBe('known');
    expect(applyAsk(queue, { runId: 'c', limit: 1 }, SELF, true)).toBe('known');
    expect(queue).toStrictEqual(queueOf({ holders: ['a'], waiting: ['b'], released: ['c'] }));
  });

  it('answers regrant before known when a run is somehow both holding and released', () => {
    const queue = queueOf({ holders: ['a'], released: ['a'] });
    expect(applyAsk(queue, { runId: 'a', limit: 1 }, SELF, true)).toBe('regrant');
  });
});

describe('releaseApplies', () => {
  it('frees a holder or a waiting run under the 0.6.0 protocol, and no other', () => {
    const queue = queueOf({ holders: ['a'], waiting: ['b'], released: ['c'] });
    expect(releaseApplies(queue, 'a', true)).toBe(true);
    expect(releaseApplies(queue, 'b', true)).toBe(true);
    expect(releaseApplies(queue, 'c', true)).toBe(false);
    expect(releaseApplies(queue, 'x', true)).toBe(false);
  });

  it('frees any run under the protocol before 0.6.0', () => {
    const queue = queueOf({ holders: ['a'] });
    expect(releaseApplies(queue, 'a', false)).toBe(true);
    expect(releaseApplies(queue, 'x', false)).toBe(true);
  });
});

describe('freeRun', () => {
  it('removes the run from the holders and the queue, keeps the others in order, and remembers it once', () => {
    const queue = queueOf({ limit: 3, holders: ['a', 'b', 'c'], waiting: ['d', 'b', 'e'], released: ['z'] });
    freeRun(queue, 'b');
    expect(queue).toStrictEqual(queueOf({ limit: 3, holders: ['a', 'c'], waiting: ['d', 'e'], released: ['z', 'b'] }));
    freeRun(queue, 'b');
    expect(queue.released).toStrictEqual(['z', 'b']);
    freeRun(queue, 'd');
    expect(queue).toStrictEqual(queueOf({ limit: 3, holders: ['a', 'c'], waiting: ['e'], released: ['z', 'b', 'd'] }));
  });

  it(`remembers the last ${MAX_RELEASED} released runs, dropping the oldest`, () => {
    expect(MAX_RELEASED).toBe(500);
    const queue = queueOf();
    for (let i = 0; i < MAX_RELEASED; i++) freeRun(queue, `r${i}`);
    expect(queue.released).toHaveLength(MAX_RELEASED);
    expect(queue.released[0]).toBe('r0');
    freeRun(queue, 'r500');
    expect(queue.released).toHaveLength(MAX_RELEASED);
    expect(queue.released[0]).toBe('r1');
    expect(queue.released.at(-1)).toBe('r500');
    // A run dropped from the memory is a new run again: its ask is queued.
    expect(applyAsk(queue, { runId: 'r0', limit: 1 }, SELF, true)).toBe('queued');
    expect(applyAsk(queue, { runId: 'r1', limit: 1 }, SELF, true)).toBe('known');
  });

  it('drops as many of the oldest as needed to get back to the bound', () => {
    const released = Array.from({ length: MAX_RELEASED + 3 }, (_, i) => `old${i}`);
    const queue = queueOf({ released });
    freeRun(queue, 'new');
    expect(queue.released).toHaveLength(MAX_RELEASED);
    expect(queue.released[0]).toBe('old4');
    expect(queue.released.at(-1)).toBe('new');
  });
});

describe('admitWaiting', () => {
  it('admits the oldest waiting runs up to the limit, in the order they asked', () => {
    const queue = queueOf({ limit: 3, holders: ['a'], waiting: ['b', 'c', 'd', 'e'] });
    expect(admitWaiting(queue)).toStrictEqual(['b', 'c']);
    expect(queue).toStrictEqual(queueOf({ limit: 3, holders: ['a', 'b', 'c'], waiting: ['d', 'e'] }));
    expect(admitWaiting(queue)).toStrictEqual([]);
    expect(queue.waiting).toStrictEqual(['d', 'e']);
  });

  it('admits every waiting run when there are fewer than the free permits', () => {
    const queue = queueOf({ limit: 5, waiting: ['a', 'b'] });
    expect(admitWaiting(queue)).toStrictEqual(['a', 'b']);
    expect(queue).toStrictEqual(queueOf({ limit: 5, holders: ['a', 'b'] }));
  });

  it('admits no one while the holders are at or above a lowered limit (no permit is taken back)', () => {
    const queue = queueOf({ limit: 1, holders: ['a', 'b'], waiting: ['c'] });
    expect(admitWaiting(queue)).toStrictEqual([]);
    expect(queue).toStrictEqual(queueOf({ limit: 1, holders: ['a', 'b'], waiting: ['c'] }));
    freeRun(queue, 'a');
    expect(admitWaiting(queue)).toStrictEqual([]);
    freeRun(queue, 'b');
    expect(admitWaiting(queue)).toStrictEqual(['c']);
  });

  it('admits the next in line when a holder frees its permit', () => {
    const queue = queueOf({ limit: 1 });
    for (const runId of ['a', 'b', 'c']) applyAsk(queue, { runId, limit: 1 }, SELF, true);
    expect(admitWaiting(queue)).toStrictEqual(['a']);
    freeRun(queue, 'a');
    expect(admitWaiting(queue)).toStrictEqual(['b']);
    // A waiting run that gives up its place is skipped.
    freeRun(queue, 'c');
    freeRun(queue, 'b');
    expect(admitWaiting(queue)).toStrictEqual([]);
    expect(queue).toStrictEqual(queueOf({ limit: 1, released: ['a', 'c', 'b'] }));
  });
});

describe('queueFull', () => {
  it('says nothing without a queue bound', () => {
    expect(queueFull(queueOf({ waiting: ['a', 'b'] }))).toBeUndefined();
  });

  it('is full when as many runs wait as the bound, or more', () => {
    expect(queueFull(queueOf({ maxWaiting: 2, waiting: ['a'] }))).toBe(false);
    expect(queueFull(queueOf({ maxWaiting: 2, waiting: ['a', 'b'] }))).toBe(true);
    expect(queueFull(queueOf({ maxWaiting: 2, waiting: ['a', 'b', 'c'] }))).toBe(true);
    expect(queueFull(queueOf({ maxWaiting: 0 }))).toBe(true);
    // Holders do not count: only runs waiting.
    expect(queueFull(queueOf({ maxWaiting: 1, holders: ['a', 'b'] }))).toBe(false);
  });
});
