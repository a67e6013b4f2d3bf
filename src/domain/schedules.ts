/**
 * Schedule automations (docs/api.md#schedule-triggers): a Temporal Schedule per published
 * automation whose trigger is a `schedule`, kept as the store says.
 *
 * - A write that changes what the Schedule should be (publish, unpublish, delete, a trigger update
 *   of a published one) puts or removes it inside the write's transaction, before the commit: an
 *   engine that does not answer makes the write a 503 that changes nothing. A crash between the
 *   Schedule call and the commit leaves a Schedule the store does not know: `reconcileSchedules`,
 *   at start-up and daily, puts every Schedule the store asks for and removes every other.
 * - Each action is a run whose id is derived from the automation and its scheduled time
 *   (`scheduledRunId`), started by the `scheduledRun` workflow (workflows/scheduled-run.ts) through
 *   `prepareScheduledRun`, so no time runs twice across restarts and API processes.
 * - Backfill and trigger-now start actions of kind `backfill` and `manual`.
 */
import type { Db, Queryable } from '../store/db';
import type { Logger } from '../logger';
import * as store from '../store/automations';
import type { AutomationRecord } from '../store/automations';
import { getLatestPublishedVersion } from '../store/automation-versions';
import { lastFiredAt, recordScheduleAction, timesThatRan, type ScheduleActionKind } from '../store/schedule-actions';
import {
  isScheduleTrigger,
  OVERLAP_POLICIES,
  triggerKindOf,
  type OverlapPolicy,
  type ScheduleTrigger,
} from '../triggers';
import { runWorkflowId } from '../contract/run';
import type { PreparedScheduledRun } from '../contract/activities';
import { decideDelivery } from '../flow';
import { FailedPreconditionError, invalidArgument, notFound, WorkflowEngineUnavailableError } from '../errors';
import { recordAudit } from '../store/audit';
import { recordTriggerDelivery } from './deliveries';
import { dstCorrections } from './schedule-dst';
import type { RunEngine, ScheduleDefinition } from './engine';

/** What the schedule calls need of the engine. */
export type ScheduleEngine = Pick<
  RunEngine,
  | 'putSchedule'
  | 'deleteSchedule'
  | 'describeSchedule'
  | 'scheduledAutomations'
  | 'scheduleTimes'
  | 'startScheduleActions'
  | 'childRunOptions'
>;

/** The most actions one backfill may start (or count as skipped). */
export const MAX_BACKFILL_ACTIONS = 1000;
/** A range with more actions than this is refused without counting them all. */
const MAX_COUNTED_ACTIONS = 100_000;
/** How many of the next times a read shows. */
export const NEXT_RUNS = 5;
/** Reconciliation's period (it also moves the daylight-saving corrections' horizon). */
export const RECONCILE_EVERY_MS = 86_400_000;

/** The Schedule a record asks for: only a published automation with a schedule trigger has one. */
export function scheduleDefinitionOf(record: AutomationRecord, nowMs = Date.now()): ScheduleDefinition | undefined {
  if (!record.published || !isScheduleTrigger(record.trigger)) return undefined;
  return {
    automationId: record.id,
    automationName: record.displayName,
    trigger: record.trigger,
    corrections: dstCorrections(record.trigger, nowMs),
  };
}

/**
 * Makes the automation's Schedule what `after` asks for (undefined: the automation is gone), when
 * `before` or `after` is a schedule automation; anything else asks nothing of the engine.
 */
export async function syncSchedule(
  engine: ScheduleEngine | undefined,
  before: AutomationRecord | undefined,
  after: AutomationRecord | undefined,
): Promise<void> {
  const touched = [before, after].some((record) => record && isScheduleTrigger(record.trigger));
  if (!touched || !engine) return;
  const definition = after && scheduleDefinitionOf(after);
  if (definition) await engine.putSchedule(definition);
  else await engine.deleteSchedule((after ?? before)!.id);
}

/** Puts every Schedule the store asks for and removes every other; answers the counts. */
export async function reconcileSchedules(
  db: Queryable,
  engine: ScheduleEngine,
): Promise<{ put: number; removed: number }> {
  const wanted = await store.publishedOfTriggerKind(db, 'schedule');
  const wantedIds = new Set(wanted.map((record) => record.id));
  for (const record of wanted) await engine.putSchedule(scheduleDefinitionOf(record)!);
  let removed = 0;
  for (const automationId of await engine.scheduledAutomations()) {
    if (wantedIds.has(automationId)) continue;
    await engine.deleteSchedule(automationId);
    removed += 1;
  }
  return { put: wanted.length, removed };
}

