/**
 * Bulk actions on runs (docs/api.md#bulk-actions-on-runs): cancel, terminate or rerun every run
 * of one automation that a filter matches. The matched set is fixed when the action (or its dry
 * run's preview) is made and kept in the store, never in a workflow's input; a durable workflow
 * (workflows/bulk-action.ts) walks it in pages through the activities, which act on each run at
 * most once: an outcome is written once per run, and every effect is idempotent (a cancel carries
 * a request id of its own, a terminate of a run the action had already claimed counts as done, a
 * rerun's id is derived from the bulk action and the original run).
 */
import { createHash } from 'node:crypto';
import { celLimits, costUsed, evaluate } from '../cel';
import {
  CelEvaluationError,
  FailedPreconditionError,
  invalidArgument,
  notFound,
  NotFoundError,
  UnavailableError,
  WorkflowEngineUnavailableError,
} from '../errors';
import { newId } from '../ids';
import { recordAudit } from '../store/audit';
import { getAutomation } from '../store/automations';
import {
  addBulkCountsToAudit,
  claimRuns,
  completeBulkAction,
  copyPreviewRuns,
  deleteBulkAction,
  deleteExpiredPreviews,
  getBulkAction,
  insertBulkSet,
  listBulkActions,
  pendingRuns,
  recordOutcomes,
  runningBulkActionIds,
  stopBulkAction,
  type BulkActionKind,
  type BulkActionRecord,
  type RunOutcome,
} from '../store/bulk-actions';
import type { Db } from '../store/db';
import type { BulkFilter, BulkRequest } from './api-schemas';
import type { RunEngine, RunMatch } from './engine';
import { publishedForRerun, startRerun, type RerunOptions } from './reruns';
import { isString, pageOf } from './listing';
import type { Page, PageRequest, PageTokens } from './pagination';

/** With `where`, at most this many candidate runs (those the other filters match) are read. */
export const MAX_WHERE_CANDIDATES = 10_000;
/** At most this many runs per bulk action. */
export const MAX_MATCHED = 100_000;
/** A dry run's preview can be acted on for this long. */
export const PREVIEW_TTL_SECONDS = 600;
const SAMPLE_SIZE = 20;

export interface BulkActRequest {
  action: BulkActionKind;
  runId: string;
  bulkActionId: string;
  /** The reason the run's cancel or terminate records (names the bulk action). */
  reason: string;
  /** An earlier attempt claimed this run: it may have acted before it died. */
  claimedBefore: boolean;
  /** For a rerun: the automation's published version, undefined when it is not published. */
  published: RerunOptions['published'];
}

export type BulkActResult =
  { outcome: 'succeeded'; newExecutionId?: string } | { outcome: 'skipped' | 'failed'; reason: string };

export interface BulkActionView {
  id: string;
  action: BulkActionKind;
  filter: Record<string, unknown>;
  reason: string;
  by: string;
  state: 'RUNNING' | 'COMPLETED' | 'CANCELED';
  matched: number;
  succeeded: number;
  skipped: number;
  failed: number;
  createdAt: string;
  finishedAt: string | null;
}

function view(record: BulkActionRecord): BulkActionView {
  return {
    id: record.id,
    action: record.action ?? 'cancel',
    filter: record.filter,
    reason: record.reason,
    by: record.by,
    state: record.state === 'PREVIEW' ? 'RUNNING' : record.state,
    matched: record.matched,
    succeeded: record.succeeded,
    skipped: record.skipped,
    failed: record.failed,
    createdAt: record.createdAt,
    finishedAt: record.finishedAt,
  };
}

export type BulkCreated =
  | { kind: 'preview'; matched: number; sample: string[]; previewId: string; whereErrors: number }
  | { kind: 'action'; bulkAction: BulkActionView };

/** The filter as stored and shown: the given fields only. */
function storedFilter(filter: BulkFilter): Record<string, unknown> {
  const out: Record<string, unknown> = { automationId: filter.automationId };
  if (filter.status) out.status = [...new Set(filter.status)];
  if (filter.startedAfter) out.startedAfter = filter.startedAfter;
  if (filter.startedBefore) out.startedBefore = filter.startedBefore;
  if (filter.where) out.where = filter.where;
  return out;
}

