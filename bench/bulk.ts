/**
 * Bulk action figure (`npm run bench -- --only=bulk`): webhook ingress while a bulk cancel runs.
 *   park      N runs of an automation whose one step is `waitForApproval`, sent as signed webhooks
 *             to the API whose runs the worker executes (32 senders), until every one of them is
 *             RUNNING in visibility and the last ones sent have reached the approval wait
 *   measure   plain ingress (another automation, runs on the unpolled queue: only the accept path)
 *             for a window of `seconds`; then the bulk cancel of the N runs (POST
 *             /api/v1/automation_executions/bulk on the worker's API, so the worker acts on them) and
 *             the same closed loop of webhooks in windows of `seconds`, one every SAMPLE_PERIOD
 *             windows, from its 202 until the action is no longer RUNNING; then plain ingress again
 * Figure: accepted/s within the windows during the cancel ÷ the mean of the plain rates before and
 * after. Goal from the issue: ≥ 0.8 with N = 10,000.
 *
 * Why windows, not a loop over the whole cancel: every accepted webhook leaves a run that waits on
 * the unpolled queue for ever, and a 10,000-run cancel lasts about 45 minutes. At about 140 accepted
 * a second without a pause that is some 380,000 runs, which the dev server cannot hold (it failed at
 * 6.5 GB RSS with its database in memory). Windows spread over the whole cancel sample the same
 * ingress against the same steadily paced cancel, with a sixth of the runs left behind. The section
 * runs on a stack of its own whose dev server keeps its database in a file (bench/run.ts).
 */
import fs from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Stack } from './stack';
import { randomUUID } from 'node:crypto';
import { hmacEvent } from '../test/helpers/signing';
import { closedLoop, createAutomation, type Target } from './flow';
import { request } from './util';
import type { AroundApi } from './webhooks';
import { AccessTokens } from '../src/auth/tokens';
import { createClient } from '../src/auth/clients';
import { temporal } from '@temporalio/proto';
import { delta, temporalMetrics, type Counters } from './temporal-metrics';

export interface BulkResult {
  runs: number;
  parkSeconds: number;
  plainBeforePerSec: number;
  plainAfterPerSec: number;
  /** The mean of the two plain rates: the baseline. */
  plainPerSec: number;
  /** Accepted/s within the windows of ingress during the cancel (one every SAMPLE_PERIOD windows' time). */
  duringCancelPerSec: number;
  duringCancelWindows: number;
  duringCancelSampledSeconds: number;
  ingressRatioDuringCancel: number;
  /** The action's createdAt → finishedAt. */
  cancelSeconds: number;
  cancelRunsPerSec: number;
  /** CPU per second of wall time (ms/s) of this process (API, workers, the senders) and of the Temporal server, per phase. */
  cpu: { before: PhaseCpu; during: PhaseCpu; after: PhaseCpu };
  /**
   * CPU each canceled run cost beyond the ingress of the same phase, in ms: the CPU of the cancel
   * phase less its accepted webhooks at the plain phases' CPU per webhook, over the runs. Undefined
   * for Temporal when its process was not found.
   */
  perRunCpuMs: { bench: number; temporal: number | undefined };
  /**
   * What each canceled run asked of Temporal beyond the ingress of the same phase, from the server's
   * own counters (`service_requests` by service and operation, `persistence_requests` and `task_requests` by
   * operation), estimated as `perRunCpuMs` is; only series of at least 0.05 per run. Undefined when
   * the server's metrics endpoint was not found.
   */
  perRunTemporalRequests: Record<string, number> | undefined;
  /**
   * A smaller set (a fifth of `runs`, at most 200) canceled with no webhooks meanwhile: its runs,
   * seconds, and the CPU of each process per run less the process's idle CPU over the same time
   * (read for 5 s just before), ms; the server's counters the same way.
   */
  alone: {
    runs: number;
    seconds: number;
    perRunCpuMs: { bench: number; temporal: number | undefined };
    perRunTemporalRequests: Record<string, number> | undefined;
  };
  /** One canceled run's history: its events in all, and the types of those from the cancel request on. */
  canceledRunHistory: { events: number; fromCancel: string[] } | undefined;
}

export interface PhaseCpu {
  benchMsPerSec: number;
  temporalMsPerSec: number | undefined;
  /** CPU per accepted webhook, both processes, ms. */
  perAcceptedMs: { bench: number; temporal: number | undefined };
}

const BULK = '/api/v1/automation_executions/bulk';
/** During the cancel, one window of ingress every SAMPLE_PERIOD windows' time. */
const SAMPLE_PERIOD = 6;

