/**
 * Flow control figures (`npm run bench -- --only=flow`):
 *   ingress ratio   accepted/s on an automation with `concurrency {limit: 1, key}` (a fresh key per
 *                   event: many keys, one lane each) ÷ accepted/s on the same automation without it,
 *                   same closed loop (concurrency 32), same API (runs started on the unpolled queue,
 *                   so only the accept path is measured: the start plus the lane request)
 *   hand-off p50    one run's end (its WorkflowExecutionCompleted) to the next queued run's first
 *                   step (its first marker after the grant), runs of one key on the polled queue
 *                   with a worker ÷ the bare workflow-start round trip of the same kind of run
 *                   (its WorkflowExecutionStarted to its first completed workflow task), runs of
 *                   the same steps without a limit, started one at a time
 *   floor           the same accept path with nothing of the service in it, from the bench's
 *                   client, 32 loops on a queue nobody polls: start a run, then ask a fresh lane with
 *                   signal-with-start (what a limit-1 delivery must cost at least with the lane
 *                   protocol as it is), ÷ start a run alone; and the same with a describe of the lane
 *                   first (the queue-bound check the API makes per delivery)
 * Goals from the issue: ratio ≥ 0.8, hand-off ÷ start ≤ 2.
 */
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { hmacEvent } from '../test/helpers/signing';
import { WorkflowNotFoundError } from '@temporalio/client';
import { AUTOMATION_QUEUE, UNPOLLED_QUEUE, type Stack } from './stack';
import { percentile, request } from './util';

export interface FlowResult {
  plainPerSec: number;
  limitedPerSec: number;
  ingressRatio: number;
  /** Bare client loops: starts/s alone, start + lane signal-with-start/s, and with a describe of the lane first. */
  floor: {
    startPerSec: number;
    startAndAskPerSec: number;
    describeStartAndAskPerSec: number;
    startAndSignalPerSec: number;
  };
  /** floor.startAndAskPerSec ÷ floor.startPerSec: the floor of ingressRatio with the lane protocol as it is. */
  floorIngressRatio: number;
  /** ingressRatio ÷ floorIngressRatio: how close the service is to that floor. */
  ingressRatioToFloor: number;
  handoffP50Ms: number;
  startP50Ms: number;
  handoffRatio: number;
  handoffSamples: number;
}

export interface Target {
  listenerPath: string;
  secret: string;
}

export async function createAutomation(
  apiUrl: string,
  token: string,
  fields: Record<string, unknown>,
  steps: unknown[],
  displayName = 'Bench: flow control',
): Promise<Target & { id: string }> {
  const created = await request('POST', `${apiUrl}/api/v1/automations`, {
    token,
    body: JSON.stringify({ displayName, trigger: { incomingWebhook: { authMethod: 'HMAC' } }, steps, ...fields }),
  });
  if (created.status !== 200) throw new Error(`create automation: ${created.status} ${JSON.stringify(created.body)}`);
  const id = String(created.body.automation.id);
  const published = await request('POST', `${apiUrl}/api/v1/automations/${id}/publish`, { token });
  if (published.status !== 200) throw new Error(`publish: ${published.status}`);
  return {
    id,
    listenerPath: new URL(String(created.body.automation.trigger.incomingWebhook.url)).pathname,
    secret: String(created.body.signingSecret),
  };
}

export function post(apiUrl: string, target: Target, payload: unknown): ReturnType<typeof request> {
  const { body, headers } = hmacEvent(target.secret, payload);
  return request('POST', `${apiUrl}${target.listenerPath}`, { body, headers });
}

/**
 * Accepted deliveries per second over `seconds` (or until `stop()` says so, when given), `concurrency`
 * senders, each event with its own key.
 */
export async function closedLoop(
  apiUrl: string,
  target: Target,
  seconds: number,
  concurrency: number,
  stop?: () => boolean,
): Promise<{ perSec: number; accepted: number }> {
  const end = performance.now() + seconds * 1000;
  let accepted = 0;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (stop ? !stop() : performance.now() < end) {
        const res = await post(apiUrl, target, { user: randomUUID(), padding: 'x'.repeat(900) });
        if (res.status === 200) accepted += 1;
      }
    }),
  );
  return { perSec: accepted / ((performance.now() - start) / 1000), accepted };
}

function eventMs(event: { eventTime?: { seconds?: unknown; nanos?: number | null } | null }): number {
  const seconds = Number(String(event.eventTime?.seconds ?? 0));
  return seconds * 1000 + (event.eventTime?.nanos ?? 0) / 1e6;
}

