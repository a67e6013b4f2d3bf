/**
 * The webhook figures. Ingress: accepted signed webhooks per second at concurrency 32 against a
 * bare loop of `client.workflow.start` (same concurrency, same server, same run input, no HTTP),
 * and against the floor of the product's shape: a bare Node handler that reads the same signed
 * requests' body and starts the run with the API's start options (`runStartOptions`), nothing checked.
 * Rejection: bad-signature requests per second against the floor of a rejection (a bare Koa
 * handler that reads the same body, checks the same HMAC and answers 401), and against a bare Koa
 * handler answering 200 without reading anything.
 * Ingress rounds alternate between the measured path and its baselines. A rejection round gives each
 * side the same time in one-second turns (the machine's speed drifts over seconds); its ratio is
 * the median of the rounds'.
 */
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type Koa from 'koa';
import type { AddressInfo } from 'node:net';
import type { Client } from '@temporalio/client';
import { runStartOptions } from '../src/temporal/engine';
import { AUTOMATION_WORKFLOW } from '../src/contract/workflows';
import { getAutomationByListener, type AutomationRecord } from '../src/store/automations';
import type { AutomationRunInput } from '../src/contract/run';
import type { BenchAutomation } from './automation';
import type { LoadGenerator } from './load';
import type { LoadResult } from './loadgen';
import { verifyHmac } from '../src/webhooks';
import { startBareKoa, UNPOLLED_QUEUE, type Server, type Stack } from './stack';
import { hmacEvent } from '../test/helpers/signing';
import { percentile, startRssSampler } from './util';

/** Wraps each measured round of the API side, or of the baseline (run.ts uses it for --cpu-prof). */
export type AroundApi = <T>(round: number, fn: () => Promise<T>, side?: 'API' | 'baseline' | 'floor') => Promise<T>;
const direct: AroundApi = (_round, fn) => fn();

export interface Timing {
  warmupSec: number;
  durationSec: number;
  rounds: number;
  concurrency: number;
  /** The rejection's sides take their `durationSec` of a round in turns, in slices of this length; default one slice. */
  sliceSec?: number;
}

export interface IngressResult {
  /** CPU time of this process (API + workers) per accepted request, µs; diagnostic. */
  apiCpuUsPerRequest: number;
  /** CPU time of this process per bare start, µs; diagnostic. */
  bareCpuUsPerStart: number;
  /** CPU time of this process per request to the bare HTTP handler that starts the run as the API does, µs; diagnostic. */
  httpStartCpuUsPerRequest: number;
  acceptedPerSec: number;
  p50Ms: number;
  p99Ms: number;
  bareStartPerSec: number;
  bareStartP50Ms: number;
  bareStartP99Ms: number;
  ratioToBareStart: number;
  /** Requests/s answered 200 by the product-shaped floor: HTTP (the body read, the answer) and the start with the API's options. */
  httpStartPerSec: number;
  /** acceptedPerSec ÷ httpStartPerSec. */
  ratioToHttpStart: number;
  /** httpStartPerSec ÷ bareStartPerSec: the part of ratioToBareStart any receiver of this shape pays. */
  httpStartRatioToBareStart: number;
  /** Statuses other than 200 seen in the measured rounds (should be none). */
  otherStatuses: Record<string, number>;
}

export interface RejectResult {
  /** CPU time of this process per rejected request / per bare Koa request / per floor rejection, µs; diagnostics. */
  cpuUsPerRequest: number;
  bareKoaCpuUsPerRequest: number;
  hmacFloorCpuUsPerRequest: number;
  perSec: number;
  p50Ms: number;
  bareKoaPerSec: number;
  bareKoaP50Ms: number;
  ratioToBareKoa: number;
  /** 401s per second of the rejection's floor: bare Koa, the body read, the same HMAC checked. */
  hmacFloorPerSec: number;
  hmacFloorP50Ms: number;
  /**
   * The median over rounds of the API's 401s/s ÷ the floor's in the same round (the three sides of a
   * round run back to back). perSec and the other rates are each side's median over rounds.
   */
  ratioToHmacFloor: number;
  /** Each round's API ÷ floor, in round order: the spread behind the median. */
  roundRatiosToHmacFloor: number[];
  otherStatuses: Record<string, number>;
}

interface LoopResult {
  count: number;
  perSec: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
}