/**
 * The closed loop of `closedLoop` in windows of `seconds`, one starting every `period × seconds`,
 * until `stop()`; accepted/s within the windows. The first window starts at once.
 */
async function sampledLoop(
  apiUrl: string,
  target: Target,
  seconds: number,
  period: number,
  concurrency: number,
  stop: () => boolean,
): Promise<{ perSec: number; accepted: number; windows: number; sampledSeconds: number }> {
  let accepted = 0;
  let sampledMs = 0;
  let windows = 0;
  while (!stop()) {
    const windowStart = performance.now();
    const windowEnd = windowStart + seconds * 1000;
    const result = await closedLoop(apiUrl, target, 0, concurrency, () => stop() || performance.now() >= windowEnd);
    accepted += result.accepted;
    sampledMs += performance.now() - windowStart;
    windows += 1;
    const next = windowStart + period * seconds * 1000;
    while (!stop() && performance.now() < next) await sleep(Math.min(250, next - performance.now()));
  }
  return {
    perSec: sampledMs > 0 ? accepted / (sampledMs / 1000) : 0,
    accepted,
    windows,
    sampledSeconds: sampledMs / 1000,
  };
}

/** Polls `fn` every 500 ms until `done`; fails after `timeoutMs` (a bench that cannot park its runs must not hang). */
async function until<T>(
  what: string,
  fn: () => Promise<T>,
  done: (value: T) => boolean,
  timeoutMs: number,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await fn();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`bulk: timed out waiting for ${what} (last: ${JSON.stringify(value)})`);
    await sleep(500);
  }
}

/**
 * Sends one event until it is accepted: a 503 (the engine did not confirm it, as happens on a loaded
 * machine) is sent again with the same event id, as the contract asks of senders; a 409 then means
 * the first attempt did start the run. The run's id.
 */
async function park(api: string, target: Target, payload: unknown): Promise<string | undefined> {
  const eventId = randomUUID();
  for (let attempt = 1; ; attempt++) {
    const { body, headers } = hmacEvent(target.secret, payload, { eventId });
    const res = await request('POST', `${api}${target.listenerPath}`, { body, headers });
    if (res.status === 200 || (res.status === 409 && attempt > 1))
      return res.status === 200 ? String(res.body.executionId) : undefined;
    if (res.status !== 503 || attempt === 10)
      throw new Error(`bulk: parking event answered ${res.status} ${JSON.stringify(res.body)}`);
    await sleep(1000);
  }
}

/** User + system CPU of a process from /proc/<pid>/stat, in ms; undefined when unreadable. */
function procCpuMs(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // utime and stime are fields 14 and 15 of stat(5), in clock ticks (100 a second on Linux).
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return undefined;
  }
}

/** Runs `fn` (a closed loop) and returns its result with the CPU both processes spent meanwhile. */
async function withPhaseCpu<T extends { accepted: number }>(
  stack: Stack,
  fn: () => Promise<T>,
  metrics?: () => Promise<Counters>,
): Promise<
  [T, PhaseCpu & { seconds: number; benchMs: number; temporalMs: number | undefined; requests: Counters | undefined }]
> {
  const countersBefore = await metrics?.();
  const started = performance.now();
  const bench = process.cpuUsage();
  const temporal = procCpuMs(stack.temporalPid);
  const result = await fn();
  const used = process.cpuUsage(bench);
  const temporalAfter = procCpuMs(stack.temporalPid);
  const countersAfter = await metrics?.();
  const seconds = (performance.now() - started) / 1000;
  const benchMs = (used.user + used.system) / 1000;
  const temporalMs = temporal !== undefined && temporalAfter !== undefined ? temporalAfter - temporal : undefined;
  return [
    result,
    {
      seconds,
      benchMs,
      temporalMs,
      requests: countersBefore && countersAfter ? delta(countersBefore, countersAfter) : undefined,
      benchMsPerSec: benchMs / seconds,
      temporalMsPerSec: temporalMs === undefined ? undefined : temporalMs / seconds,
      perAcceptedMs: {
        bench: benchMs / result.accepted,
        temporal: temporalMs === undefined ? undefined : temporalMs / result.accepted,
      },
    },
  ];
}

const direct: AroundApi = (_round, fn) => fn();

