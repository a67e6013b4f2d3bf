/**
 * Schedule figures (`npm run bench -- --only=schedule`), on the shared stack (the automation worker
 * runs the schedule's actions and their runs; the baseline worker the floor):
 *   latenessP50Ms  a published automation with `trigger: {schedule: {interval: "2s"}}` and one
 *                  setVariables step: for each of `actions` actions, `ctx.trigger.scheduledAt` → the
 *                  start of the run's first step (the original schedule time of the step's local
 *                  activity, from the run's history), p50
 *   floorP50Ms     a bare Temporal Schedule on the same server, interval 2 s offset 1 s (its actions
 *                  fall between the automation's), whose action is a workflow of one activity
 *                  (bench/workflows/bare.ts `scheduledStamp`): the Schedule's scheduled time → the
 *                  activity's start, p50
 *   ratioToFloor   latenessP50Ms ÷ floorP50Ms
 * The first WARMUP actions of each are left out. Both Schedules are removed at the end (the
 * automation's by its unpublish, through the API, as a user removes it).
 * Goal from the issue: latenessP50Ms ≤ 1,500.
 */
import { randomUUID } from 'node:crypto';
import type { temporal } from '@temporalio/proto';
import { createTemporalEngine } from '../src/temporal/engine';
import type { scheduledStamp } from './workflows/bare';
import { AUTOMATION_QUEUE, BARE_QUEUE, type Stack } from './stack';
import { percentile, request } from './util';

export interface ScheduleResult {
  latenessP50Ms: number;
  latenessP90Ms: number;
  floorP50Ms: number;
  floorP90Ms: number;
  ratioToFloor: number;
  /** Actions measured on each side. */
  actions: number;
  /** The automation's action (its scheduledRun workflow's start) → its run's first step, p50: the product's own hops. */
  actionToStepP50Ms: number;
  /** scheduledAt → the scheduledRun workflow's start (the Schedule's own part), p50. */
  scheduleToActionP50Ms: number;
  /** What the first step's start was read from (history events), for the table. */
  firstStepFrom: string;
}

export interface ScheduleTiming {
  /** Actions measured on each side (after the warm-up). */
  actions: number;
}

const INTERVAL_MS = 2000;
const WARMUP = 2;

type History = temporal.api.history.v1.IHistory;

function eventMs(event: temporal.api.history.v1.IHistoryEvent): number {
  const t = event.eventTime!;
  return Number(t.seconds ?? 0) * 1000 + Math.floor((t.nanos ?? 0) / 1e6);
}

/**
 * When the run's first step started: the original schedule time of the first local activity after
 * the version's load (core's marker data), else the first activity scheduled, else the first
 * workflow task's start.
 */
export function firstStepStartMs(history: History): { at: number; from: string } {
  const events = history.events ?? [];
  const markers: Array<{ type: string; at: number }> = [];
  for (const event of events) {
    const marker = event.markerRecordedEventAttributes;
    if (marker?.markerName !== 'core_local_activity') continue;
    const data = marker.details?.data?.payloads?.[0]?.data;
    if (!data) continue;
    const parsed = JSON.parse(Buffer.from(data).toString('utf8')) as {
      activity_type?: string;
      original_schedule_time?: { seconds: number; nanos: number };
    };
    const t = parsed.original_schedule_time;
    if (t) markers.push({ type: parsed.activity_type ?? '', at: t.seconds * 1000 + Math.floor(t.nanos / 1e6) });
  }
  const step = markers.find((m) => !/load/i.test(m.type));
  if (step)
    return {
      at: step.at,
      from: `local activity ${step.type} (the run's local activities: ${markers.map((m) => m.type).join(', ')})`,
    };
  const scheduled = events.find((e) => e.activityTaskScheduledEventAttributes);
  if (scheduled) return { at: eventMs(scheduled), from: 'the first activity scheduled' };
  const task = events.find((e) => e.workflowTaskStartedEventAttributes);
  if (!task) throw new Error('bench schedule: the run has no workflow task');
  return { at: eventMs(task), from: 'the first workflow task started' };
}

interface Sample {
  scheduledAt: number;
  step: number;
  action: number;
  runId: string;
  actionId: string | undefined;
}

/** The action's history events and its run's, each as `<event type> +<ms after scheduledAt>`. */
async function timeline(stack: Stack, sample: Sample): Promise<string> {
  const parts: string[] = [];
  for (const [name, id] of [
    ['action', sample.actionId],
    ['run', sample.runId],
  ] as const) {
    if (!id) continue;
    const history = await stack.client.workflow.getHandle(id).fetchHistory();
    const events = (history.events ?? []).map((e) => {
      const type = Object.keys(e).find((k) => k.endsWith('EventAttributes') && (e as Record<string, unknown>)[k]);
      return `${(type ?? '?').replace(/EventAttributes$/, '')} +${(eventMs(e) - sample.scheduledAt).toFixed(0)}`;
    });
    parts.push(`${name}: ${events.join(', ')}`);
  }
  parts.push(`first step +${(sample.step - sample.scheduledAt).toFixed(0)}`);
  return parts.join(' | ');
}