/** The runs a filter matches now: visibility, then `where` over each candidate's payload. */
export interface BulkLimits {
  /** With `where`, at most this many candidates are read (default MAX_WHERE_CANDIDATES). */
  maxWhereCandidates: number;
  /** At most this many runs per action (default MAX_MATCHED). */
  maxMatched: number;
  /** The cost budget all candidates of one `where` share (default WHERE_BUDGET). */
  whereBudget: number;
}

/**
 * The cost budget of evaluating `where` over all the candidates of one request: ten single
 * evaluations' budgets, which 10,000 candidates of payloads up to about 8 KB fit in.
 */
export const WHERE_BUDGET = 10 * celLimits.MAX_EVALUATION_COST;

export const BULK_LIMITS: BulkLimits = {
  maxWhereCandidates: MAX_WHERE_CANDIDATES,
  maxMatched: MAX_MATCHED,
  whereBudget: WHERE_BUDGET,
};

export async function matchRuns(
  engine: RunEngine,
  filter: BulkFilter,
  limits: BulkLimits,
): Promise<{ runIds: string[]; whereErrors: number }> {
  const visibility: RunMatch = {
    automationId: filter.automationId,
    statuses: filter.status ? [...new Set(filter.status)] : [],
    startedAfter: filter.startedAfter ?? undefined,
    startedBefore: filter.startedBefore ?? undefined,
  };
  const where = filter.where ?? undefined;
  const limit = where !== undefined ? limits.maxWhereCandidates : limits.maxMatched;
  const counted = await engine.count(visibility);
  if (counted > limit) throw tooMany(where !== undefined, counted, limits);
  const candidates = await engine.matchIds(visibility, limit);
  if (candidates.length > limit) throw tooMany(where !== undefined, candidates.length, limits);
  if (where === undefined) return { runIds: candidates, whereErrors: 0 };
  const matched = await matchWhere(engine, where, candidates, limits);
  if (matched.runIds.length > limits.maxMatched) throw tooMany(false, matched.runIds.length, limits);
  return matched;
}

/** Candidates whose payloads are read, and `where` evaluated over, at a time; the event loop turns between pages. */
export const WHERE_PAGE_SIZE = 100;
/** Within a page, the event loop also turns whenever this much of the budget was spent since it last did (about 100 KB of payloads). */
export const WHERE_SLICE = 10_000;

/**
 * `where` over each candidate's payload, a page at a time: the payloads of one page are read, the
 * expression evaluated over each, and the event loop turns before the next page, so the API keeps
 * answering other requests meanwhile (under `npm start` the worker shares the process); within a
 * page it also turns every WHERE_SLICE of cost, so a page of large payloads does not stall it. All
 * candidates share one cost budget (`whereBudget`): each pays for its payload (1 per 10 characters
 * of its JSON, what converting it for CEL costs) and for its evaluation (the CEL cost it used);
 * when the budget is spent the request is refused, naming `filter.where`. A candidate whose
 * payload cannot be read, or on which `where` fails or is not a bool, is left out and counted.
 */