/** `concurrency` loops of `client.workflow.start` for `durationSec`: the ingress baseline. */
async function bareStartLoop(
  client: Client,
  input: AutomationRunInput,
  concurrency: number,
  durationSec: number,
): Promise<LoopResult> {
  const latencies: number[] = [];
  let errors = 0;
  const start = performance.now();
  const end = start + durationSec * 1000;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        const t0 = performance.now();
        try {
          await client.workflow.start('automation', {
            taskQueue: UNPOLLED_QUEUE,
            workflowId: `bare-start:${randomUUID()}`,
            args: [input],
          });
          latencies.push(performance.now() - t0);
        } catch {
          errors += 1;
        }
      }
    }),
  );
  const elapsed = (performance.now() - start) / 1000;
  return {
    count: latencies.length,
    perSec: latencies.length / elapsed,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    errors,
  };
}

/** Runs `fn` and returns its result with the CPU time this process spent meanwhile, in µs. */
async function withCpu<T>(fn: () => Promise<T>): Promise<[T, number]> {
  const before = process.cpuUsage();
  const result = await fn();
  const used = process.cpuUsage(before);
  return [result, used.user + used.system];
}

function others(result: LoadResult, expected: number, into: Record<string, number>): void {
  for (const [status, count] of Object.entries(result.statuses)) {
    if (status !== String(expected)) into[status] = (into[status] ?? 0) + count;
  }
  if (result.errors > 0) into.connectionErrors = (into.connectionErrors ?? 0) + result.errors;
}

/** The run input and display a floor starts for a JSON body, as the API would for this automation and event id. */
export function runOfBody(
  record: AutomationRecord,
  eventId: string,
  body: Buffer,
): { input: AutomationRunInput; display: { automationName: string; summary: string } } {
  const input: AutomationRunInput = {
    automationId: record.id,
    version: record.version,
    listenerId: record.listenerId,
    eventId,
    receivedAt: new Date().toISOString(),
    trigger: JSON.parse(body.toString('utf8')) as unknown,
  };
  return { input, display: { automationName: record.displayName, summary: `event ${eventId}` } };
}

/**
 * The floor of the accept path's shape: what any receiver that starts this run for a signed
 * request pays, with nothing of the service. A bare Node handler (no framework) that reads the
 * body with Node's events, parses it and starts the run as the API does (`runStartOptions`: the
 * search attributes, memo and summary every run has; the API's workflow id), then answers the
 * same JSON. No check, log, metric or delivery log.
 */