export async function runScheduleBench(
  stack: Stack,
  timing: ScheduleTiming,
  log: (line: string) => void,
): Promise<ScheduleResult> {
  const engine = createTemporalEngine({ client: stack.workerClient, taskQueue: AUTOMATION_QUEUE, db: stack.db });
  const api = stack.e2eApi.url;
  const token = stack.adminToken;
  const created = await request('POST', `${api}/api/v1/automations`, {
    token,
    body: JSON.stringify({
      displayName: 'Bench: every 2 s',
      trigger: { schedule: { interval: '2s' } },
      steps: [{ id: 'seen', setVariables: { at: 'ctx.trigger.scheduledAt' } }],
    }),
  });
  if (created.status !== 200)
    throw new Error(`bench schedule: create ${created.status} ${JSON.stringify(created.body)}`);
  const automationId = String(created.body.automation.id);
  const floorId = `bench-floor-${randomUUID()}`;
  const floorWorkflowId = `bench-floor-action-${randomUUID()}`;
  let floor: Awaited<ReturnType<typeof stack.client.schedule.create>> | undefined;
  try {
    floor = await stack.client.schedule.create({
      scheduleId: floorId,
      spec: { intervals: [{ every: INTERVAL_MS, offset: INTERVAL_MS / 2 }] },
      action: {
        type: 'startWorkflow',
        workflowType: 'scheduledStamp' satisfies (typeof scheduledStamp)['name'],
        workflowId: floorWorkflowId,
        taskQueue: BARE_QUEUE,
        args: [],
      },
    });
    const published = await request('POST', `${api}/api/v1/automations/${automationId}/publish`, { token });
    if (published.status !== 200)
      throw new Error(`bench schedule: publish ${published.status} ${JSON.stringify(published.body)}`);
    const total = timing.actions + WARMUP;
    log(
      `schedule: ${total} actions of the automation and of the bare Schedule, one every ${INTERVAL_MS / 1000} s each`,
    );
    await new Promise((resolve) => setTimeout(resolve, (total + 1) * INTERVAL_MS));
  } finally {
    const removed = await request('POST', `${api}/api/v1/automations/${automationId}/unpublish`, { token });
    if (removed.status !== 200) log(`schedule: unpublish answered ${removed.status}`);
    await engine.deleteSchedule(automationId).catch(() => undefined);
    await floor?.delete().catch(() => undefined);
  }
  // Let the last actions finish.
  await new Promise((resolve) => setTimeout(resolve, 1500));

  // The automation's runs: scheduledAt (ctx.trigger) → the first step, and the action's own start between.
  const runs = (await engine.list(automationId, 1000, undefined)).runs;
  const samples: Sample[] = [];
  const stepFrom = new Set<string>();
  for (const run of runs) {
    const input = await engine.input(run.id);
    const scheduledAt = Date.parse(String((input?.trigger as { scheduledAt?: unknown } | undefined)?.scheduledAt));
    const handle = stack.client.workflow.getHandle(run.id);
    const first = firstStepStartMs(await handle.fetchHistory());
    stepFrom.add(first.from);
    const step = first.at;
    const parent = (await handle.describe()).raw.workflowExecutionInfo?.parentExecution?.workflowId;
    const action = parent ? (await stack.client.workflow.getHandle(parent).describe()).startTime.getTime() : NaN;
    samples.push({ scheduledAt, step, action, runId: run.id, actionId: parent ?? undefined });
  }
  samples.sort((a, b) => a.scheduledAt - b.scheduledAt);
  const measured = samples.slice(WARMUP, WARMUP + timing.actions);
  // Where the time goes in the median action: its events and its run's, ms after scheduledAt.
  const median = [...measured].sort((a, b) => a.step - a.scheduledAt - (b.step - b.scheduledAt))[
    Math.floor(measured.length / 2)
  ];
  if (median) log(`schedule: the median action's events, ms after scheduledAt: ${await timeline(stack, median)}`);

  const floorSamples: Array<{ scheduledAt: number; activityAt: number }> = [];
  for await (const info of stack.client.workflow.list({ query: `WorkflowType = 'scheduledStamp'` })) {
    if (!info.workflowId.startsWith(floorWorkflowId)) continue;
    floorSamples.push(await stack.client.workflow.getHandle(info.workflowId, info.runId).result());
  }
  floorSamples.sort((a, b) => a.scheduledAt - b.scheduledAt);
  const floorMeasured = floorSamples.slice(WARMUP, WARMUP + timing.actions);
  if (measured.length < timing.actions / 2 || floorMeasured.length < timing.actions / 2)
    throw new Error(
      `bench schedule: only ${measured.length} automation and ${floorMeasured.length} floor actions of ${timing.actions}`,
    );

  const lateness = measured.map((s) => s.step - s.scheduledAt);
  const floorLateness = floorMeasured.map((s) => s.activityAt - s.scheduledAt);
  const latenessP50Ms = percentile(lateness, 50);
  const floorP50Ms = percentile(floorLateness, 50);
  log(
    `schedule: lateness p50 ${latenessP50Ms.toFixed(0)} ms (${measured.length} actions), bare Schedule p50 ${floorP50Ms.toFixed(0)} ms (${floorMeasured.length})`,
  );
  return {
    latenessP50Ms,
    latenessP90Ms: percentile(lateness, 90),
    floorP50Ms,
    floorP90Ms: percentile(floorLateness, 90),
    ratioToFloor: latenessP50Ms / Math.max(1, floorP50Ms),
    actions: Math.min(measured.length, floorMeasured.length),
    actionToStepP50Ms: percentile(
      measured.map((s) => s.step - s.action),
      50,
    ),
    scheduleToActionP50Ms: percentile(
      measured.map((s) => s.action - s.scheduledAt),
      50,
    ),
    firstStepFrom: [...stepFrom].join('; '),
  };
}