/**
 * Hand-off latencies of a chain of runs of one key, from their histories, and each run's own start
 * round trip (its WorkflowExecutionStarted to its first completed workflow task).
 */
async function handoffs(client: Client, runIds: string[]): Promise<{ gaps: number[]; starts: number[] }> {
  const out: number[] = [];
  const starts: number[] = [];
  for (const runId of runIds) {
    const events = (await client.workflow.getHandle(runId).fetchHistory()).events ?? [];
    const started = events.find((e) => e.workflowExecutionStartedEventAttributes);
    const firstTask = events.find((e) => e.workflowTaskCompletedEventAttributes);
    if (started && firstTask) starts.push(eventMs(firstTask) - eventMs(started));
  }
  for (let i = 1; i < runIds.length; i++) {
    const previous = (await client.workflow.getHandle(runIds[i - 1]!).fetchHistory()).events ?? [];
    const next = (await client.workflow.getHandle(runIds[i]!).fetchHistory()).events ?? [];
    const ended = previous.find((e) => e.workflowExecutionCompletedEventAttributes);
    const grant = next.findIndex((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'grant');
    const firstStep = grant >= 0 ? next.slice(grant).find((e) => e.markerRecordedEventAttributes) : undefined;
    if (ended && firstStep) out.push(eventMs(firstStep) - eventMs(ended));
  }
  return { gaps: out, starts };
}

type FloorShape = 'start' | 'startAndAsk' | 'describeStartAndAsk' | 'startAndSignal';

/**
 * `concurrency` loops of the accept path's Temporal calls with nothing of the service around them,
 * for `seconds`: a fresh run started on the unpolled queue and, for the limited shapes, its fresh
 * lane asked by signal-with-start (as src/temporal/engine.ts asks it), after a describe of that lane
 * for `describeStartAndAsk`; for `startAndSignal`, a plain signal to a lane already running (one per
 * loop, started first: the ask as it would cost if lanes were per automation, not per key).
 * Completed loops per second.
 */
async function floorLoop(
  client: Client,
  shape: FloorShape,
  trigger: unknown,
  seconds: number,
  concurrency: number,
): Promise<number> {
  const end = performance.now() + seconds * 1000;
  let done = 0;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      const running = `bench-floor-lane:${randomUUID()}`;
      if (shape === 'startAndSignal')
        await client.workflow.start('bareLane', {
          taskQueue: UNPOLLED_QUEUE,
          workflowId: running,
          args: [{ lane: running, limit: 1, holders: [], waiting: [] }],
        });
      while (performance.now() < end) {
        const runId = `bench-floor-run:${randomUUID()}`;
        const lane = `bench-floor-lane:${randomUUID()}`;
        if (shape === 'describeStartAndAsk') {
          await client.workflow
            .getHandle(lane)
            .describe()
            .catch((err: unknown) => {
              if (!(err instanceof WorkflowNotFoundError)) throw err;
            });
        }
        await client.workflow.start('bareRun', { taskQueue: UNPOLLED_QUEUE, workflowId: runId, args: [{ trigger }] });
        if (shape === 'startAndSignal') {
          await client.workflow.getHandle(running).signal('acquire', { runId, limit: 1, lane: running });
        } else if (shape !== 'start') {
          await client.workflow.signalWithStart('bareLane', {
            workflowId: lane,
            taskQueue: UNPOLLED_QUEUE,
            args: [{ lane, limit: 1, holders: [], waiting: [] }],
            signal: 'acquire',
            signalArgs: [{ runId, limit: 1, lane }],
          });
        }
        done += 1;
      }
    }),
  );
  return done / ((performance.now() - start) / 1000);
}