async function matchWhere(
  engine: RunEngine,
  where: string,
  candidates: readonly string[],
  limits: BulkLimits,
): Promise<{ runIds: string[]; whereErrors: number }> {
  const runIds: string[] = [];
  let whereErrors = 0;
  let spent = 0;
  let sinceTurn = 0;
  const turn = () => new Promise((resolve) => setImmediate(resolve));
  for (let start = 0; start < candidates.length; start += WHERE_PAGE_SIZE) {
    if (start > 0) {
      await turn();
      sinceTurn = 0;
    }
    const page = candidates.slice(start, start + WHERE_PAGE_SIZE);
    const payloads = await engine.payloads(page);
    for (const id of page) {
      if (!payloads.has(id)) {
        whereErrors += 1;
        continue;
      }
      if (sinceTurn >= WHERE_SLICE) {
        await turn();
        sinceTurn = 0;
      }
      const trigger = payloads.get(id);
      const before = spent;
      spent += Math.ceil((JSON.stringify(trigger)?.length ?? 0) / 10);
      try {
        const verdict = evaluate(where, { trigger, steps: {} });
        if (verdict === true) runIds.push(id);
        else if (verdict !== false) whereErrors += 1;
      } catch (err) {
        if (!(err instanceof CelEvaluationError)) throw err;
        whereErrors += 1;
      }
      spent += costUsed();
      sinceTurn += spent - before;
      if (spent > limits.whereBudget) {
        throw invalidArgument({
          field: 'filter.where',
          description: `evaluating where over the candidate runs exceeds its cost budget of ${limits.whereBudget} (at candidate ${start + page.indexOf(id) + 1} of ${candidates.length}): narrow the filter (status, startedAfter, startedBefore) or simplify where`,
        });
      }
    }
  }
  return { runIds, whereErrors };
}

function tooMany(withWhere: boolean, count: number, limits: BulkLimits): Error {
  return withWhere
    ? invalidArgument({
        field: 'filter.where',
        description: `${count} candidate runs match the other filters; with where at most ${limits.maxWhereCandidates} are read: narrow the filter (status, startedAfter, startedBefore)`,
      })
    : invalidArgument({
        field: 'filter',
        description: `${count} runs match; a bulk action takes at most ${limits.maxMatched}: narrow the filter`,
      });
}

/**
 * A dry run (a preview, kept PREVIEW_TTL_SECONDS) or an action, from a filter or a preview. The
 * action, its matched set and its audit record are written in one transaction, then its workflow
 * is started; when the engine cannot start it, the action is removed again (503, nothing left).
 */
export async function createBulkAction(
  db: Db,
  engine: RunEngine,
  actor: string,
  body: BulkRequest,
  limits: BulkLimits = BULK_LIMITS,
): Promise<BulkCreated> {
  await deleteExpiredPreviews(db);
  const { reason } = body;
  if (body.kind === 'preview') {
    const preview = await getBulkAction(db, body.previewId);
    if (!preview || preview.state !== 'PREVIEW' || preview.expired) {
      throw invalidArgument({
        field: 'previewId',
        description: `is unknown or expired (a preview is kept ${PREVIEW_TTL_SECONDS / 60} minutes): make a new dry run`,
      });
    }
    const id = newId();
    const created = await db.transaction(async (tx) => {
      const record = await insertBulkSet(
        tx,
        {
          id,
          action: body.action,
          automationId: preview.automationId,
          filter: preview.filter,
          reason,
          by: actor,
          state: 'RUNNING',
          matched: preview.matched,
          whereErrors: preview.whereErrors,
          previewId: preview.id,
        },
        [],
      );
      await copyPreviewRuns(tx, preview.id, id);
      await deleteBulkAction(tx, preview.id); // a preview is acted on once
      await audit(tx, record);
      return record;
    });
    return { kind: 'action', bulkAction: view(await startOrUndo(db, engine, created)) };
  }
  const { filter } = body;
  if (!(await getAutomation(db, filter.automationId))) throw notFound('automation', filter.automationId);
  const { runIds, whereErrors } = await matchRuns(engine, filter, limits);
  const id = newId();
  const set = {
    id,
    action: body.action,
    automationId: filter.automationId,
    filter: storedFilter(filter),
    reason,
    by: actor,
    matched: runIds.length,
    whereErrors,
    previewId: null,
  };
  if (body.kind === 'dryRun') {
    await db.transaction((tx) =>
      insertBulkSet(tx, { ...set, state: 'PREVIEW', expiresInSeconds: PREVIEW_TTL_SECONDS }, runIds),
    );
    return {
      kind: 'preview',
      matched: runIds.length,
      sample: runIds.slice(0, SAMPLE_SIZE),
      previewId: id,
      whereErrors,
    };
  }
  const created = await db.transaction(async (tx) => {
    const record = await insertBulkSet(tx, { ...set, state: 'RUNNING' }, runIds);
    await audit(tx, record);
    return record;
  });
  return { kind: 'action', bulkAction: view(await startOrUndo(db, engine, created)) };
}