export async function startHttpStartFloor(client: Client, record: AutomationRecord): Promise<Server> {
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.once('end', () => {
      const eventId = String(req.headers['webhook-event-id']);
      const workflowId = `webhook:${record.listenerId}:${eventId}`;
      const { input, display } = runOfBody(record, eventId, Buffer.concat(chunks));
      client.workflow
        .start(AUTOMATION_WORKFLOW, runStartOptions(UNPOLLED_QUEUE, { runId: workflowId, input, ...display }))
        .then(
          () => {
            const body = JSON.stringify({ eventId, executionId: workflowId });
            res.writeHead(200, {
              'Content-Type': 'application/json; charset=utf-8',
              'Content-Length': String(Buffer.byteLength(body)),
            });
            res.end(body);
          },
          () => {
            res.writeHead(503);
            res.end();
          },
        );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/**
 * Peak RSS of this process while one receiver alone takes the ingress load for the warm-up's and
 * one round's time, sampled every 50 ms: `api` the service's API, `floor` the product-shaped floor
 * (a bare HTTP handler that starts the same run with the API's options). Run each on a stack of its
 * own, first: what ran before stays in the process's RSS.
 */
export async function peakUnderIngress(
  stack: Stack,
  load: LoadGenerator,
  automation: BenchAutomation,
  timing: Timing,
  side: 'api' | 'floor',
): Promise<{ peakRssMb: number; perSec: number }> {
  const record = await getAutomationByListener(stack.db, automation.listenerPath.split('/').pop()!);
  if (!record) throw new Error('the bench automation is not in the store');
  const floor = side === 'floor' ? await startHttpStartFloor(stack.client, record) : undefined;
  try {
    const url = `${floor ? floor.url : stack.ingressApi.url}${automation.listenerPath}`;
    const sampler = startRssSampler();
    const result = await load.run({
      connections: timing.concurrency,
      body: automation.body,
      secret: automation.signingSecret,
      mode: 'valid',
      expectStatus: 200,
      url,
      durationSec: timing.warmupSec + timing.durationSec,
    });
    return { peakRssMb: sampler.stop(), perSec: result.perSec };
  } finally {
    await floor?.close();
  }
}

type IngressSide = 'api' | 'bare' | 'httpStart';

export async function runIngressBench(
  stack: Stack,
  load: LoadGenerator,
  automation: BenchAutomation,
  timing: Timing,
  log: (line: string) => void,
  aroundApi: AroundApi = direct,
): Promise<IngressResult> {
  const record = await getAutomationByListener(stack.db, automation.listenerPath.split('/').pop()!);
  if (!record) throw new Error('the bench automation is not in the store');
  const floor = await startHttpStartFloor(stack.client, record);
  try {
    return await ingressRounds(stack, floor, load, automation, record, timing, log, aroundApi);
  } finally {
    await floor.close();
  }
}

async function ingressRounds(
  stack: Stack,
  floor: Server,
  load: LoadGenerator,
  automation: BenchAutomation,
  record: AutomationRecord,
  timing: Timing,
  log: (line: string) => void,
  aroundApi: AroundApi,
): Promise<IngressResult> {
  const input: AutomationRunInput = {
    automationId: record.id,
    version: record.version,
    listenerId: record.listenerId,
    eventId: randomUUID(),
    receivedAt: new Date().toISOString(),
    trigger: JSON.parse(automation.body) as unknown,
  };
  const job = {
    connections: timing.concurrency,
    body: automation.body,
    secret: automation.signingSecret,
    mode: 'valid' as const,
    expectStatus: 200,
  };
  const urls = {
    api: `${stack.ingressApi.url}${automation.listenerPath}`,
    httpStart: `${floor.url}${automation.listenerPath}`,
  };

  // The API alone first, for a warm-up as long as a warm-up and a round (where the section once
  // took the API's peak RSS; it is taken on a stack of its own now, `peakUnderIngress`).
  log(
    `ingress: the API alone for ${timing.warmupSec + timing.durationSec}s (its warm-up), then a warm-up of ${timing.warmupSec}s for each floor`,
  );
  const alone = await load.run({ ...job, url: urls.api, durationSec: timing.warmupSec + timing.durationSec });
  await bareStartLoop(stack.client, input, timing.concurrency, timing.warmupSec);
  await load.run({ ...job, url: urls.httpStart, durationSec: timing.warmupSec });

  type Measured = { perSec: number; p50Ms: number; p99Ms: number; cpuUs: number };
  const best: Partial<Record<IngressSide, Measured>> = {};
  const otherStatuses: Record<string, number> = {};
  others(alone, 200, otherStatuses);
  const measure = async (side: IngressSide, round: number): Promise<void> => {
    let measured: Measured;
    if (side === 'bare') {
      const [result, cpu] = await aroundApi(
        round,
        () => withCpu(() => bareStartLoop(stack.client, input, timing.concurrency, timing.durationSec)),
        'baseline',
      );
      if (result.errors > 0) otherStatuses.bareStartErrors = (otherStatuses.bareStartErrors ?? 0) + result.errors;
      measured = { ...result, cpuUs: cpu / Math.max(1, result.count) };
    } else {
      const [result, cpu] = await aroundApi(
        round,
        () => withCpu(() => load.run({ ...job, url: urls[side], durationSec: timing.durationSec })),
        side === 'api' ? 'API' : 'floor',
      );
      const statuses: Record<string, number> = {};
      others(result, 200, statuses);
      for (const [status, count] of Object.entries(statuses)) {
        const key = side === 'api' ? status : `httpStart ${status}`;
        otherStatuses[key] = (otherStatuses[key] ?? 0) + count;
      }
      measured = { ...result, cpuUs: cpu / Math.max(1, result.expected) };
    }
    const name = side === 'api' ? 'API' : side === 'bare' ? 'bare start' : 'bare HTTP + start';
    log(
      `ingress round ${round}: ${name} ${measured.perSec.toFixed(0)}/s p50 ${measured.p50Ms.toFixed(1)} ms p99 ${measured.p99Ms.toFixed(1)} ms, ${measured.cpuUs.toFixed(0)} µs CPU/request`,
    );
    const kept = best[side];
    if (!kept || measured.perSec > kept.perSec) best[side] = measured;
  };
  // Each side goes first, second and third equally often over rounds.
  const orders: IngressSide[][] = [
    ['api', 'bare', 'httpStart'],
    ['bare', 'httpStart', 'api'],
    ['httpStart', 'api', 'bare'],
  ];
  for (let round = 1; round <= timing.rounds; round++) {
    for (const side of orders[(round - 1) % orders.length]!) await measure(side, round);
  }
  const { api, bare, httpStart } = best as Record<IngressSide, Measured>;
  return {
    apiCpuUsPerRequest: api.cpuUs,
    bareCpuUsPerStart: bare.cpuUs,
    httpStartCpuUsPerRequest: httpStart.cpuUs,
    acceptedPerSec: api.perSec,
    p50Ms: api.p50Ms,
    p99Ms: api.p99Ms,
    bareStartPerSec: bare.perSec,
    bareStartP50Ms: bare.p50Ms,
    bareStartP99Ms: bare.p99Ms,
    ratioToBareStart: api.perSec / bare.perSec,
    httpStartPerSec: httpStart.perSec,
    ratioToHttpStart: api.perSec / httpStart.perSec,
    httpStartRatioToBareStart: httpStart.perSec / bare.perSec,
    otherStatuses,
  };
}

/** The service's answer to a bad signature as it goes on the wire: status, headers (those Node adds aside) and body. */
export interface Refusal {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Headers Node's HTTP server writes itself on every answer; the floor's server adds its own. */
const TRANSPORT_HEADERS = new Set(['date', 'connection', 'keep-alive', 'content-length', 'transfer-encoding']);

/** Sends one delivery with a wrong signature to the API and keeps its answer, to be sent by the floor. */
function serviceRefusal(url: string, body: string): Promise<Refusal> {
  const { headers } = hmacEvent('not-the-signing-secret', undefined, { body });
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: target.hostname, port: target.port, path: target.pathname, method: 'POST', headers },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.once('end', () => {
          const kept: Record<string, string> = {};
          for (const [name, value] of Object.entries(res.headers))
            if (!TRANSPORT_HEADERS.has(name) && typeof value === 'string') kept[name] = value;
          if (res.statusCode !== 401) reject(new Error(`a wrong signature was answered ${res.statusCode}, not 401`));
          else resolve({ status: res.statusCode, headers: kept, body: Buffer.concat(chunks).toString('utf8') });
        });
        res.once('error', reject);
      },
    );
    req.once('error', reject);
    req.end(body);
  });
}

