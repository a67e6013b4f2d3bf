/**
 * The lane's admission decisions (workflows/lane.ts), as pure functions of its state: who is
 * admitted, in which order, what an ask or a release does, and whether the queue is full. Nothing
 * here sends a signal or reads the workflow's context: the lane does that with what these answer,
 * so the decisions can be tested without a Temporal server (test/unit/lane-admission.test.ts) and
 * the lane's commands stay what they were.
 */
import type { LaneAcquire, LaneState } from '../src/contract/run';

/** Released run ids remembered (so a late duplicate request is not granted again). */
export const MAX_RELEASED = 500;

/** What the lane knows of its admission: the part of its state these functions read and change. */
export type LaneQueue = Pick<LaneState, 'limit' | 'maxWaiting' | 'holders' | 'waiting' | 'released'>;

/**
 * What an ask did: `ignored` (meant for another lane: nothing changed), `regrant` (the run already
 * holds a permit: its grant may have been missed, send it again), `queued` (it waits at the end of
 * the queue), `known` (already waiting, or released lately: nothing more to do).
 */
export type AskOutcome = 'ignored' | 'regrant' | 'queued' | 'known';

/**
 * An ask (the `acquire` signal) applied to the queue. Under LANE_PROTOCOL_PATCH an ask naming
 * another lane is ignored (asks before it name none). Any other ask sets the limit and, when it
 * carries one, the queue bound: the latest ask says what the API is configured with now.
 */
export function applyAsk(queue: LaneQueue, ask: LaneAcquire, self: string, newProtocol: boolean): AskOutcome {
  if (newProtocol && ask.lane !== undefined && ask.lane !== self) return 'ignored';
  queue.limit = ask.limit;
  if (ask.maxWaiting !== undefined) queue.maxWaiting = ask.maxWaiting;
  if (queue.holders.includes(ask.runId)) return 'regrant';
  if (queue.waiting.includes(ask.runId) || queue.released.includes(ask.runId)) return 'known';
  queue.waiting.push(ask.runId);
  return 'queued';
}

/**
 * Whether a release (the `release` signal) frees the run. Under LANE_PROTOCOL_PATCH a release of a
 * run the lane neither holds nor queues changes nothing; before it, such a run was remembered as
 * released, and that run's own ask was then ignored.
 */
export function releaseApplies(queue: LaneQueue, runId: string, newProtocol: boolean): boolean {
  return !newProtocol || queue.holders.includes(runId) || queue.waiting.includes(runId);
}

/**
 * Frees a run's permit or place in the queue and remembers it as released (the last MAX_RELEASED),
 * so that a late repeat of its ask is not admitted again.
 */
export function freeRun(queue: LaneQueue, runId: string): void {
  queue.holders = queue.holders.filter((id) => id !== runId);
  queue.waiting = queue.waiting.filter((id) => id !== runId);
  if (!queue.released.includes(runId)) {
    queue.released.push(runId);
    if (queue.released.length > MAX_RELEASED) queue.released.splice(0, queue.released.length - MAX_RELEASED);
  }
}

/**
 * Admits waiting runs, oldest first, while fewer than `limit` hold a permit; answers the runs
 * admitted, in order (the lane grants each). A lowered limit admits no one until enough holders
 * have released: no permit is taken back.
 */
export function admitWaiting(queue: LaneQueue): string[] {
  const admitted: string[] = [];
  while (queue.holders.length < queue.limit && queue.waiting.length > 0) {
    const next = queue.waiting.shift()!;
    queue.holders.push(next);
    admitted.push(next);
  }
  return admitted;
}

/** Whether the queue is full (the `queueFull` memo the API reads: 429), or undefined without a bound. */
export function queueFull(queue: LaneQueue): boolean | undefined {
  return queue.maxWaiting === undefined ? undefined : queue.waiting.length >= queue.maxWaiting;
}