/** The one audit record of a bulk action; its counts are completed when the action ends (finishBulkAction). */
async function audit(tx: Parameters<typeof recordAudit>[0], record: BulkActionRecord): Promise<void> {
  await recordAudit(tx, {
    actor: record.by,
    action: 'bulk_action.create',
    resourceType: 'bulk_action',
    resourceId: record.id,
    details: {
      action: record.action,
      filter: record.filter,
      reason: record.reason,
      previewId: record.previewId,
      counts: { matched: record.matched },
    },
  });
}

async function startOrUndo(db: Db, engine: RunEngine, record: BulkActionRecord): Promise<BulkActionRecord> {
  try {
    await engine.startBulkAction(record.id);
  } catch (err) {
    // Nothing was acted on: the action and its audit record go (no action left RUNNING without its workflow).
    await db.transaction((tx) => deleteBulkAction(tx, record.id, true));
    if (err instanceof UnavailableError || err instanceof WorkflowEngineUnavailableError) throw err;
    throw new UnavailableError('the workflow engine is unavailable; retry later', 5);
  }
  return record;
}

/** Actions restarted per pass: a backlog is worked off over the following passes. */
const RESTART_BATCH = 100;

/**
 * Starts the workflow of every RUNNING action recorded at least `olderThanMs` ago. An API killed
 * between recording an action and starting its workflow leaves it RUNNING with no workflow; the
 * workflow id derives from the action id and a second start is refused, so starting an action that
 * has its workflow changes nothing. The age keeps away from an action its API is still starting,
 * or undoing after a failed start. Answers the ids it started or found started.
 */
export async function restartBulkActions(db: Db, engine: RunEngine, olderThanMs: number): Promise<string[]> {
  const ids = await runningBulkActionIds(db, olderThanMs / 1000, RESTART_BATCH);
  for (const id of ids) await engine.startBulkAction(id);
  return ids;
}

/** One bulk action (never a preview); 404 otherwise. */
export async function readBulkAction(db: Db, id: string): Promise<BulkActionView> {
  const record = await getBulkAction(db, id);
  if (!record || record.state === 'PREVIEW') throw notFound('bulk action', id);
  return view(record);
}

export async function listBulkActionsPage(
  db: Db,
  tokens: PageTokens,
  page: PageRequest,
): Promise<Page<{ bulkAction: BulkActionView }>> {
  return pageOf(tokens, page, {
    name: 'bulk_actions',
    filter: {},
    isCursor: isString,
    fetch: (before, limit) => listBulkActions(db, before, limit),
    keyOf: (record) => record.id,
    toItem: (record) => ({ bulkAction: view(record) }),
  });
}

/**
 * Stops a running action: no page is claimed after this answer, and the page being acted on sees
 * the stop at its next checkpoint (every CHECKPOINT_MS, so within a second; the runs being acted
 * on at that moment finish); the runs not yet acted on stay as they are. A stopped action answers as it is; a
 * completed one is 409.
 */
export async function cancelBulkAction(db: Db, id: string): Promise<BulkActionView> {
  const stopped = await stopBulkAction(db, id);
  if (stopped) return view(stopped);
  const record = await getBulkAction(db, id);
  if (!record || record.state === 'PREVIEW') throw notFound('bulk action', id);
  if (record.state === 'COMPLETED')
    throw new FailedPreconditionError('the bulk action has completed', 'BULK_ACTION_COMPLETED');
  return view(record);
}

// ---------------------------------------------------------------- the activities' side

/** At most this long a cancel waits for its run to close (pacing: see `actOnRun`). */
export const CLOSE_WAIT_MS = 10_000;
/**
 * A run whose close event is at most this much older than the cancel request was closed by it:
 * the event's time is the engine's clock, the request's this process's.
 */
export const CLOCK_TOLERANCE_MS = 1000;

/** A stable request id (UUID-shaped) for one bulk action and run: a repeated cancel is the same request to the engine. */
function requestIdOf(bulkActionId: string, runId: string): string {
  const hex = createHash('sha256').update(`${bulkActionId}\n${runId}`).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}