export async function runBulkBench(
  stack: Stack,
  options: { runs: number; seconds: number },
  log: (line: string) => void,
  aroundApi: AroundApi = direct,
): Promise<BulkResult> {
  const api = stack.e2eApi.url;
  // A token of its own that outlives the section (the stack's lasts 10 minutes; parking and a paced cancel take longer).
  const tokens = await AccessTokens.load(stack.db, stack.secretBox, 86_400);
  const { client: benchClient } = await createClient(stack.db, stack.secretBox, {
    displayName: 'bench bulk',
    roles: ['super_admin'],
  });
  const token = await tokens.issue(benchClient.clientId, ['super_admin']);
  const parked = await createAutomation(
    api,
    token,
    {},
    [{ id: 'hold', waitForApproval: { timeout: '86400s' } }],
    'Bench: parked runs',
  );
  const alone = await createAutomation(
    api,
    token,
    {},
    [{ id: 'hold', waitForApproval: { timeout: '86400s' } }],
    'Bench: runs canceled alone',
  );
  const plain = await createAutomation(
    stack.ingressApi.url,
    token,
    {},
    [{ id: 'v', setVariables: { user: 'ctx.trigger.user' } }],
    'Bench: plain ingress',
  );

  const dryRun = (automationId: string): Promise<number> =>
    request('POST', `${api}${BULK}`, {
      token,
      body: JSON.stringify({ dryRun: true, reason: 'bench', filter: { automationId, status: ['RUNNING'] } }),
    }).then((res) => {
      if (res.status !== 200) throw new Error(`bulk: dry run answered ${res.status} ${JSON.stringify(res.body)}`);
      return Number(res.body.matched);
    });
  /** Parks `count` runs of `target` (32 senders) and waits until visibility shows them and the last ones sent wait for approval. */
  const parkRuns = async (target: Target & { id: string }, count: number): Promise<Array<string | undefined>> => {
    const ids: Array<string | undefined> = [];
    let claimed = 0;
    await Promise.all(
      Array.from({ length: 32 }, async () => {
        while (claimed < count) {
          claimed += 1;
          ids.push(await park(api, target, { n: claimed, padding: 'x'.repeat(900) }));
        }
      }),
    );
    await until(
      `${count} RUNNING runs in visibility`,
      () => dryRun(target.id),
      (matched) => matched === count,
      600_000,
    );
    // The worker takes the runs roughly in the order they were sent: the last ones waiting means the rest are.
    const lastSent = ids.filter((id): id is string => id !== undefined).slice(-32);
    await until(
      'the last runs sent to reach the approval wait',
      async () => {
        let waiting = 0;
        for (const id of lastSent) {
          const events = (await stack.client.workflow.getHandle(id).fetchHistory()).events ?? [];
          const last = events.at(-1);
          const taskOpen = last?.workflowTaskScheduledEventAttributes || last?.workflowTaskStartedEventAttributes;
          if (events.some((e) => e.workflowTaskCompletedEventAttributes) && !taskOpen) waiting += 1;
        }
        return waiting;
      },
      (waiting) => waiting === lastSent.length,
      600_000,
    );
    return ids;
  };
  /** Starts a bulk cancel of every RUNNING run of `automationId`; its id. */
  const startCancel = async (automationId: string, runs: number): Promise<string> => {
    const created = await request('POST', `${api}${BULK}`, {
      token,
      body: JSON.stringify({
        action: 'cancel',
        reason: 'bench: bulk cancel',
        filter: { automationId, status: ['RUNNING'] },
      }),
    });
    if (created.status !== 202)
      throw new Error(`bulk: cancel answered ${created.status} ${JSON.stringify(created.body)}`);
    if (created.body.bulkAction.matched !== runs)
      throw new Error(`bulk: the cancel matched ${created.body.bulkAction.matched} runs, not ${runs}`);
    return String(created.body.bulkAction.id);
  };
  /** Polls the action's progress every 500 ms until it is no longer RUNNING; the action as it ended. */
  const untilEnded = async (actionId: string): Promise<Record<string, unknown>> => {
    for (;;) {
      const res = await request('GET', `${api}/api/v1/bulk_actions/${actionId}`, { token });
      if (res.status !== 200) throw new Error(`bulk: progress answered ${res.status}`);
      if (res.body.bulkAction.state !== 'RUNNING') return res.body.bulkAction as Record<string, unknown>;
      await sleep(500);
    }
  };

  const metrics = await temporalMetrics(stack.temporalPid);
  if (!metrics) log("bulk: the Temporal server's metrics endpoint was not found: no request counts");

  // A canceled run's cost with nothing else running: a smaller set canceled alone, its CPU less the
  // processes' idle CPU over the same time (both read just before), over its runs.
  const aloneRuns = Math.max(1, Math.min(200, Math.round(options.runs / 5)));
  log(`bulk: parking ${aloneRuns} runs to cancel alone`);
  await parkRuns(alone, aloneRuns);
  await sleep(2000);
  const idle = await withPhaseCpu(stack, () => sleep(5000).then(() => ({ accepted: 1 })), metrics);
  const [, cancelAlone] = await withPhaseCpu(
    stack,
    async () => {
      const action = await untilEnded(await startCancel(alone.id, aloneRuns));
      if (action.state !== 'COMPLETED' || action.succeeded !== aloneRuns)
        throw new Error(`bulk: the cancel alone ended ${JSON.stringify(action)}`);
      return { accepted: 1 };
    },
    metrics,
  );
  const idleCpu = idle[1];
  const aloneCpuMs = {
    bench: (cancelAlone.benchMs - idleCpu.benchMsPerSec * cancelAlone.seconds) / aloneRuns,
    temporal:
      cancelAlone.temporalMs !== undefined && idleCpu.temporalMsPerSec !== undefined
        ? (cancelAlone.temporalMs - idleCpu.temporalMsPerSec * cancelAlone.seconds) / aloneRuns
        : undefined,
  };
  log(
    `bulk: ${aloneRuns} runs canceled alone in ${cancelAlone.seconds.toFixed(1)} s; CPU per run beyond idle: this process ${aloneCpuMs.bench.toFixed(1)} ms, Temporal ${aloneCpuMs.temporal?.toFixed(1) ?? '?'} ms (idle: ${idleCpu.benchMsPerSec.toFixed(0)} / ${idleCpu.temporalMsPerSec?.toFixed(0) ?? '?'} ms/s)`,
  );
  let aloneRequests: Record<string, number> | undefined;
  if (cancelAlone.requests && idleCpu.requests) {
    aloneRequests = {};
    for (const key of [...cancelAlone.requests.keys()].sort()) {
      const perRun =
        ((cancelAlone.requests.get(key) ?? 0) -
          ((idleCpu.requests.get(key) ?? 0) * cancelAlone.seconds) / idleCpu.seconds) /
        aloneRuns;
      if (Math.abs(perRun) >= 0.05) aloneRequests[key] = Math.round(perRun * 100) / 100;
    }
    log(`bulk: Temporal requests per run canceled alone, beyond idle: ${JSON.stringify(aloneRequests)}`);
  }

  log(`bulk: parking ${options.runs} runs in waitForApproval (signed webhooks, 32 senders)`);
  const parkStart = performance.now();
  const ids = await parkRuns(parked, options.runs);
  const parkSeconds = (performance.now() - parkStart) / 1000;
  log(`bulk: ${options.runs} runs parked in ${parkSeconds.toFixed(0)} s`);

  log('bulk: warm-up');
  await closedLoop(stack.ingressApi.url, plain, 2, 32);
  const [before, cpuBefore] = await aroundApi(
    1,
    () => withPhaseCpu(stack, () => closedLoop(stack.ingressApi.url, plain, options.seconds, 32), metrics),
    'baseline',
  );
  log(`bulk: plain ingress before ${before.perSec.toFixed(0)}/s; ${cpuLine(cpuBefore)}`);

  const actionId = await startCancel(parked.id, options.runs);
  let finished: Record<string, unknown> | undefined;
  let watched = false;
  const watching = untilEnded(actionId)
    .then((action) => {
      finished = action;
    })
    .finally(() => {
      // Ended, or failed: the senders stop either way (a failure is thrown below).
      watched = true;
    });
  const [during, cpuDuring] = await aroundApi(1, () =>
    withPhaseCpu(
      stack,
      () => sampledLoop(stack.ingressApi.url, plain, options.seconds, SAMPLE_PERIOD, 32, () => watched),
      metrics,
    ),
  );
  await watching;
  const action = finished!;
  if (action.state !== 'COMPLETED' || action.succeeded !== options.runs)
    throw new Error(`bulk: the cancel ended ${JSON.stringify(action)}`);
  const cancelSeconds = (Date.parse(String(action.finishedAt)) - Date.parse(String(action.createdAt))) / 1000;
  log(
    `bulk: cancel of ${options.runs} runs in ${cancelSeconds.toFixed(1)} s; ingress meanwhile ${during.perSec.toFixed(0)}/s in ${during.windows} windows (${during.sampledSeconds.toFixed(0)} s); ${cpuLine(cpuDuring)}`,
  );

  const [after, cpuAfter] = await withPhaseCpu(
    stack,
    () => closedLoop(stack.ingressApi.url, plain, options.seconds, 32),
    metrics,
  );
  log(`bulk: plain ingress after ${after.perSec.toFixed(0)}/s; ${cpuLine(cpuAfter)}`);
  const plainPerSec = (before.perSec + after.perSec) / 2;
  // What ingress alone costs per accepted webhook (both plain phases), and what the cancel phase spent beyond that.
  const plainAccepted = before.accepted + after.accepted;
  const benchPerAccept = (cpuBefore.benchMs + cpuAfter.benchMs) / plainAccepted;
  const temporalPerAccept =
    cpuBefore.temporalMs !== undefined && cpuAfter.temporalMs !== undefined
      ? (cpuBefore.temporalMs + cpuAfter.temporalMs) / plainAccepted
      : undefined;
  const perRunCpuMs = {
    bench: (cpuDuring.benchMs - during.accepted * benchPerAccept) / options.runs,
    temporal:
      temporalPerAccept !== undefined && cpuDuring.temporalMs !== undefined
        ? (cpuDuring.temporalMs - during.accepted * temporalPerAccept) / options.runs
        : undefined,
  };
  log(
    `bulk: CPU per canceled run beyond ingress: this process ${perRunCpuMs.bench.toFixed(1)} ms, Temporal ${perRunCpuMs.temporal?.toFixed(1) ?? '?'} ms`,
  );
  // The same estimate for each of Temporal's request counters.
  let perRunTemporalRequests: Record<string, number> | undefined;
  if (cpuBefore.requests && cpuDuring.requests && cpuAfter.requests) {
    perRunTemporalRequests = {};
    const keys = [
      ...new Set([...cpuBefore.requests.keys(), ...cpuDuring.requests.keys(), ...cpuAfter.requests.keys()]),
    ];
    for (const key of keys.sort()) {
      const perAccept = ((cpuBefore.requests.get(key) ?? 0) + (cpuAfter.requests.get(key) ?? 0)) / plainAccepted;
      const perRun = ((cpuDuring.requests.get(key) ?? 0) - during.accepted * perAccept) / options.runs;
      if (Math.abs(perRun) >= 0.05) perRunTemporalRequests[key] = Math.round(perRun * 100) / 100;
    }
    log(`bulk: Temporal requests per canceled run beyond ingress: ${JSON.stringify(perRunTemporalRequests)}`);
  }
  const canceledRunHistory = await historyOf(
    stack,
    ids.find((id): id is string => id !== undefined),
  );
  if (canceledRunHistory)
    log(
      `bulk: a canceled run's history: ${canceledRunHistory.events} events; from the cancel request: ${canceledRunHistory.fromCancel.join(', ')}`,
    );
  return {
    runs: options.runs,
    parkSeconds,
    plainBeforePerSec: before.perSec,
    plainAfterPerSec: after.perSec,
    plainPerSec,
    duringCancelPerSec: during.perSec,
    duringCancelWindows: during.windows,
    duringCancelSampledSeconds: during.sampledSeconds,
    ingressRatioDuringCancel: during.perSec / plainPerSec,
    cancelSeconds,
    cancelRunsPerSec: options.runs / cancelSeconds,
    cpu: { before: phase(cpuBefore), during: phase(cpuDuring), after: phase(cpuAfter) },
    perRunCpuMs,
    perRunTemporalRequests,
    alone: {
      runs: aloneRuns,
      seconds: cancelAlone.seconds,
      perRunCpuMs: aloneCpuMs,
      perRunTemporalRequests: aloneRequests,
    },
    canceledRunHistory,
  };
}

/** A run's history: its number of events, and the types of those from its cancel request on. */
async function historyOf(stack: Stack, runId: string | undefined): Promise<BulkResult['canceledRunHistory']> {
  if (!runId) return undefined;
  const events = (await stack.client.workflow.getHandle(runId).fetchHistory()).events ?? [];
  const from = events.findIndex((event) => event.workflowExecutionCancelRequestedEventAttributes);
  const name = (type: unknown): string =>
    String(temporal.api.enums.v1.EventType[Number(type)] ?? type).replace(/^EVENT_TYPE_/, '');
  return {
    events: events.length,
    fromCancel: from < 0 ? [] : events.slice(from).map((event) => name(event.eventType)),
  };
}

function phase(cpu: PhaseCpu): PhaseCpu {
  return { benchMsPerSec: cpu.benchMsPerSec, temporalMsPerSec: cpu.temporalMsPerSec, perAcceptedMs: cpu.perAcceptedMs };
}

function cpuLine(cpu: PhaseCpu): string {
  const temporal = cpu.temporalMsPerSec === undefined ? '?' : cpu.temporalMsPerSec.toFixed(0);
  return `CPU ms/s: this process ${cpu.benchMsPerSec.toFixed(0)}, Temporal ${temporal}`;
}
