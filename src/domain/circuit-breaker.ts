/**
 * The circuit breaker (docs/api.md#circuit-breaker): a live setting of an automation, past
 * `maxRuns` runs started in the last `period` new runs are PAUSED until a person resumes or cancels
 * them. Its setting, its state as the API shows it, and resume and cancel are here; its
 * delivery-time decision is the flow option's (src/flow/circuit-breaker.ts); the paused runs wait
 * in the workflow for the resume signal (workflows/automation.ts).
 *
 * Resume and cancel let go of the paused runs the store lists (resume: one lane's runs one after the
 * other in acceptance order, the lanes side by side; cancel: side by side), and only then
 * forget them and close the breaker, in one transaction that finds no run paused meanwhile (a run
 * paused while they worked is let go in another round). So an API process stopped half-way leaves
 * the rest paused and the breaker open: the person repeats the request, and a run already let go
 * ignores a second signal. A delivery that arrives meanwhile is paused before the close (and let
 * go in the next round) or counted in the new window after it.
 */
import type { Db, Queryable } from '../store/db';
import * as store from '../store/automations';
import { recordAudit } from '../store/audit';
import { breakerState, forgetPausedRun, pausedRuns, releasePaused } from '../store/circuit-breaker';
import { breakerPeriodMs, liveFlowControlOf, type CircuitBreakerSettings } from '../flow';
import { listenerChanged } from './listener-changes';
import { withPublishedVersion, type AutomationWithPublishedVersion } from './automations';
import { notFound, StaleRevisionError } from '../errors';
import type { BreakerActionRequest, CircuitBreakerRequest } from './api-schemas';
import type { RunQueue } from '../contract/run';
import type { RunEngine } from './engine';

export type { CircuitBreakerSettings };

/** The automation's breaker setting (a live flow option), null when unset. */
export function breakerSettingsOf(record: { liveFlow: unknown }): CircuitBreakerSettings | null {
  return liveFlowControlOf(record.liveFlow).circuitBreaker;
}

/** The breaker's state as GET /api/v1/automations/{id} shows it; undefined for an automation that never had one. */
export async function breakerView(db: Queryable, record: { id: string; liveFlow: unknown }) {
  const settings = breakerSettingsOf(record);
  const state = await breakerState(db, record.id, settings ? breakerPeriodMs(settings) : null);
  if (state.trippedAt !== null || state.pausedRuns > 0) {
    return { state: 'OPEN' as const, trippedAt: state.trippedAt, pausedRuns: state.pausedRuns };
  }
  if (!settings) return undefined;
  return { state: 'CLOSED' as const, runsInPeriod: state.runsInPeriod };
}

/** Sets or (null) removes the breaker, audited; `expectedRevisions` from If-Match (412 when stale). */
export async function setCircuitBreaker(
  db: Db,
  id: string,
  settings: CircuitBreakerRequest | null,
  actor: string,
  expectedRevisions?: readonly number[],
): Promise<AutomationWithPublishedVersion> {
  const record = await db.transaction(async (tx) => {
    const current = await store.getAutomation(tx, id, true);
    if (!current) throw notFound('automation');
    if (expectedRevisions !== undefined && !expectedRevisions.includes(current.revision))
      throw new StaleRevisionError('automation', current.revision);
    const saved = (await store.setLiveFlowOption(
      tx,
      id,
      'circuitBreaker',
      settings === null ? null : { maxRuns: settings.maxRuns, period: settings.period },
    ))!;
    await recordAudit(tx, {
      actor,
      action: settings === null ? 'automation.circuit_breaker.delete' : 'automation.circuit_breaker.set',
      resourceType: 'automation',
      resourceId: id,
      details:
        settings === null
          ? { previous: breakerSettingsOf(current) }
          : { maxRuns: settings.maxRuns, period: settings.period },
    });
    return withPublishedVersion(tx, saved);
  });
  // The listener cache re-reads the automation: the setting applies to the next delivery.
  listenerChanged(record.listenerId);
  return record;
}

/** A paused run that still waits, and the lane its event was recorded for (undefined: none). */
interface PausedRun {
  runId: string;
  queue: RunQueue | undefined;
}

/**
 * A run not found yet may be a delivery whose start is still on its way: it is asked after again
 * until the intake's start bound has passed (then it is taken as gone).
 */
const START_ON_ITS_WAY_MS = 5000;
/** How often a run not found yet is asked after again. */
const NOT_FOUND_RETRY_MS = 200;
const NOT_FOUND = Symbol('not found');

/** `act`'s answer, asked again while it is NOT_FOUND and a start may still be on its way; then `gone`. */
async function untilFound<T>(act: () => Promise<T | typeof NOT_FOUND>, gone: T): Promise<T> {
  const givesUpAt = Date.now() + START_ON_ITS_WAY_MS;
  for (;;) {
    const answer = await act();
    if (answer !== NOT_FOUND) return answer;
    if (Date.now() >= givesUpAt) return gone;
    await new Promise((resolve) => setTimeout(resolve, NOT_FOUND_RETRY_MS));
  }
}

