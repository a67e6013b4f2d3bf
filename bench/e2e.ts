/**
 * End to end, one run at a time: from sending a signed POST until the automation's workflow result
 * is known, against two baselines on the same server and client: starting bench/workflows/bare.ts
 * `bare` (three no-op activities) and awaiting its result, and the same for `empty` (a workflow
 * that returns at once: the engine's floor, start → result). Runs rotate between the three so that
 * background noise hits all alike.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import type Koa from 'koa';
import { postEvent, type BenchAutomation } from './automation';
import { BARE_QUEUE, startBareKoa, type Server, type Stack } from './stack';
import { percentile, request, type HttpResponse } from './util';
import { runOfBody } from './webhooks';
import { getAutomationByListener, type AutomationRecord } from '../src/store/automations';
import { runStartOptions } from '../src/temporal/engine';

export interface E2eResult {
  p50Ms: number;
  bareP50Ms: number;
  ratioToBare: number;
  p90Ms: number;
  bareP90Ms: number;
  /** p50 from start to result of a workflow that returns at once. */
  emptyP50Ms: number;
  emptyP90Ms: number;
  /** p50Ms ÷ emptyP50Ms. */
  ratioToEmptyWorkflow: number;
  /**
   * p50 POST → result of the automation's shape with nothing of the service in it (`Stack.bareStart`:
   * a bare Koa handler reads the JSON body and starts `localFour`, four no-op local activities, as
   * the API starts runs), in the same rotation.
   */
  shapeP50Ms: number;
  /** p50Ms ÷ shapeP50Ms: what the service's own work adds to a run, against the floor of its shape. */
  ratioToShapeFloor: number;
  /**
   * p50 POST → result of the shape with the product's one store write in it (`localFourWithStore`:
   * the ownership statement on the automation's store as the third of the four local activities),
   * in the same rotation.
   */
  shapeWithStoreP50Ms: number;
  /** p50Ms ÷ shapeWithStoreP50Ms. */
  ratioToShapeFloorWithStore: number;
  /**
   * p50 POST → result of the floor with everything a run of the product must record and write
   * (`localFourAsProduct`, started by `startProductShapeFloor`: the API's start options, one patch
   * marker, a summary per step, the ownership statement), in the same rotation; NaN without the
   * ownership step.
   */
  productShapeP50Ms: number;
  /** p50Ms ÷ productShapeP50Ms: the service's own work in a run (checks, reads, CEL, the interpreter). */
  ratioToProductShapeFloor: number;
  /** CPU per timed run of each kind, in ms (robust to background load, unlike the p50s). */
  cpuMsPerRun: Record<string, RunCpu>;
  runs: number;
}

/**
 * CPU a run cost, in ms: this whole process (API, workers, store, and the bench's own client), its
 * main thread alone (the rest is the workflow thread, V8's garbage collector and the core SDK's
 * threads), and the Temporal server. Runs go one at a time, so nothing else of the bench runs meanwhile.
 */
export interface RunCpu {
  process: number;
  mainThread: number;
  temporal: number;
}