export async function runFlowBench(
  stack: Stack,
  options: { seconds: number; chain: number },
  log: (line: string) => void,
): Promise<FlowResult> {
  const steps = [{ id: 'v', setVariables: { user: 'ctx.trigger.user' } }];
  const plain = await createAutomation(stack.ingressApi.url, stack.adminToken, {}, steps);
  const limited = await createAutomation(
    stack.ingressApi.url,
    stack.adminToken,
    { concurrency: { limit: 1, key: 'ctx.trigger.user' } },
    steps,
  );
  log('flow: warm-up');
  await closedLoop(stack.ingressApi.url, plain, 2, 32);
  await closedLoop(stack.ingressApi.url, limited, 2, 32);
  let plainPerSec = 0;
  let limitedPerSec = 0;
  for (let round = 1; round <= 2; round++) {
    const a = (await closedLoop(stack.ingressApi.url, limited, options.seconds, 32)).perSec;
    const b = (await closedLoop(stack.ingressApi.url, plain, options.seconds, 32)).perSec;
    log(`flow round ${round}: limit-1 ${a.toFixed(0)}/s, plain ${b.toFixed(0)}/s`);
    limitedPerSec = Math.max(limitedPerSec, a);
    plainPerSec = Math.max(plainPerSec, b);
  }

  // The floor of the same accept path, from the bench's client, in rotation.
  const trigger = { user: randomUUID(), padding: 'x'.repeat(900) };
  const floor = { startPerSec: 0, startAndAskPerSec: 0, describeStartAndAskPerSec: 0, startAndSignalPerSec: 0 };
  for (const shape of ['start', 'startAndAsk', 'describeStartAndAsk', 'startAndSignal'] as const)
    await floorLoop(stack.client, shape, trigger, 1, 32);
  const floorOrders: FloorShape[][] = [
    ['start', 'startAndAsk', 'describeStartAndAsk', 'startAndSignal'],
    ['startAndSignal', 'describeStartAndAsk', 'startAndAsk', 'start'],
  ];
  for (let round = 1; round <= 2; round++) {
    const measured: string[] = [];
    for (const shape of floorOrders[round - 1]!) {
      const perSec = await floorLoop(stack.client, shape, trigger, options.seconds, 32);
      floor[`${shape}PerSec`] = Math.max(floor[`${shape}PerSec`], perSec);
      measured.push(`${shape} ${perSec.toFixed(0)}/s`);
    }
    log(`flow floor round ${round}: ${measured.join(', ')}`);
  }
  const floorIngressRatio = floor.startAndAskPerSec / floor.startPerSec;

  // Hand-off: a chain of runs of one key, on the API whose runs the worker executes.
  const chain = await createAutomation(
    stack.e2eApi.url,
    stack.adminToken,
    { concurrency: { limit: 1, key: 'ctx.trigger.user' } },
    steps,
  );
  const runIds: string[] = [];
  const key = randomUUID();
  for (let i = 0; i < options.chain; i++) {
    const res = await post(stack.e2eApi.url, chain, { user: key, n: i });
    if (res.status !== 200) throw new Error(`hand-off event: ${res.status}`);
    runIds.push(String(res.body.executionId));
  }
  await stack.client.workflow.getHandle(runIds.at(-1)!).result();
  const { gaps } = await handoffs(stack.client, runIds);
  // The start round trip of the same kind of run, one at a time (no queue, no backlog): the same
  // steps without a concurrency limit, each event sent after the previous run completed.
  const plainOnWorker = await createAutomation(stack.e2eApi.url, stack.adminToken, {}, steps);
  const plainIds: string[] = [];
  for (let i = 0; i < options.chain; i++) {
    const res = await post(stack.e2eApi.url, plainOnWorker, { user: key, n: i });
    if (res.status !== 200) throw new Error(`start baseline event: ${res.status}`);
    plainIds.push(String(res.body.executionId));
    await stack.client.workflow.getHandle(plainIds.at(-1)!).result();
  }
  const { starts: runStarts } = await handoffs(stack.client, plainIds);
  // The client's start call, for reference (the RPC alone, on a queue nobody polls).
  const rpc: number[] = [];
  for (let i = 0; i < options.chain; i++) {
    const t0 = performance.now();
    await stack.client.workflow.start('bareStart', {
      taskQueue: `${AUTOMATION_QUEUE}-unpolled-flow`,
      workflowId: `bench-flow-start-${randomUUID()}`,
      args: [],
    });
    rpc.push(performance.now() - t0);
  }
  const starts = runStarts;
  log(`flow: start RPC p50 ${percentile(rpc, 50).toFixed(1)} ms`);
  const handoffP50Ms = percentile(gaps, 50);
  const startP50Ms = percentile(starts, 50);
  log(`flow: hand-off p50 ${handoffP50Ms.toFixed(1)} ms over ${gaps.length}, start p50 ${startP50Ms.toFixed(1)} ms`);
  return {
    plainPerSec,
    limitedPerSec,
    ingressRatio: limitedPerSec / plainPerSec,
    floor,
    floorIngressRatio,
    ingressRatioToFloor: limitedPerSec / plainPerSec / floorIngressRatio,
    handoffP50Ms,
    startP50Ms,
    handoffRatio: handoffP50Ms / startP50Ms,
    handoffSamples: gaps.length,
  };
}