/**
 * Acts on one run, at most once however often it is asked: a cancel carries a request id derived
 * from the bulk action and the run, a terminate of a run an earlier attempt had claimed and that is
 * now TERMINATED (or CANCELED, for a cancel) was that attempt's, and a rerun has a derived id (a
 * second start answers the same run). A cancel or terminate is sent without asking first; only a
 * refused one is looked at, to say why it was skipped. The engine accepts a cancel of a run that
 * has closed already: how and when the run closed, which the cancel waits for, says whether this
 * cancel ended it. That wait is the action's pacing: a cancel's cost is mostly paid after its call
 * returns (the engine hands the run a task, a worker ends it), so a page acting on `concurrency`
 * runs at once keeps that many between their cancel and their end; a run that has not closed by
 * then (no worker, a stuck run) is left to close on its own.
 */
export async function actOnRun(
  db: Db,
  engine: RunEngine,
  request: BulkActRequest,
  closeWaitMs = CLOSE_WAIT_MS,
): Promise<BulkActResult> {
  const { runId, bulkActionId, claimedBefore } = request;
  if (request.action === 'rerun') {
    try {
      const started = await startRerun(db, engine, runId, {
        fromFailedStep: false,
        published: request.published,
        bulkActionId,
      });
      return { outcome: 'succeeded', newExecutionId: started.executionId };
    } catch (err) {
      if (err instanceof NotFoundError) return { outcome: 'skipped', reason: 'the run no longer exists' };
      if (err instanceof FailedPreconditionError) return { outcome: 'failed', reason: err.message };
      throw err;
    }
  }
  const ours = request.action === 'cancel' ? 'CANCELED' : 'TERMINATED';
  if (request.action === 'cancel') {
    const sentAt = Date.now();
    const answer = await engine.cancel(runId, {
      requestId: requestIdOf(bulkActionId, runId),
      reason: request.reason,
      waitMs: closeWaitMs,
    });
    if (answer.accepted) {
      const { closed } = answer;
      if (!closed) return { outcome: 'succeeded' }; // requested; the run ends on its own time
      if (closed.state === 'CANCELED' && (closed.atMs >= sentAt - CLOCK_TOLERANCE_MS || claimedBefore)) {
        return { outcome: 'succeeded' };
      }
      return { outcome: 'skipped', reason: `the run is closed (${closed.state})` };
    }
  } else if (await engine.terminate(runId, request.reason)) {
    return { outcome: 'succeeded' };
  }
  // Refused because the run is not running (closed, or unknown): only now is it looked at, for the
  // outcome and its reason. A running run costs the one call.
  const state = await engine.state(runId);
  if (state === undefined) return { outcome: 'skipped', reason: 'the run no longer exists' };
  if (state === 'RUNNING') return { outcome: 'skipped', reason: 'the run closed before the action reached it' };
  // An earlier attempt claimed the run and may have stopped it before it died: that was this action.
  if (claimedBefore && state === ours) return { outcome: 'succeeded' };
  return { outcome: 'skipped', reason: `the run is closed (${state})` };
}

export interface BulkPageOptions {
  pageSize: number;
  /** Runs acted on at once. */
  concurrency: number;
  /** Called after each run (activity heartbeat). */
  progress?: () => void;
  /** How often the outcomes so far are written and a stop looked for, in ms (default CHECKPOINT_MS). */
  checkpointMs?: number;
  /** How long a cancel waits for its run to close (default CLOSE_WAIT_MS). */
  closeWaitMs?: number;
}

/** Within a page, the outcomes so far are written, and a stop is seen, this often (as runs finish). */
export const CHECKPOINT_MS = 500;

/**
 * Acts on the next page of runs not yet acted on; `done` when none is left or the action no
 * longer runs. The page's runs are claimed in one statement; their outcomes are written together
 * (with the counters) every `checkpointMs` as runs finish and at the end, in one statement each,
 * which also answers whether the action still runs: after a stop, no further run of the page is
 * acted on. An engine that cannot be reached throws (the activity retries; the claims tell the next
 * attempt that it may have acted already, and acting again has no second effect).
 */