/** utime + stime of a /proc stat file's text, in ms (clock ticks of 10 ms: meaningful summed over many runs). */
export function statCpuMs(stat: string): number {
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** `statCpuMs` of a /proc stat file; NaN when unreadable. */
function procStatCpuMs(file: string): number {
  try {
    return statCpuMs(fs.readFileSync(file, 'utf8'));
  } catch {
    return Number.NaN;
  }
}

function cpuNow(stack: Stack): RunCpu {
  const usage = process.cpuUsage();
  return {
    process: (usage.user + usage.system) / 1000,
    mainThread: procStatCpuMs(`/proc/${process.pid}/task/${process.pid}/stat`),
    temporal: stack.temporalPid === undefined ? Number.NaN : procStatCpuMs(`/proc/${stack.temporalPid}/stat`),
  };
}

/** Times a POST that starts a run (200 `{executionId}`) until the run's result; answers both. */
async function postToResult(
  stack: Stack,
  what: string,
  post: () => Promise<HttpResponse>,
): Promise<{ elapsed: number; result: unknown }> {
  const started = performance.now();
  const response = await post();
  if (response.status !== 200) throw new Error(`${what} answered ${response.status}: ${JSON.stringify(response.body)}`);
  const result: unknown = await stack.client.workflow.getHandle(String(response.body.executionId)).result();
  return { elapsed: performance.now() - started, result };
}

async function automationRun(stack: Stack, automation: BenchAutomation): Promise<number> {
  const { elapsed, result } = await postToResult(stack, 'webhook', () => postEvent(stack.e2eApi.url, automation));
  const state = result as { status?: string };
  if (state.status !== 'COMPLETED') throw new Error(`automation run ended ${JSON.stringify(state)}`);
  return elapsed;
}

/**
 * Runs each kind `warmup` times untimed, then `runs` times timed, one run at a time and in rotation:
 * each kind goes first, second, … equally often, so that background noise hits all alike.
 */
async function inRotation<K extends string>(
  kinds: Record<K, () => Promise<number>>,
  options: { warmup: number; runs: number },
  cpu?: { now: () => RunCpu; perRun: Record<string, RunCpu> },
): Promise<Record<K, number[]>> {
  const order = Object.keys(kinds) as K[];
  const times = Object.fromEntries(order.map((kind) => [kind, [] as number[]])) as Record<K, number[]>;
  const spent = Object.fromEntries(order.map((kind) => [kind, { process: 0, mainThread: 0, temporal: 0 }])) as Record<
    K,
    RunCpu
  >;
  for (let i = 0; i < options.warmup; i++) for (const kind of order) await kinds[kind]();
  for (let i = 0; i < options.runs; i++) {
    for (let k = 0; k < order.length; k++) {
      const kind = order[(i + k) % order.length]!;
      const before = cpu?.now();
      times[kind].push(await kinds[kind]());
      if (cpu && before) {
        const after = cpu.now();
        for (const part of ['process', 'mainThread', 'temporal'] as const)
          spent[kind][part] += after[part] - before[part];
      }
    }
  }
  if (cpu)
    for (const kind of order)
      cpu.perRun[kind] = {
        process: spent[kind].process / options.runs,
        mainThread: spent[kind].mainThread / options.runs,
        temporal: spent[kind].temporal / options.runs,
      };
  return times;
}

async function baselineRun(stack: Stack, workflow: 'bare' | 'empty' | 'localThree', trigger: unknown): Promise<number> {
  const started = performance.now();
  // Started as the API starts runs: on the workers' connection, with eager workflow start.
  const args = workflow === 'empty' ? [] : [{ trigger }];
  const handle = await stack.workerClient.workflow.start(workflow, {
    taskQueue: BARE_QUEUE,
    workflowId: `${workflow}:${randomUUID()}`,
    args,
    requestEagerStart: true,
  });
  await handle.result();
  return performance.now() - started;
}

export async function runE2eBench(
  stack: Stack,
  automation: BenchAutomation,
  options: { warmup: number; runs: number },
  log: (line: string) => void,
): Promise<E2eResult> {
  const trigger = JSON.parse(automation.body) as unknown;
  log(
    `end to end: ${options.warmup} warm-up runs, then ${options.runs} of each (automation, its shape's floor${automation.ownership ? ', the floor with the ownership statement' : ''}, 3 activities, empty workflow), in rotation`,
  );
  const kinds = {
    automation: () => automationRun(stack, automation),
    shape: () => shapeRun(stack, automation.body, 'localFour'),
    bare: () => baselineRun(stack, 'bare', trigger),
    empty: () => baselineRun(stack, 'empty', trigger),
  };
  // The floor with the store write only when the automation has its ownership step: its body then
  // names the ownership (the three-setVariables variant's and the fallback's do not).
  const cpu = { now: () => cpuNow(stack), perRun: {} as Record<string, RunCpu> };
  const productFloor = automation.ownership ? await startProductShapeFloor(stack, automation) : undefined;
  let times: Record<keyof typeof kinds, number[]> & Partial<Record<'shapeWithStore' | 'product', number[]>>;
  try {
    times = productFloor
      ? await inRotation(
          {
            ...kinds,
            shapeWithStore: () => shapeRun(stack, automation.body, 'localFourWithStore'),
            product: async () =>
              (
                await postToResult(stack, 'product-shaped floor', () =>
                  request('POST', productFloor.url, { body: automation.body }),
                )
              ).elapsed,
          },
          options,
          cpu,
        )
      : await inRotation(kinds, options, cpu);
  } finally {
    await productFloor?.close();
  }
  const p50Ms = percentile(times.automation, 50);
  const bareP50Ms = percentile(times.bare, 50);
  const emptyP50Ms = percentile(times.empty, 50);
  const shapeP50Ms = percentile(times.shape, 50);
  const shapeWithStoreP50Ms = times.shapeWithStore ? percentile(times.shapeWithStore, 50) : Number.NaN;
  const productShapeP50Ms = times.product ? percentile(times.product, 50) : Number.NaN;
  return {
    productShapeP50Ms,
    ratioToProductShapeFloor: p50Ms / productShapeP50Ms,
    shapeP50Ms,
    ratioToShapeFloor: p50Ms / shapeP50Ms,
    shapeWithStoreP50Ms,
    ratioToShapeFloorWithStore: p50Ms / shapeWithStoreP50Ms,
    cpuMsPerRun: cpu.perRun,
    p50Ms,
    bareP50Ms,
    ratioToBare: p50Ms / bareP50Ms,
    p90Ms: percentile(times.automation, 90),
    bareP90Ms: percentile(times.bare, 90),
    emptyP50Ms,
    emptyP90Ms: percentile(times.empty, 90),
    ratioToEmptyWorkflow: p50Ms / emptyP50Ms,
    runs: options.runs,
  };
}

export interface FloorResult {
  /** p50 start → result of three no-op local activities in one workflow (bench/workflows/bare.ts `localThree`). */
  localThreeP50Ms: number;
  emptyP50Ms: number;
  /** localThreeP50Ms ÷ emptyP50Ms: what three steps cost when each is an activity and nothing else is done. */
  ratioToEmptyWorkflow: number;
  /**
   * p50 POST → result through the bench's bare start endpoint (`Stack.bareStart`: Koa, the JSON body,
   * an eager start of `localFour`, four no-op local activities): the automation's shape with nothing
   * checked, stored or evaluated.
   */
  shapeP50Ms: number;
  /** shapeP50Ms ÷ emptyP50Ms: the floor of `e2e.ratioToEmptyWorkflow` on this server and client. */
  shapeRatioToEmptyWorkflow: number;
  /** The same through `localThree` (three no-op local activities): the shape without the version's load. */
  shapeThreeP50Ms: number;
  shapeThreeRatioToEmptyWorkflow: number;
  runs: number;
}

/**
 * The floor of a run with everything the product must record and write, and none of its own work: a
 * bare Koa handler reads the JSON body and starts `localFourAsProduct` (bench/workflows/bare.ts: one
 * patch marker, four local activities with summaries, the third the ownership statement) with the
 * options the API starts every run with (`runStartOptions`: three search attributes, a memo, a
 * static summary), eagerly on the worker's connection as the API does. No signature, no store read,
 * no delivery log, no CEL, no interpreter.
 */
export async function startProductShapeFloor(stack: Stack, automation: BenchAutomation): Promise<Server> {
  const record = await getAutomationByListener(stack.db, automation.listenerPath.split('/').pop()!);
  if (!record) throw new Error('the bench automation is not in the store');
  return startBareKoa(productStart(stack, record));
}

function productStart(stack: Stack, record: AutomationRecord): Koa.Middleware {
  return async (ctx) => {
    const chunks: Buffer[] = [];
    for await (const chunk of ctx.req) chunks.push(chunk as Buffer);
    const eventId = randomUUID();
    const { input, display } = runOfBody(record, eventId, Buffer.concat(chunks));
    const workflowId = `product-floor:${record.listenerId}:${eventId}`;
    await stack.workerClient.workflow.start('localFourAsProduct', {
      ...runStartOptions(BARE_QUEUE, { runId: workflowId, input, ...display }),
      requestEagerStart: true,
    });
    ctx.body = { executionId: workflowId };
  };
}

async function shapeRun(
  stack: Stack,
  body: string,
  workflow: 'localThree' | 'localFour' | 'localFourWithStore',
): Promise<number> {
  return (
    await postToResult(stack, 'bare start', () => request('POST', `${stack.bareStart.url}/${workflow}`, { body }))
  ).elapsed;
}

/**
 * Diagnostic: the cheapest runs of the automation's kind against the empty workflow, in rotation.
 * `localThree` is three steps, each an activity (no HTTP, no store, no CEL); the shape is the
 * automation's own round trip (a POST, the version's load and three steps, each a local activity)
 * with nothing checked, stored or evaluated, and the same without the load. They show how much of
 * the e2e ratio the engine's round trips alone take on this server and client.
 */
export async function runFloorBench(
  stack: Stack,
  body: string,
  options: { warmup: number; runs: number },
  log: (line: string) => void,
): Promise<FloorResult> {
  log(
    `floor: ${options.warmup} warm-up runs, then ${options.runs} of each (3 no-op local activities; a bare POST and 4, and 3; empty workflow), in rotation`,
  );
  const trigger = JSON.parse(body) as unknown;
  const times = await inRotation(
    {
      localThree: () => baselineRun(stack, 'localThree', trigger),
      shape: () => shapeRun(stack, body, 'localFour'),
      shapeThree: () => shapeRun(stack, body, 'localThree'),
      empty: () => baselineRun(stack, 'empty', trigger),
    },
    options,
  );
  const localThreeP50Ms = percentile(times.localThree, 50);
  const shapeP50Ms = percentile(times.shape, 50);
  const shapeThreeP50Ms = percentile(times.shapeThree, 50);
  const emptyP50Ms = percentile(times.empty, 50);
  return {
    localThreeP50Ms,
    emptyP50Ms,
    ratioToEmptyWorkflow: localThreeP50Ms / emptyP50Ms,
    shapeP50Ms,
    shapeRatioToEmptyWorkflow: shapeP50Ms / emptyP50Ms,
    shapeThreeP50Ms,
    shapeThreeRatioToEmptyWorkflow: shapeThreeP50Ms / emptyP50Ms,
    runs: options.runs,
  };
}