/**
 * The floor of a rejection: what any receiver must do to refuse a bad signature, with nothing of the
 * service around it. Koa, the whole body read, the HMAC over "<timestamp>.<event id>.<body>" checked
 * with the same function, and the service's own 401 (its headers and its body in the one error
 * shape, as `serviceRefusal` received them: what the contract makes every receiver send).
 */
function startHmacFloor(secret: string, refusal: Refusal): Promise<Server> {
  return startBareKoa(hmacFloorHandler(secret, refusal));
}

/** The floor's handler (bench/lab-401.ts runs it without a socket). */
export function hmacFloorHandler(secret: string, refusal: Refusal): Koa.Middleware {
  return async (ctx) => {
    // Node's own events (no async iterator): the cheapest way to read a body.
    const body = await new Promise<Buffer>((resolve, reject) => {
      const chunks: Buffer[] = [];
      ctx.req.on('data', (chunk: Buffer) => chunks.push(chunk));
      ctx.req.once('end', () => resolve(Buffer.concat(chunks)));
      ctx.req.once('error', reject);
    });
    const headers = ctx.req.headers;
    const header = (name: string): string => (typeof headers[name] === 'string' ? headers[name] : '');
    if (
      verifyHmac(secret, header('webhook-timestamp'), header('webhook-event-id'), body, header('webhook-signature'))
    ) {
      ctx.body = {};
      return;
    }
    ctx.status = refusal.status;
    ctx.set(refusal.headers);
    ctx.body = refusal.body;
  };
}

export async function runRejectBench(
  stack: Stack,
  load: LoadGenerator,
  automation: BenchAutomation,
  timing: Timing,
  log: (line: string) => void,
  aroundApi: AroundApi = direct,
): Promise<RejectResult> {
  const floor = await startHmacFloor(
    automation.signingSecret,
    await serviceRefusal(`${stack.ingressApi.url}${automation.listenerPath}`, automation.body),
  );
  try {
    return await rejectRounds(stack, floor, load, automation, timing, log, aroundApi);
  } finally {
    await floor.close();
  }
}

type RejectSide = 'api' | 'floor' | 'koa';
const REJECT_SIDE_NAMES: Record<RejectSide, string> = {
  api: 'API (401)',
  floor: 'HMAC floor (401)',
  koa: 'bare Koa (200)',
};