export async function actOnNextPage(
  db: Db,
  engine: RunEngine,
  bulkActionId: string,
  options: BulkPageOptions,
): Promise<{ done: boolean; acted: number }> {
  const action = await getBulkAction(db, bulkActionId);
  if (!action || action.state !== 'RUNNING' || action.action === null) return { done: true, acted: 0 };
  const runs = await pendingRuns(db, bulkActionId, options.pageSize);
  if (runs.length === 0) return { done: true, acted: 0 };
  const published = action.action === 'rerun' ? await publishedForRerun(db, action.automationId) : undefined;
  // Stopped, or acted on by another attempt meanwhile: the next page says which.
  const claims = await claimRuns(
    db,
    bulkActionId,
    runs.map((run) => run.seq),
  );
  const queue = runs.filter((run) => claims.has(run.seq));
  const checkpointMs = options.checkpointMs ?? CHECKPOINT_MS;
  const unwritten: RunOutcome[] = [];
  let acted = 0;
  let stopped = false;
  let lastCheckpoint = Date.now();
  let checkpointing: Promise<void> | undefined;
  const checkpoint = async (): Promise<void> => {
    const batch = unwritten.splice(0);
    try {
      if (!(await recordOutcomes(db, bulkActionId, batch)).running) stopped = true;
    } catch (err) {
      unwritten.unshift(...batch);
      throw err;
    }
    lastCheckpoint = Date.now();
  };
  const worker = async (): Promise<void> => {
    for (let run = queue.shift(); run !== undefined && !stopped; run = queue.shift()) {
      let result: BulkActResult;
      try {
        result = await actOnRun(
          db,
          engine,
          {
            action: action.action!,
            runId: run.runId,
            bulkActionId,
            reason: `bulk action ${bulkActionId}: ${action.reason}`,
            claimedBefore: claims.get(run.seq)!.claimedBefore,
            published,
          },
          options.closeWaitMs,
        );
      } catch (err) {
        if (err instanceof UnavailableError || err instanceof WorkflowEngineUnavailableError) throw err;
        result = { outcome: 'failed', reason: (err as Error).message };
      }
      unwritten.push({
        seq: run.seq,
        outcome: result.outcome,
        reason: result.outcome === 'succeeded' ? null : result.reason,
        newExecutionId: result.outcome === 'succeeded' ? (result.newExecutionId ?? null) : null,
      });
      acted += 1;
      options.progress?.();
      if (!checkpointing && Date.now() - lastCheckpoint >= checkpointMs) {
        checkpointing = checkpoint().finally(() => {
          checkpointing = undefined;
        });
        await checkpointing;
      }
    }
  };
  const settled = await Promise.allSettled(
    Array.from({ length: Math.max(1, Math.min(options.concurrency, queue.length)) }, () =>
      worker().catch((err: unknown) => {
        stopped = true; // the others finish the run they are on and take no other
        throw err;
      }),
    ),
  );
  const failure = settled.find((result) => result.status === 'rejected');
  // The outcomes of the runs acted on are written even when the page failed: the retry acts on the rest.
  try {
    await checkpointing?.catch(() => undefined);
    if (unwritten.length > 0) await checkpoint();
  } catch (err) {
    if (!failure) throw err;
  }
  if (failure) throw failure.reason;
  return { done: false, acted };
}

/** Ends the action (RUNNING → COMPLETED; a stopped one stays CANCELED) and completes its audit record's counts. */
export async function finishBulkAction(db: Db, bulkActionId: string): Promise<{ state: string }> {
  return db.transaction(async (tx) => {
    const record = (await completeBulkAction(tx, bulkActionId)) ?? (await getBulkAction(tx, bulkActionId));
    if (!record) return { state: 'UNKNOWN' };
    await addBulkCountsToAudit(tx, bulkActionId, {
      matched: record.matched,
      succeeded: record.succeeded,
      skipped: record.skipped,
      failed: record.failed,
      state: record.state,
    });
    return { state: record.state };
  });
}
