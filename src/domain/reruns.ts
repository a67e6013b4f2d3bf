/**
 * What a rerun starts, the rules of the service and not the engine's: a run's reruns (their ids,
 * the cap, the version and flow control a rerun runs with, a retry from the failed step) and the
 * reruns a bulk action started (kept in the store).
 */
import type { AutomationRunInput } from '../contract/run';
import type { Db, Queryable } from '../store/db';
import { getAutomation } from '../store/automations';
import { getLatestPublishedVersion } from '../store/automation-versions';
import { bulkRerunsOf } from '../store/bulk-actions';
import { runFlowOf } from '../flow';
import { FailedPreconditionError, NotFoundError } from '../errors';
import type { RunEngine, RunStart } from './engine';
import { bulkActionOfRerunId, bulkRerunId, rerunWorkflowId, type RunRecord } from './runs';

/** Most reruns of one run (ids `…:rerun-1` to `…:rerun-100`; a bulk action's reruns count too). */
export const MAX_RERUNS = 100;

/** The run with its reruns: the engine's numbered ones, then those bulk actions started (kept in the store). */
export async function readRun(db: Queryable, engine: RunEngine, runId: string): Promise<RunRecord | undefined> {
  const bulkReruns = bulkRerunsOf(db, runId);
  bulkReruns.catch(() => undefined); // awaited below when the run exists
  const record = await engine.get(runId);
  if (!record) return undefined;
  return { ...record, reruns: [...record.reruns, ...(await bulkReruns)] };
}

/** The version a fresh rerun runs: the automation's currently published one, with its name and flow control. */
export interface PublishedForRerun {
  version: number;
  automationName: string;
  flow?: unknown;
}

/** The automation's currently published version, or undefined when it is not published (or gone). */
export async function publishedForRerun(db: Queryable, automationId: string): Promise<PublishedForRerun | undefined> {
  const automation = await getAutomation(db, automationId);
  const latest = automation?.published ? await getLatestPublishedVersion(db, automationId) : undefined;
  return latest
    ? {
        version: latest.version,
        automationName: latest.snapshot.displayName,
        ...(latest.snapshot.flow ? { flow: latest.snapshot.flow } : {}),
      }
    : undefined;
}

export interface RerunOptions {
  /** Retry from the failed step (original version, earlier results reused) instead of a fresh run. */
  fromFailedStep: boolean;
  /** For a fresh run: the automation's currently published version, or undefined when it is not published. */
  published: PublishedForRerun | undefined;
  /** A bulk action's rerun: its id is derived from this and the original (`bulkRerunId`). */
  bulkActionId?: string;
}

/**
 * Starts a rerun (same payload, the currently published version, its flow control: a person asked,
 * so the filter does not apply and the concurrency limit does) or, with `fromFailedStep`, a retry
 * from the failed step (the original version and lane; the recorded results of the steps before it
 * are reused, and its calls carry the original run's keys, so that the failed call, repeated,
 * carries the key it had). A bulk action's rerun has one id per bulk action and run, so no retry of
 * the action starts another. At most MAX_RERUNS per run. Answers the new run's id.
 */
export async function startRerun(
  db: Db,
  engine: RunEngine,
  runId: string,
  options: RerunOptions,
): Promise<{ executionId: string }> {
  const original = await readRun(db, engine, runId);
  if (!original) throw new NotFoundError('automation execution', runId);
  const input = await engine.input(runId);
  if (!input) throw new NotFoundError('automation execution', runId);
  let start: Omit<RunStart, 'runId' | 'summary'>;
  if (options.fromFailedStep) {
    const failedIndex = original.steps.findIndex((step) => step.status === 'FAILED');
    if (original.status !== 'FAILED' || failedIndex < 0 || original.version === null) {
      throw new FailedPreconditionError(
        'only a FAILED run with a failed step can be retried from that step',
        'NOT_FAILED',
      );
    }
    const earlier = original.steps
      .slice(0, failedIndex)
      .filter((step) => step.status === 'DONE' || step.status === 'SKIPPED');
    const keysOf = input.resume?.keysOf ?? original.callKeysOf;
    // The original version's lane, asked by the retry itself (a rerun has no acceptance order to keep).
    const queue = input.flow?.queue;
    start = {
      input: {
        ...baseInput(input, original.version),
        ...(queue ? { flow: { queue: { ...queue, requested: false } } } : {}),
        rerunOf: runId,
        resume: {
          fromStepId: original.steps[failedIndex]!.id,
          steps: earlier.map((step) => ({
            id: step.id,
            status: step.status as 'DONE' | 'SKIPPED',
            output: step.output,
          })),
          keysOf,
        },
      },
      automationName: original.automationName ?? 'automation',
      rerunOf: runId,
      callKeysOf: keysOf,
    };
  } else {
    if (!options.published) {
      throw new FailedPreconditionError('the automation is not published: publish it before a rerun', 'NOT_PUBLISHED');
    }
    const flow = runFlowOf(options.published.flow, {
      automationId: input.automationId,
      payload: input.trigger,
      requested: false,
    });
    start = {
      input: { ...baseInput(input, options.published.version), ...(flow ? { flow } : {}), rerunOf: runId },
      automationName: options.published.automationName,
      rerunOf: runId,
    };
  }
  if (options.bulkActionId !== undefined && !options.fromFailedStep) {
    // A second start is refused and answers the run the first one started.
    const bulkRunId = bulkRerunId(runId, options.bulkActionId);
    if (original.reruns.filter((id) => id !== bulkRunId).length >= MAX_RERUNS) throw tooManyReruns();
    await engine.start({
      ...start,
      runId: bulkRunId,
      summary: `bulk action ${options.bulkActionId} rerun of ${runId}`,
      bulkActionId: options.bulkActionId,
    });
    return { executionId: bulkRunId };
  }
  const bulkReruns = original.reruns.filter((id) => bulkActionOfRerunId(id, runId) !== undefined).length;
  for (let n = 1; n <= MAX_RERUNS - bulkReruns; n++) {
    const next = rerunWorkflowId(runId, n);
    const summary = `${options.fromFailedStep ? 'retry' : 'rerun'} ${n} of ${runId}`;
    if ((await engine.start({ ...start, runId: next, summary })) === 'started') return { executionId: next };
  }
  throw tooManyReruns();
}

function tooManyReruns(): FailedPreconditionError {
  return new FailedPreconditionError(`a run can be rerun at most ${MAX_RERUNS} times`, 'TOO_MANY_RERUNS');
}

/** What every rerun keeps of the original's input: its event, its payload; the version is the rerun's. */
function baseInput(input: AutomationRunInput, version: number): AutomationRunInput {
  return {
    automationId: input.automationId,
    version,
    listenerId: input.listenerId,
    eventId: input.eventId,
    receivedAt: input.receivedAt,
    trigger: input.trigger,
  };
}