/** Reconciles now and then every RECONCILE_EVERY_MS (an engine that is down is tried again in a minute); answers the stop. */
export function startScheduleReconciler(db: Queryable, engine: ScheduleEngine, logger: Logger): () => void {
  const log = logger.child({ component: 'schedules' });
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const round = async () => {
    let next = RECONCILE_EVERY_MS;
    try {
      const counts = await reconcileSchedules(db, engine);
      log.info(counts, 'schedules reconciled with the store');
    } catch (err) {
      next = 60_000;
      log.warn({ err: (err as Error).message }, 'schedules: reconciliation failed (tried again in a minute)');
    }
    if (!stopped) timer = setTimeout(() => void round(), next).unref();
  };
  void round();
  return () => {
    stopped = true;
    if (timer) clearTimeout(timer);
  };
}

/** The run id of an automation's action at `scheduledAt`. */
export function scheduledRunId(listenerId: string, scheduledAt: string): string {
  return runWorkflowId(listenerId, new Date(scheduledAt).toISOString());
}

/** The activity behind a schedule's action: records it and answers the run to start (its child). */
export async function prepareScheduledRun(
  db: Db,
  engine: RunEngine,
  input: { automationId: string; scheduledAt: string; firedAt: string; kind: ScheduleActionKind },
): Promise<{ run: PreparedScheduledRun } | { skip: 'gone' }> {
  const automation = await store.getAutomation(db, input.automationId);
  if (!automation || !automation.published || !isScheduleTrigger(automation.trigger)) return { skip: 'gone' };
  const version = await getLatestPublishedVersion(db, automation.id);
  if (!version) return { skip: 'gone' };
  const scheduledAt = new Date(input.scheduledAt).toISOString();
  const executionId = scheduledRunId(automation.listenerId, scheduledAt);
  const trigger = { kind: input.kind, scheduledAt, firedAt: input.firedAt };
  const facts = {
    version: version.version,
    listenerId: automation.listenerId,
    eventId: scheduledAt,
    receivedAt: input.firedAt,
    trigger,
  };
  // Only the Schedule's own actions count for (and are paused by) a circuit breaker.
  let flow;
  let paused = false;
  if (input.kind === 'scheduled') {
    const decision = await decideDelivery(
      { version: version.snapshot.flow, live: automation.liveFlow },
      {
        db,
        engine,
        automationId: automation.id,
        automationName: version.snapshot.displayName,
        listenerId: automation.listenerId,
        eventId: scheduledAt,
        receivedAt: input.firedAt,
        payload: trigger,
        hasFilteredEvents: false,
        // A schedule automation has no concurrency (overlap is its flow control): no lane to bound.
        laneQueueLimit: 0,
      },
    );
    if (decision.verdict === 'start') {
      flow = decision.flow;
      paused = decision.paused;
    }
  }
  await recordScheduleAction(db, {
    automationId: automation.id,
    scheduledAt,
    kind: input.kind,
    firedAt: input.firedAt,
    executionId,
  });
  await recordTriggerDelivery(db, {
    automationId: automation.id,
    source: 'schedule',
    reason: paused ? 'paused' : 'started',
    eventId: scheduledAt,
    executionId,
    occurredAt: scheduledAt,
  });
  return {
    run: engine.childRunOptions({
      runId: executionId,
      input: { automationId: automation.id, ...facts, ...(flow ? { flow } : {}) },
      automationName: version.snapshot.displayName,
      summary: `${input.kind} ${scheduledAt}`,
    }),
  };
}

/** The `schedule` member of a published schedule automation's read (absent otherwise, or when the engine does not answer). */
export async function scheduleView(
  db: Queryable,
  engine: ScheduleEngine,
  record: AutomationRecord,
  logger?: Logger,
): Promise<{ nextRuns: string[]; paused: boolean; lastRunAt: string | null } | undefined> {
  if (!record.published || !isScheduleTrigger(record.trigger)) return undefined;
  try {
    const state = await engine.describeSchedule(record.id, NEXT_RUNS);
    if (!state) return undefined;
    return { ...state, lastRunAt: await lastFiredAt(db, record.id) };
  } catch (err) {
    if (!(err instanceof WorkflowEngineUnavailableError)) throw err;
    logger?.warn({ automationId: record.id }, 'schedule: the engine did not answer; the read has no schedule');
    return undefined;
  }
}