/** Whether a paused run still waits (only an open run is let go) and the lane its input names. */
function look(engine: RunEngine, runId: string): Promise<PausedRun | undefined> {
  return untilFound(async () => {
    const state = await engine.state(runId);
    if (state === undefined) return NOT_FOUND;
    if (state !== 'RUNNING') return undefined;
    return { runId, queue: await engine.recordedQueue(runId) };
  }, undefined);
}

/**
 * Lets a paused run go: asks its lane for a permit first (when it has one, so that per key the
 * paused runs are admitted in the order they are resumed), then signals it. False when it no longer waits.
 */
function resume(engine: RunEngine, run: PausedRun, automation: { id: string; name: string }): Promise<boolean> {
  const { queue } = run;
  return untilFound(async () => {
    if (queue)
      await engine.requestLanePermit({
        automationId: automation.id,
        lane: queue.lane,
        runId: run.runId,
        limit: queue.limit,
        automationName: automation.name,
      });
    const sent = await engine.resume(run.runId, { laneRequested: queue !== undefined });
    return sent === 'unknown' ? NOT_FOUND : sent === 'sent';
  }, false);
}

/** Cancels a paused run (it ends CANCELED before any step). False when it no longer waits. */
function cancelPaused(engine: RunEngine, runId: string): Promise<boolean> {
  return untilFound(async () => {
    const state = await engine.state(runId);
    if (state === undefined) return NOT_FOUND;
    if (state !== 'RUNNING') return false;
    return (await engine.cancel(runId)).accepted ? true : NOT_FOUND;
  }, false);
}

/** Calls to the engine in flight at once while paused runs are let go (each is a few round trips). */
const LET_GO_CONCURRENCY = 8;

/**
 * `work` over `items`, at most `concurrency` at a time, the answers in the items' order. After a
 * failure nothing more is started; the first failure is thrown once the calls in flight end.
 */
async function bounded<T, R>(items: readonly T[], concurrency: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const answers: R[] = new Array(items.length);
  let next = 0;
  let failure: { error: unknown } | undefined;
  const worker = async () => {
    while (failure === undefined && next < items.length) {
      const index = next++;
      try {
        answers[index] = await work(items[index]!);
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
  if (failure) throw failure.error;
  return answers;
}

/**
 * Resumes `runIds` (in acceptance order): each is looked at first, side by side; then the runs of
 * each lane are resumed one after the other in acceptance order (per key, a paused run asks its lane
 * before any run of that key accepted after it), the lanes side by side; runs without a lane are
 * one more such sequence. Answers how many were let go.
 */
async function resumeInOrder(
  engine: RunEngine,
  runIds: string[],
  automation: { id: string; name: string },
): Promise<number> {
  const waiting = (await bounded(runIds, LET_GO_CONCURRENCY, (runId) => look(engine, runId))).filter(
    (run) => run !== undefined,
  );
  const sequences = new Map<string | undefined, PausedRun[]>();
  for (const run of waiting) {
    const sequence = sequences.get(run.queue?.lane);
    if (sequence) sequence.push(run);
    else sequences.set(run.queue?.lane, [run]);
  }
  const counts = await bounded([...sequences.values()], LET_GO_CONCURRENCY, async (sequence) => {
    let resumed = 0;
    for (const run of sequence) if (await resume(engine, run, automation)) resumed += 1;
    return resumed;
  });
  return counts.reduce((sum, n) => sum + n, 0);
}

/**
 * Resumes (or cancels) every paused run of the automation, in acceptance order, then closes the
 * breaker. Answers how many runs were let go. Audited with the actor and the reason.
 */
export async function letGoPausedRuns(
  db: Db,
  engine: RunEngine,
  id: string,
  action: 'resume' | 'cancel',
  body: BreakerActionRequest,
  actor: string,
): Promise<{ record: AutomationWithPublishedVersion; count: number }> {
  const current = await store.getAutomation(db, id);
  if (!current) throw notFound('automation');
  let count = 0;
  for (;;) {
    const runs = await pausedRuns(db, id);
    count +=
      action === 'resume'
        ? await resumeInOrder(engine, runs, { id, name: current.displayName })
        : (await bounded(runs, LET_GO_CONCURRENCY, (run) => cancelPaused(engine, run))).filter(Boolean).length;
    if (await releasePaused(db, id, runs)) break;
  }
  await recordAudit(db, {
    actor,
    action: action === 'resume' ? 'automation.breaker.resume' : 'automation.breaker.cancel',
    resourceType: 'automation',
    resourceId: id,
    details: { reason: body.reason, [action === 'resume' ? 'resumed' : 'canceled']: count },
  });
  return { record: await withPublishedVersion(db, (await store.getAutomation(db, id)) ?? current), count };
}

/** A paused run canceled or terminated on its own: the breaker no longer lists it. */
export async function pausedRunEnded(db: Queryable, automationId: string, runId: string): Promise<void> {
  await forgetPausedRun(db, automationId, runId);
}