async function rejectRounds(
  stack: Stack,
  floor: Server,
  load: LoadGenerator,
  automation: BenchAutomation,
  timing: Timing,
  log: (line: string) => void,
  aroundApi: AroundApi,
): Promise<RejectResult> {
  const job = {
    connections: timing.concurrency,
    body: automation.body,
    secret: automation.signingSecret,
    mode: 'badSignature' as const,
  };
  const jobs: Record<RejectSide, typeof job & { url: string; expectStatus: number }> = {
    api: { ...job, url: `${stack.ingressApi.url}${automation.listenerPath}`, expectStatus: 401 },
    floor: { ...job, url: `${floor.url}${automation.listenerPath}`, expectStatus: 401 },
    koa: { ...job, url: `${stack.bareKoa.url}${automation.listenerPath}`, expectStatus: 200 },
  };

  log(`rejection: warm-up ${timing.warmupSec}s each`);
  for (const side of ['api', 'floor', 'koa'] as const) await load.run({ ...jobs[side], durationSec: timing.warmupSec });

  /** A side's round: its slices together (p50: the median of the slices'). */
  type Measured = { perSec: number; expected: number; p50Ms: number; cpuUs: number };
  const measuredRounds: Array<Partial<Record<RejectSide, Measured>>> = [];
  const otherStatuses: Record<string, number> = {};
  // A round gives each side `durationSec`, in slices of `sliceSec` taken in turns (each side first,
  // second and third equally often): the machine's speed drifts over seconds (another tenant, the
  // other core's load), and sides measured in turns within a round see the same drift.
  const orders: RejectSide[][] = [
    ['api', 'floor', 'koa'],
    ['floor', 'koa', 'api'],
    ['koa', 'api', 'floor'],
  ];
  const sliceSec = Math.min(timing.sliceSec ?? timing.durationSec, timing.durationSec);
  const slices = Math.max(1, Math.round(timing.durationSec / sliceSec));
  for (let round = 1; round <= timing.rounds; round++) {
    const sums: Partial<Record<RejectSide, { cpu: number; expected: number; durationSec: number; p50s: number[] }>> =
      {};
    for (let slice = 0; slice < slices; slice++) {
      for (const side of orders[(round - 1 + slice) % orders.length]!) {
        const measured = (): Promise<[LoadResult, number]> =>
          withCpu(() => load.run({ ...jobs[side], durationSec: sliceSec }));
        // --cpu-prof: a round's first slice of each side.
        const [result, cpu] =
          slice === 0
            ? await aroundApi(round, measured, side === 'api' ? 'API' : side === 'floor' ? 'floor' : 'baseline')
            : await measured();
        others(result, jobs[side].expectStatus, otherStatuses);
        const sum = (sums[side] ??= { cpu: 0, expected: 0, durationSec: 0, p50s: [] });
        sum.cpu += cpu;
        sum.expected += result.expected;
        sum.durationSec += result.durationSec;
        sum.p50s.push(result.p50Ms);
      }
    }
    const sides: Partial<Record<RejectSide, Measured>> = {};
    for (const side of orders[(round - 1) % orders.length]!) {
      const sum = sums[side]!;
      const measured: Measured = {
        perSec: sum.expected / sum.durationSec,
        expected: sum.expected,
        p50Ms: percentile(sum.p50s, 50),
        cpuUs: sum.cpu / Math.max(1, sum.expected),
      };
      log(
        `rejection round ${round}: ${REJECT_SIDE_NAMES[side]} ${measured.perSec.toFixed(0)}/s p50 ${measured.p50Ms.toFixed(2)} ms, ${measured.cpuUs.toFixed(0)} µs CPU/request`,
      );
      sides[side] = measured;
    }
    measuredRounds.push(sides);
  }
  const all = measuredRounds as Array<Record<RejectSide, Measured>>;
  const median = (values: number[]): number => percentile(values, 50);
  const perSecOf = (side: RejectSide): number => median(all.map((sides) => sides[side].perSec));
  // CPU per request over every round of a side: the total CPU over the total answered.
  const cpuUsOf = (side: RejectSide): number =>
    all.reduce((sum, sides) => sum + sides[side].cpuUs * sides[side].expected, 0) /
    Math.max(
      1,
      all.reduce((sum, sides) => sum + sides[side].expected, 0),
    );
  const roundRatiosToHmacFloor = all.map((sides) => sides.api.perSec / sides.floor.perSec);
  return {
    cpuUsPerRequest: cpuUsOf('api'),
    bareKoaCpuUsPerRequest: cpuUsOf('koa'),
    hmacFloorCpuUsPerRequest: cpuUsOf('floor'),
    perSec: perSecOf('api'),
    p50Ms: median(all.map((sides) => sides.api.p50Ms)),
    bareKoaPerSec: perSecOf('koa'),
    bareKoaP50Ms: median(all.map((sides) => sides.koa.p50Ms)),
    ratioToBareKoa: median(all.map((sides) => sides.api.perSec / sides.koa.perSec)),
    hmacFloorPerSec: perSecOf('floor'),
    hmacFloorP50Ms: median(all.map((sides) => sides.floor.p50Ms)),
    ratioToHmacFloor: median(roundRatiosToHmacFloor),
    roundRatiosToHmacFloor,
    otherStatuses,
  };
}