/** The published schedule automation of `id`: 404 unknown, 400 another trigger kind, 409 unpublished. */
async function publishedSchedule(
  db: Queryable,
  id: string,
): Promise<{ record: AutomationRecord; trigger: ScheduleTrigger }> {
  const record = await store.getAutomation(db, id);
  if (!record) throw notFound('automation');
  if (!isScheduleTrigger(record.trigger))
    throw invalidArgument({
      field: 'trigger',
      description: `a ${triggerKindOf(record.trigger)} trigger has no schedule`,
    });
  if (!record.published)
    throw new FailedPreconditionError('the automation is not published: it has no schedule', 'NOT_PUBLISHED');
  return { record, trigger: record.trigger };
}

function timeField(value: unknown, field: string): Date {
  const date = typeof value === 'string' && /^\d{4}-\d{2}-\d{2}T/.test(value) ? new Date(value) : undefined;
  if (!date || Number.isNaN(date.getTime()))
    throw invalidArgument({ field, description: 'must be an RFC 3339 time, e.g. "2027-03-28T00:00:00Z"' });
  return date;
}

/**
 * Runs the actions of a past range (`startAt` ≤ t < `endAt`, as the Schedule computes them): at
 * most MAX_BACKFILL_ACTIONS, times that already ran are counted as skipped and not run again.
 * With an overlap other than ALLOW_ALL they run one after another.
 */
export async function backfillSchedule(
  db: Db,
  engine: ScheduleEngine,
  id: string,
  body: { startAt?: unknown; endAt?: unknown; overlap?: unknown },
  actor: string,
  nowMs = Date.now(),
): Promise<{ started: number; skipped: number }> {
  const startAt = timeField(body.startAt, 'startAt');
  const endAt = timeField(body.endAt, 'endAt');
  if (startAt.getTime() >= endAt.getTime())
    throw invalidArgument({ field: 'endAt', description: 'must be after startAt' });
  if (endAt.getTime() > nowMs) throw invalidArgument({ field: 'endAt', description: 'must not be in the future' });
  if (body.overlap !== undefined && !(OVERLAP_POLICIES as readonly unknown[]).includes(body.overlap))
    throw invalidArgument({ field: 'overlap', description: `must be one of ${OVERLAP_POLICIES.join(', ')}` });
  const { record, trigger } = await publishedSchedule(db, id);
  const overlap = (body.overlap as OverlapPolicy | undefined) ?? trigger.overlap;
  const times = await engine.scheduleTimes(id, startAt, endAt, MAX_COUNTED_ACTIONS);
  if (times.length > MAX_BACKFILL_ACTIONS)
    throw invalidArgument({
      field: 'endAt',
      description: `the range has ${times.length > MAX_COUNTED_ACTIONS ? `more than ${MAX_COUNTED_ACTIONS}` : times.length} actions: at most ${MAX_BACKFILL_ACTIONS} may be backfilled at once`,
    });
  const ran = await timesThatRan(db, id, times);
  const missing = times.filter((time) => !ran.has(time));
  for (const time of times.filter((t) => ran.has(t)))
    await recordTriggerDelivery(db, {
      automationId: id,
      source: 'schedule',
      reason: 'skipped',
      eventId: time,
      executionId: scheduledRunId(record.listenerId, time),
      occurredAt: new Date(nowMs).toISOString(),
    });
  if (missing.length > 0) await engine.startScheduleActions(id, missing, 'backfill', overlap);
  const counts = { started: missing.length, skipped: times.length - missing.length };
  await recordAudit(db, {
    actor,
    action: 'automation.schedule.backfill',
    resourceType: 'automation',
    resourceId: record.id,
    details: { startAt: startAt.toISOString(), endAt: endAt.toISOString(), overlap, ...counts },
  });
  return counts;
}

/** Runs one action now (`manual`; also while paused): answers its run's id. */
export async function triggerSchedule(
  db: Db,
  engine: ScheduleEngine,
  id: string,
  actor: string,
  nowMs = Date.now(),
): Promise<{ executionId: string }> {
  const { record, trigger } = await publishedSchedule(db, id);
  const scheduledAt = new Date(nowMs).toISOString();
  await engine.startScheduleActions(id, [scheduledAt], 'manual', trigger.overlap);
  const executionId = scheduledRunId(record.listenerId, scheduledAt);
  await recordAudit(db, {
    actor,
    action: 'automation.schedule.trigger',
    resourceType: 'automation',
    resourceId: record.id,
    details: { scheduledAt, executionId },
  });
  return { executionId };
}
