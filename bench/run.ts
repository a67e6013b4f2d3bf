/**
 * `npm run bench [-- --quick] [-- --only=cel,ingress,reject,e2e,pagination,memory,flow,breaker,grants,schedule,events,bulk,tracing,console] [-- --cpu-prof=<dir>]`
 *
 * Starts its own embedded stack (Temporal dev server in memory on a free port, the store, the
 * automation worker and a baseline worker, the API on free ports), then measures, each figure
 * against a baseline taken in the same run. A full run starts a fresh stack for each of flow,
 * ingress (with reject), e2e and breaker, so that none measures a server holding the runs of the
 * sections before it; the bulk section always has a stack of its own, its dev server on a SQLite file:
 *   ingress     accepted signed webhooks/s and p50/p99 at concurrency 32 vs bare client.workflow.start,
 *               and vs a bare HTTP handler that starts the same run with the API's start options
 *   reject      bad-signature requests/s vs a bare Koa handler answering 200
 *   e2e         p50 from POST to workflow result (3-step automation) vs a bare 3-activity workflow
 *               and vs the engine's floor (start → result of a workflow that returns at once, same
 *               server and client: e2e.ratioToEmptyWorkflow); the same p50, absolute, on a fresh
 *               `npm start` (bench/start-e2e.ts), as information
 *   pagination  the page at row N/2 vs the first page, on PGlite and on PostgreSQL (DATABASE_URL)
 *   cel         evaluations/s through src/cel vs the raw @bufbuild/cel library
 *   memory      peak RSS of a process of its own (API + workers, bench/peak-child.ts) with the API
 *               alone under the ingress load, against the same with the product-shaped floor alone
 *               (with the ingress section); the Temporal server's peak during ingress;
 *               RSS of every process of an idle `npm start`, and of its floor in turn
 *               (bench/memory-floor.js: the same dev server, Koa, PGlite and a worker, nothing of ours)
 *   flow        concurrency-limited ingress vs plain ingress; lane hand-off vs a run's start (bench/flow.ts)
 *   breaker     ingress on an automation with a closed circuit breaker vs plain ingress (bench/breaker.ts)
 *   grants      a grant's time to GRANTED through its workflow vs a one-row workflow; the p99 lateness of
 *               100 and of 1,000 (full: 10,000) grants expiring at one instant, the latter vs as many
 *               bare timers (bench/grants.ts)
 *   schedule    a schedule automation's lateness (scheduledAt → its run's first step) vs a bare
 *               Temporal Schedule's (scheduled time → its one activity's start) (bench/schedules.ts)
 *   events      commit of a user → the run of an event automation started, vs a commit → a bare
 *               client.workflow.start, on PGlite and on PostgreSQL (DATABASE_URL) (bench/events.ts)
 *   bulk        ingress while a bulk cancel of runs parked in waitForApproval runs vs plain ingress
 *               before and after; the cancel's duration and runs/s (bench/bulk.ts)
 *   tracing     on npm start, alone: ingress with tracing exporting to Jaeger vs the variables unset, and
 *               unset vs a bundle without the OpenTelemetry interceptors; idle memory on/off (bench/tracing.ts)
 *   search      entitlement search by `query` (substring) vs the first page (with pagination), on
 *               each store (search.pglite, search.postgres; the top-level figure is PostgreSQL's
 *               when measured, else PGlite's)
 *   console     on a fresh `npm start`, signed in, in Debian's Chromium: the runs list from
 *               navigation start to drawn with its data (median of 5 cold loads), the first page's
 *               JavaScript gzipped, the idle RSS the served console adds, and Lighthouse's desktop
 *               performance and accessibility scores on the runs page (median of 3; bench/console.ts)
 * `--cpu-prof=<dir>` writes a CPU profile of this process (API + workers) per measured round (API and baseline) of
 * the ingress and reject sections (<section>-round<N>.cpuprofile), and of bulk's cancel and its plain ingress before.
 * Prints a table and writes bench-results.json. Never part of `npm test`. Progress goes to stderr.
 * Each section is one entry of SECTIONS below: the steps it runs (and when), the figures they write,
 * its rows of the printed table.
 */
import { fork } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createBenchAutomation, type BenchAutomation } from './automation';
import { runCelBench, type CelResult } from './cel';
import { runTracingBench, type TracingResult, type TracingTiming } from './tracing';
import { IDLE_RSS_GOAL_MB, runMemoryBench, runMemoryFloorBench, type MemoryResult } from './memory';
import { runE2eBench, runFloorBench, type E2eResult, type FloorResult } from './e2e';
import { runStartE2eBench, type StartE2eResult } from './start-e2e';
import { runConsoleBench, type ConsoleResult } from './console';
import { LoadGenerator } from './load';
import { runPaginationBench, type PaginationResult } from './pagination';
import { runFlowBench, type FlowResult } from './flow';
import { installRuntime, startStack, type Stack } from './stack';
import { runBreakerBench, type BreakerResult } from './breaker';
import { runBulkBench, type BulkResult } from './bulk';
import { runGrantsBench, type GrantsResult, type GrantsTiming } from './grants';
import { runScheduleBench, type ScheduleResult, type ScheduleTiming } from './schedules';
import { runEventsBench, type EventsResult, type EventsTiming } from './events';
import { closeHttpAgent, peakRssOfPid, round, runToExit, startCpuProfile, startRssSampler } from './util';
import type { PeakAnswer, PeakJob } from './peak-child';
import {
  runIngressBench,
  runRejectBench,
  type AroundApi,
  type IngressResult,
  type RejectResult,
  type Timing,
} from './webhooks';

interface Profile {
  cel: { roundMs: number; rounds: number };
  ingress: Timing;
  reject: Timing;
  e2e: { warmup: number; runs: number };
  /** Runs of the end-to-end measurement on `npm start` itself. */
  e2eOnStartRuns: number;
  /** Runs of the three-setVariables diagnostic (0 = skipped). */
  e2eDiagnosticRuns: number;
  pagination: { rows: number; samples: number };
  memory: { settleMs: number };
  breaker: { seconds: number; rounds: number };
  /** Sequential grants to GRANTED (and floor runs); grants moved to one expiresAt (with as many bare timers). */
  grants: GrantsTiming;
  /** Actions of a schedule automation and of a bare Schedule measured (bench/schedules.ts). */
  schedule: ScheduleTiming;
  /** Users made (and as many bare starts) per store (bench/events.ts). */
  events: EventsTiming;
  /** Tracing's cost on npm start (bench/tracing.ts): interleaved ingress rounds, and the idle memory's settle. */
  tracing: TracingTiming;
  /** Runs parked in waitForApproval and canceled by one bulk action; seconds of plain ingress before and after. */
  bulk: { runs: number; seconds: number };
  /** Processes of each side for the peak under the ingress load (bench/peak-child.ts). */
  peakSamples: number;
}

const FULL: Profile = {
  cel: { roundMs: 2000, rounds: 3 },
  ingress: { warmupSec: 5, durationSec: 15, rounds: 2, concurrency: 32 },
  // Rejection: an odd number of short rounds, the ratio the median of the rounds' (bench/webhooks.ts).
  reject: { warmupSec: 3, durationSec: 4, rounds: 5, concurrency: 32, sliceSec: 1 },
  e2e: { warmup: 10, runs: 150 },
  e2eOnStartRuns: 60,
  e2eDiagnosticRuns: 60,
  pagination: { rows: 1_000_000, samples: 200 },
  memory: { settleMs: 10_000 },
  breaker: { seconds: 10, rounds: 2 },
  grants: { samples: 60, expiryGrants: 10_000 },
  schedule: { actions: 60 },
  events: { samples: 60 },
  tracing: { rounds: 5, warmupSec: 5, durationSec: 10, concurrency: 32, settleMs: 10_000 },
  bulk: { runs: 10_000, seconds: 10 },
  peakSamples: 2,
};

const QUICK: Profile = {
  cel: { roundMs: 700, rounds: 2 },
  ingress: { warmupSec: 2, durationSec: 5, rounds: 1, concurrency: 32 },
  reject: { warmupSec: 2, durationSec: 2, rounds: 3, concurrency: 32, sliceSec: 1 },
  e2e: { warmup: 3, runs: 20 },
  e2eOnStartRuns: 20,
  e2eDiagnosticRuns: 0,
  pagination: { rows: 100_000, samples: 40 },
  memory: { settleMs: 5_000 },
  breaker: { seconds: 4, rounds: 2 },
  grants: { samples: 20, expiryGrants: 1_000 },
  schedule: { actions: 20 },
  events: { samples: 20 },
  tracing: { rounds: 5, warmupSec: 2, durationSec: 4, concurrency: 32, settleMs: 5_000 },
  bulk: { runs: 1_000, seconds: 4 },
  peakSamples: 2,
};

/** Everything measured, for the table (the JSON keeps the agreed keys only). */
interface Detail {
  cel?: CelResult;
  ingress?: IngressResult;
  reject?: RejectResult;
  e2e?: E2eResult;
  /** The same measurement with three setVariables steps (full runs only). */
  e2eSetVariables?: E2eResult;
  /** Three no-op local activities vs the empty workflow (full runs only). */
  e2eFloor?: FloorResult;
  e2eOnStart?: StartE2eResult;
  pglite?: PaginationResult;
  postgres?: PaginationResult;
  automation?: BenchAutomation;
  idle?: MemoryResult;
  /** The floor of the idle figure (bench/memory-floor.js), counted the same way. */
  idleFloor?: MemoryResult;
  console?: ConsoleResult;
  breaker?: BreakerResult;
  grants?: GrantsResult;
  schedule?: ScheduleResult;
  events?: EventsResult[];
  bulk?: BulkResult;
  tracing?: TracingResult;
}

interface Results {
  ingress: {
    acceptedPerSec: number;
    p50Ms: number;
    p99Ms: number;
    bareStartPerSec: number;
    ratioToBareStart: number;
    /** 200s/s of the product-shaped floor: a bare Node handler that reads the body and starts the run with the API's start options. */
    httpStartPerSec: number;
    /** acceptedPerSec ÷ httpStartPerSec. */
    ratioToHttpStart: number;
  } | null;
  reject: {
    perSec: number;
    bareKoaPerSec: number;
    ratioToBareKoa: number;
    /**
     * 401s/s of a bare Koa handler that reads the same body, checks the same HMAC and sends the
     * service's own 401 (headers and body): the floor of a rejection.
     */
    hmacFloorPerSec: number;
    /** The median over rounds of the API's rate ÷ the floor's in the same round (goal ≥ 0.85). */
    ratioToHmacFloor: number;
    /** Each round's ratio, in order. */
    roundRatiosToHmacFloor: number[];
    /** The floor's CPU per 401 ÷ the API's (this process, every round): the same comparison by cost. */
    cpuRatioToHmacFloor: number;
  } | null;
  e2e: {
    p50Ms: number;
    bareP50Ms: number;
    ratioToBare: number;
    npmStartP50Ms: number | null;
    /** Start → result of a workflow that returns at once, same server and client. */
    emptyWorkflowP50Ms: number;
    /** p50Ms ÷ emptyWorkflowP50Ms. */
    ratioToEmptyWorkflow: number;
    /**
     * The same ratio for the automation's shape with nothing checked, stored or evaluated (a bare
     * POST that starts four no-op local activities): the floor of ratioToEmptyWorkflow.
     */
    shapeFloorRatioToEmptyWorkflow: number | null;
    /** p50 POST → result of the automation's shape with nothing of ours (bare POST + four no-op local activities), same rotation. */
    shapeFloorP50Ms: number;
    /** p50Ms ÷ shapeFloorP50Ms (goal ≤ 1.15): the service's own part of a run. */
    ratioToShapeFloor: number;
    /**
     * p50 POST → result of the shape with the product's one store write (the ownership statement on
     * the same store as the third of the four local activities), same rotation; null when the
     * automation fell back to three setVariables steps.
     */
    shapeFloorWithStoreP50Ms: number | null;
    /** p50Ms ÷ shapeFloorWithStoreP50Ms: how far a run is from the floor that counts its store write. */
    ratioToShapeFloorWithStore: number | null;
    /**
     * p50 POST → result of the floor with everything a run of the product must record and write (the
     * API's start options, one patch marker, a summary per step, the ownership statement), none of
     * its own work (bench/e2e.ts `startProductShapeFloor`), same rotation; null without the ownership step.
     */
    productShapeFloorP50Ms: number | null;
    /** p50Ms ÷ productShapeFloorP50Ms: what the service's own work (checks, reads, CEL, the interpreter) adds to a run. */
    ratioToProductShapeFloor: number | null;
    /** productShapeFloorP50Ms ÷ shapeFloorP50Ms: what recording a run as the product must costs any receiver of this shape. */
    productShapeFloorRatioToShapeFloor: number | null;
    /** CPU ms per run by kind (automation, shape, shapeWithStore, bare, empty): this process, its main thread, the Temporal server. */
    cpuMsPerRun: Record<string, { process: number; mainThread: number; temporal: number }>;
  } | null;
  pagination: {
    /** The PostgreSQL figure when measured, else PGlite's. */
    ratioDeepToFirst: number | null;
    pglite: { firstMs: number; deepMs: number; ratioDeepToFirst: number } | null;
    postgres: { firstMs: number; deepMs: number; ratioDeepToFirst: number } | null;
  };
  cel: { perSec: number; rawPerSec: number; ratioToRaw: number } | null;
  memory: {
    /**
     * Peak RSS of a process of its own (API, workers, store: bench/peak-child.ts) with a fresh stack
     * while the API alone takes the ingress load: the service's own peak under load (goal ≤ 600),
     * the highest of `peakSamples` such processes.
     */
    apiWorkerPeakRssMb: number | null;
    /** Peak RSS of this process over the whole ingress section, the bench's own floors (bare start loops, a bare HTTP server) included; information. */
    sectionPeakRssMb?: number | null;
    /**
     * The floor of apiWorkerPeakRssMb: the same kind of process while the product-shaped floor (a
     * bare HTTP handler that starts the same runs with the API's options) alone takes the same
     * load, MB; the highest of as many.
     */
    floorPeakRssMb?: number | null;
    /** apiWorkerPeakRssMb − floorPeakRssMb. */
    peakOverFloorMb?: number | null;
    /** Each process's peak, in the order taken: apiWorkerPeakRssMb and floorPeakRssMb are their highest. */
    peakSamplesMb?: { api: number[]; floor: number[] };
    temporalPeakRssMb: number | null;
    /** Idle `npm start`: the RSS of every process of its process group (npm's own included), summed as `ps` shows it. */
    idleRssMb: number | null;
    /** The same processes' PSS, summed (pages shared between them counted once). */
    idlePssMb: number | null;
    /** The floor of idleRssMb: `npm run bench:memory-floor` (bench/memory-floor.js), counted the same way. */
    floorIdleRssMb: number | null;
    floorIdlePssMb: number | null;
    /** idleRssMb ÷ floorIdleRssMb. */
    idleRatioToFloor: number | null;
    /** idleRssMb − floorIdleRssMb: what the service holds above its floor. */
    idleRssOverFloorMb: number | null;
  } | null;
  search: {
    firstPageMs: number;
    searchMs: number;
    ratioToFirstPage: number;
    store: 'pglite' | 'postgres';
    pglite: SearchFigure | null;
    postgres: SearchFigure | null;
  } | null;
  /** bench/flow.ts: concurrency-limited ingress ÷ plain ingress; lane hand-off p50 ÷ workflow start p50. */
  flow?: FlowResult | null;
  /** bench/breaker.ts: ingress with a closed circuit breaker ÷ plain ingress, same run. */
  breaker?: { ingressRatio: number; breakerPerSec: number; plainPerSec: number } | null;
  grants?: {
    ratioToFloor: number;
    grantedP50Ms: number;
    floorP50Ms: number;
    expiryLatenessP99Ms: number;
    expiryRatioToFloor: number;
    expiryGrants: number;
    expiryP99Ms: number;
    floorP99Ms: number;
    ingressRatioDuringExpiry: number | null;
  } | null;
  /** bench/schedules.ts: scheduledAt → the run's first step, p50 (goal ≤ 1,500), beside a bare Schedule's. */
  schedule?: {
    latenessP50Ms: number;
    floorP50Ms: number;
    ratioToFloor: number;
    latenessP90Ms: number;
    floorP90Ms: number;
    actions: number;
  } | null;
  /**
   * bench/events.ts: a user's commit → its event automation's run started, p50 (goal ≤ 250), on
   * PGlite, and on PostgreSQL when DATABASE_URL is set (null otherwise), beside commit → a bare start.
   */
  events?: {
    dispatchP50Ms: number;
    floorP50Ms: number;
    ratioToFloor: number;
    dispatchP50MsPostgres: number | null;
    floorP50MsPostgres: number | null;
    ratioToFloorPostgres: number | null;
    samples: number;
  } | null;
  /**
   * bench/tracing.ts, on npm start: ingress with tracing exporting to Jaeger ÷ the variables unset, and
   * unset ÷ a bundle without the OpenTelemetry workflow interceptors (medians of interleaved rounds);
   * the idle memory with tracing on beside the same without.
   */
  tracing?: {
    ingressRatio: number;
    offIngressRatio: number;
    onPerSec: number;
    unsetPerSec: number;
    noSdkPerSec: number;
    rounds: number;
    idleRssMbOn: number;
    idleRssMbOff: number;
  } | null;
  /** bench/bulk.ts: ingress while a bulk cancel of `runs` parked runs runs ÷ plain ingress before and after; the cancel's duration. */
  bulk?: {
    ingressRatioDuringCancel: number;
    duringCancelPerSec: number;
    /** Windows of ingress during the cancel (bench/bulk.ts: one every SAMPLE_PERIOD windows' time). */
    duringCancelWindows: number;
    plainPerSec: number;
    runs: number;
    cancelSeconds: number;
    cancelRunsPerSec: number;
  } | null;
  /** bench/console.ts: the console on `npm start` (null figures: not measured, with a note). */
  console?: {
    runsListMs: number | null;
    firstPageJsGzKb: number | null;
    idleRssCostMb: number | null;
    lighthousePerformance: number | null;
    lighthouseAccessibility: number | null;
  } | null;
}

interface SearchFigure {
  rows: number;
  firstPageMs: number;
  searchMs: number;
  ratioToFirstPage: number;
}

const startedAt = performance.now();
const log = (line: string): void => {
  process.stderr.write(`[bench ${((performance.now() - startedAt) / 1000).toFixed(1).padStart(5)}s] ${line}\n`);
};

/** Runs one peak in a process of its own (bench/peak-child.ts), with this process's Node flags and environment. */
function peakInChild(job: PeakJob): Promise<PeakAnswer> {
  const child = fork(path.join(__dirname, 'peak-child.ts'), [], {
    execArgv: process.execArgv,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  return new Promise((resolve, reject) => {
    let answer: PeakAnswer | undefined;
    child.once('message', (message) => (answer = message as PeakAnswer));
    child.once('error', reject);
    child.once('exit', (code) =>
      answer && code === 0
        ? resolve(answer)
        : reject(
            new Error(`the peak process (${job.side}) exited with code ${code}${answer ? '' : ' without a peak'}`),
          ),
    );
    child.send(job);
  });
}

interface Args {
  quick: boolean;
  /** The names of the sections to run (--only=; every section without it). */
  only: Set<string>;
  cpuProfDir: string | undefined;
}

/** The shared stack as a section on it gets it: the stack, the load generator, the automation made on it. */
interface OnStack {
  stack: Stack;
  load: LoadGenerator;
  automation: BenchAutomation;
}

/** What every section's steps read and write: the run's options, the figures, the notes and the stack of the moment. */
class Bench {
  readonly notes: string[] = [];
  readonly results: Results = {
    ingress: null,
    reject: null,
    e2e: null,
    pagination: { ratioDeepToFirst: null, pglite: null, postgres: null },
    cel: null,
    memory: null,
    search: null,
  };
  readonly detail: Detail = {};
  stack: Stack | undefined;
  load: LoadGenerator | undefined;
  /** The automation made on the shared stack of the moment (bench/automation.ts). */
  automation: BenchAutomation | undefined;
  /** The bulk section's dev server database (bench/bulk.ts), removed with the stack. */
  temporalDataDir: string | undefined;
  /** The section the shared stack of the moment was started for (sharedStack). */
  private stackHolder: string | undefined;

  constructor(
    readonly args: Args,
    readonly profile: Profile,
  ) {}

  async cleanUp(): Promise<void> {
    await this.load?.close().catch(() => undefined);
    this.load = undefined;
    await this.stack?.stop().catch(() => undefined);
    this.stack = undefined;
    if (this.temporalDataDir) fs.rmSync(this.temporalDataDir, { recursive: true, force: true });
    this.temporalDataDir = undefined;
  }

  /** The stack the sections with an `onSharedStack` step share, with its load generator and automation. */
  async startSharedStack(): Promise<void> {
    // The store as `npm start` has it (files in a data directory): the API + workers figures measure the product.
    this.stack = await startStack({ log, databaseUrl: undefined, embeddedStore: 'dataDir' });
    this.load = await LoadGenerator.start();
    this.automation = await createBenchAutomation(this.stack.e2eApi.url, this.stack.adminToken);
    this.detail.automation = this.automation;
    if (this.automation.fallback)
      this.notes.push(`e2e/ingress automation fell back to three setVariables steps: ${this.automation.fallback}`);
  }

  /**
   * The shared stack for the section named `holder` (a section that measures on another's stack names that
   * one). A full run starts each holder on a stack of its own: its runs stay in the dev server (runs on the
   * unpolled queue wait for ever), and a section must not measure a server that holds the tens of thousands
   * of runs the sections before it left. A quick run leaves few: every holder has the first stack.
   */
  async sharedStack(holder: string): Promise<OnStack> {
    if (holder !== this.stackHolder) {
      const first = this.stackHolder === undefined;
      this.stackHolder = holder;
      if (!this.args.quick && !first) {
        log(`a fresh stack for the ${holder} section`);
        await this.stack!.stop();
        this.stack = undefined;
        this.stack = await startStack({ log, databaseUrl: undefined, embeddedStore: 'dataDir' });
        this.automation = await createBenchAutomation(this.stack.e2eApi.url, this.stack.adminToken);
      }
    }
    return { stack: this.stack!, load: this.load!, automation: this.automation! };
  }

  /** Runs a measured round of a section (API, or its baseline) under the CPU profiler when --cpu-prof was given. */
  profiled(section: string): AroundApi {
    const dir = this.args.cpuProfDir;
    return async (round, fn, side = 'API') => {
      if (!dir) return fn();
      const profiler = await startCpuProfile();
      try {
        return await fn();
      } finally {
        const file = path.join(dir, `${section}${side === 'API' ? '' : `-${side}`}-round${round}.cpuprofile`);
        await profiler.stop(file);
        log(`CPU profile of ${section}, ${side} round ${round}: ${file}`);
      }
    };
  }
}

/** A step of a section: measures, and writes its figures into `bench.results` (the JSON) and `bench.detail` (the table). */
type Step = (bench: Bench) => Promise<void> | void;

/**
 * One section of the bench (`--only=<name>`). Its steps run at the moments their names say, in this
 * order: `alone` (before any stack), `onSharedStack`, `afterSharedStack` (every section on the shared
 * stack done), `onOwnStack`, `afterStacks` (every stack stopped); at each moment the sections run in
 * the order of SECTIONS. A section has the steps it needs, one at least.
 */
interface BenchSection {
  name: string;
  alone?: Step;
  /** On the stack the sections share (bench.sharedStack: a fresh one per section in a full run). */
  onSharedStack?: Step;
  afterSharedStack?: Step;
  /** On a stack the step starts for itself (bench.stack, stopped with bench.cleanUp). */
  onOwnStack?: Step;
  afterStacks?: Step;
  /** The part of the printed table its rows go in (TABLE_PARTS). */
  table: TablePart;
  /** Its rows of the printed table, from what is in bench.results and bench.detail (nothing when it did not run). */
  rows(bench: Bench, table: Table): void;
}

/** The printed table's parts, in order: it reads by what is measured, while the sections run in the order they need. */
const TABLE_PARTS = ['webhooks', 'console', 'automations', 'store', 'cel', 'memory'] as const;
type TablePart = (typeof TABLE_PARTS)[number];

/**
 * The bench's sections: a new one is one entry here (and its figures' keys in Results). The order
 * matters only among the steps of one moment: console is listed before e2e, whose step on a fresh
 * `npm start` runs after the console's, and pagination's after both.
 */
const SECTIONS: readonly BenchSection[] = [
  {
    // In turns: `npm start`, then its floor, each alone on the machine. The peak under the ingress
    // load is the ingress section's (it needs that load); its row is printed here.
    name: 'memory',
    table: 'memory',
    async alone(bench) {
      const { profile, results, detail } = bench;
      detail.idle = await runMemoryBench(profile.memory, log);
      detail.idleFloor = await runMemoryFloorBench(profile.memory, log);
      const idle = detail.idle;
      const floor = detail.idleFloor;
      results.memory = {
        apiWorkerPeakRssMb: null,
        temporalPeakRssMb: null,
        idleRssMb: round(idle.idleRssMb, 1),
        idlePssMb: idle.idlePssMb === undefined ? null : round(idle.idlePssMb, 1),
        floorIdleRssMb: round(floor.idleRssMb, 1),
        floorIdlePssMb: floor.idlePssMb === undefined ? null : round(floor.idlePssMb, 1),
        idleRatioToFloor: round(idle.idleRssMb / floor.idleRssMb, 3),
        idleRssOverFloorMb: round(idle.idleRssMb - floor.idleRssMb, 1),
      };
    },
    rows({ results, detail }, table) {
      if (results.memory?.apiWorkerPeakRssMb != null) {
        const peak = results.memory.apiWorkerPeakRssMb;
        table.row(
          'peak RSS MB: API + workers (the API alone under ingress load, own process) / Temporal',
          `${peak.toFixed(0)} / ${results.memory.temporalPeakRssMb?.toFixed(0) ?? '?'}`,
          results.memory.floorPeakRssMb != null
            ? `${results.memory.floorPeakRssMb.toFixed(0)} its floor (bare HTTP + the same start, alone, own process); ${results.memory.sectionPeakRssMb?.toFixed(0) ?? '?'} over the ingress section`
            : '',
          results.memory.floorPeakRssMb != null ? (peak / results.memory.floorPeakRssMb).toFixed(3) : '',
          '≤600',
          peak <= 600
            ? 'ok'
            : results.memory.floorPeakRssMb != null
              ? `MISSED (floor ${results.memory.floorPeakRssMb.toFixed(0)} MB)`
              : 'MISSED',
        );
      }
      if (detail.idle) {
        const d = detail.idle;
        const f = detail.idleFloor;
        const parts = (of: MemoryResult, pick: (p: MemoryResult['processes'][number]) => number | undefined): string =>
          of.processes.map((p) => `${p.command} ${pick(p)?.toFixed(0) ?? '?'}`).join(' + ');
        table.row(
          'idle npm start, RSS MB of its process group (as ps shows)',
          d.idleRssMb.toFixed(0),
          parts(d, (p) => p.rssMb),
          f ? (d.idleRssMb / f.idleRssMb).toFixed(3) : '',
          `≤${IDLE_RSS_GOAL_MB}`,
          d.idleRssMb <= IDLE_RSS_GOAL_MB ? 'ok' : f ? `MISSED (floor ${f.idleRssMb.toFixed(0)} MB)` : 'MISSED',
        );
        table.row(
          '  the same as PSS (shared pages counted once)',
          d.idlePssMb?.toFixed(0) ?? '?',
          parts(d, (p) => p.pssMb),
        );
        if (f) {
          table.row(
            '  its floor (memory.floorIdleRssMb): npm run bench:memory-floor, RSS / PSS MB',
            `${f.idleRssMb.toFixed(0)} / ${f.idlePssMb?.toFixed(0) ?? '?'}`,
            parts(f, (p) => p.rssMb),
          );
          table.row('  above the floor (memory.idleRssOverFloorMb), RSS MB', (d.idleRssMb - f.idleRssMb).toFixed(0));
        }
      }
    },
  },
  {
    name: 'cel',
    table: 'cel',
    alone({ profile, results, detail }) {
      log('CEL evaluations');
      const cel = runCelBench(profile.cel);
      detail.cel = cel;
      results.cel = {
        perSec: round(cel.perSec, 0),
        rawPerSec: round(cel.rawPerSec, 0),
        ratioToRaw: round(cel.ratioToRaw, 3),
      };
    },
    rows({ results, detail }, table) {
      if (!results.cel) return;
      const d = detail.cel!;
      table.add(
        'CEL evaluations/s (src/cel)',
        d.perSec.toFixed(0),
        `${d.rawPerSec.toFixed(0)} raw @bufbuild/cel`,
        d.ratioToRaw,
        '≥0.8',
      );
    },
  },
  {
    // On a fresh `npm start` once the stacks are stopped.
    name: 'console',
    table: 'console',
    async afterStacks({ args, results, detail, notes }) {
      const figures = await runConsoleBench({ loads: 5, lighthouseRuns: args.quick ? 1 : 3 }, log);
      detail.console = figures;
      results.console = {
        runsListMs: figures.runsListMs,
        firstPageJsGzKb: figures.firstPageJsGzKb,
        idleRssCostMb: figures.idleRssCostMb,
        lighthousePerformance: figures.lighthouse?.performance ?? null,
        lighthouseAccessibility: figures.lighthouse?.accessibility ?? null,
      };
      notes.push(...figures.notes);
    },
    rows({ results }, table) {
      if (!results.console) return;
      const c = results.console;
      const absolute = (
        figure: string,
        value: number | null,
        unit: string,
        goal: string,
        ok: (v: number) => boolean,
      ): void => {
        table.row(
          figure,
          value === null ? 'n/a' : `${value}${unit}`,
          '',
          '',
          goal,
          value === null ? '' : ok(value) ? 'ok' : 'MISSED',
        );
      };
      absolute('console runs list drawn, median of 5 cold loads', c.runsListMs, ' ms', '≤1000 ms', (v) => v <= 1000);
      absolute('  console first page JavaScript, gzipped', c.firstPageJsGzKb, ' KB', '≤250 KB', (v) => v <= 250);
      absolute('  console idle RSS added', c.idleRssCostMb, ' MB', '≤10 MB', (v) => v <= 10);
      absolute('  Lighthouse desktop performance, runs page', c.lighthousePerformance, '', '≥95', (v) => v >= 95);
      absolute('  Lighthouse desktop accessibility, runs page', c.lighthouseAccessibility, '', '≥95', (v) => v >= 95);
    },
  },
  {
    name: 'flow',
    table: 'automations',
    async onSharedStack(bench) {
      const { args, results, notes } = bench;
      const { stack } = await bench.sharedStack('flow');
      results.flow = await runFlowBench(stack, { seconds: args.quick ? 4 : 10, chain: args.quick ? 15 : 40 }, log);
      notes.push(
        `flow: limit-1 ingress ${results.flow.limitedPerSec.toFixed(0)}/s ÷ plain ${results.flow.plainPerSec.toFixed(0)}/s = ${results.flow.ingressRatio.toFixed(2)} (goal ≥ 0.8); hand-off p50 ${results.flow.handoffP50Ms.toFixed(1)} ms ÷ start p50 ${results.flow.startP50Ms.toFixed(1)} ms = ${results.flow.handoffRatio.toFixed(2)} (goal ≤ 2)`,
      );
    },
    rows({ results }, table) {
      if (!results.flow) return;
      const f = results.flow;
      table.add(
        'limit-1 ingress accepted/s (flow.ingressRatio)',
        f.limitedPerSec.toFixed(0),
        `${f.plainPerSec.toFixed(0)} plain/s`,
        f.ingressRatio,
        '≥0.80',
      );
      table.add(
        '  its floor: bare start + lane signal-with-start /s',
        f.floor.startAndAskPerSec.toFixed(0),
        `${f.floor.startPerSec.toFixed(0)} bare start/s`,
        f.floorIngressRatio,
        '',
      );
      table.add(
        '  the same with a describe of the lane first /s',
        f.floor.describeStartAndAskPerSec.toFixed(0),
        `${f.floor.startPerSec.toFixed(0)} bare start/s`,
        f.floor.describeStartAndAskPerSec / f.floor.startPerSec,
        '',
      );
      table.add(
        '  bare start + a signal to a running lane /s',
        f.floor.startAndSignalPerSec.toFixed(0),
        `${f.floor.startPerSec.toFixed(0)} bare start/s`,
        f.floor.startAndSignalPerSec / f.floor.startPerSec,
        '',
      );
      table.add(
        '  flow.ingressRatio ÷ its floor',
        f.ingressRatio.toFixed(3),
        f.floorIngressRatio.toFixed(3),
        f.ingressRatioToFloor,
        '',
      );
      table.add(
        '  lane hand-off p50 ms',
        f.handoffP50Ms.toFixed(1),
        `${f.startP50Ms.toFixed(1)} start`,
        f.handoffRatio,
        '≤2.0',
      );
    },
  },
  {
    name: 'ingress',
    table: 'webhooks',
    async onSharedStack(bench) {
      const { profile, results, detail, notes } = bench;
      const { stack, load, automation } = await bench.sharedStack('ingress');
      const sampler = startRssSampler();
      const ingress = await runIngressBench(stack, load, automation, profile.ingress, log, bench.profiled('ingress'));
      const sectionPeakRssMb = sampler.stop();
      const temporalPeak = stack.temporalPid !== undefined ? peakRssOfPid(stack.temporalPid) : undefined;
      if (temporalPeak === undefined)
        notes.push('memory: the Temporal server process was not found in /proc; temporalPeakRssMb is null');
      detail.ingress = ingress;
      results.ingress = {
        acceptedPerSec: round(ingress.acceptedPerSec, 1),
        p50Ms: round(ingress.p50Ms),
        p99Ms: round(ingress.p99Ms),
        bareStartPerSec: round(ingress.bareStartPerSec, 1),
        ratioToBareStart: round(ingress.ratioToBareStart, 3),
        httpStartPerSec: round(ingress.httpStartPerSec, 1),
        ratioToHttpStart: round(ingress.ratioToHttpStart, 3),
      };
      results.memory = {
        idleRssMb: null,
        idlePssMb: null,
        floorIdleRssMb: null,
        floorIdlePssMb: null,
        idleRatioToFloor: null,
        idleRssOverFloorMb: null,
        ...results.memory,
        // The API's own peak, on a fresh stack once the shared sections are done (afterSharedStack).
        apiWorkerPeakRssMb: null,
        sectionPeakRssMb: round(sectionPeakRssMb, 1),
        temporalPeakRssMb: temporalPeak === undefined ? null : round(temporalPeak, 1),
      };
      if (Object.keys(ingress.otherStatuses).length > 0)
        notes.push(`ingress: other outcomes ${JSON.stringify(ingress.otherStatuses)}`);
    },
    async afterSharedStack(bench) {
      // The peak of API + workers under the ingress load against its floor's, each in a process
      // of its own with a fresh stack, alone: the API, or the product-shaped floor
      // (bench/peak-child.ts), in turns, `peakSamples` of each; each figure is its side's
      // highest (a peak). This process's stack is stopped first: the machine holds only the
      // measured one.
      const { profile, results } = bench;
      await bench.stack!.stop();
      bench.stack = undefined;
      const peaks: Record<'api' | 'floor', PeakAnswer[]> = { api: [], floor: [] };
      for (let sample = 0; sample < profile.peakSamples; sample++) {
        for (const side of sample % 2 === 0 ? (['api', 'floor'] as const) : (['floor', 'api'] as const)) {
          log(
            `memory: a process of its own for the peak of ${side === 'api' ? 'the API' : 'its floor'} alone under the ingress load`,
          );
          const peak = await peakInChild({ side, timing: profile.ingress });
          peaks[side].push(peak);
          log(`memory: peak RSS ${peak.peakRssMb.toFixed(0)} MB at ${peak.perSec.toFixed(0)}/s`);
        }
      }
      const highest = (side: 'api' | 'floor'): number => Math.max(...peaks[side].map((peak) => peak.peakRssMb));
      results.memory = {
        ...results.memory!,
        apiWorkerPeakRssMb: round(highest('api'), 1),
        floorPeakRssMb: round(highest('floor'), 1),
        peakOverFloorMb: round(highest('api') - highest('floor'), 1),
        peakSamplesMb: {
          api: peaks.api.map((peak) => round(peak.peakRssMb, 1)),
          floor: peaks.floor.map((peak) => round(peak.peakRssMb, 1)),
        },
      };
    },
    rows({ results, detail, profile }, table) {
      if (!results.ingress) return;
      const d = detail.ingress!;
      const ratio = d.ratioToBareStart;
      // Missed: the product-shaped floor's own ratio to the bare start says how much of the gap any receiver of this shape pays.
      table.row(
        `ingress accepted/s (c=${profile.ingress.concurrency}, ingress.ratioToBareStart)`,
        results.ingress.acceptedPerSec.toFixed(0),
        `${d.bareStartPerSec.toFixed(0)} bare start/s`,
        ratio.toFixed(3),
        '≥0.90',
        verdict(ratio, '≥0.90') === 'ok' ? 'ok' : `MISSED (floor ${d.httpStartRatioToBareStart.toFixed(3)})`,
      );
      table.add(
        '  the same vs bare HTTP + the same start (ingress.ratioToHttpStart)',
        results.ingress.acceptedPerSec.toFixed(0),
        `${d.httpStartPerSec.toFixed(0)} bare HTTP + start/s`,
        d.ratioToHttpStart,
        '',
      );
      table.add(
        'ingress latency p50 / p99 ms',
        `${d.p50Ms.toFixed(1)} / ${d.p99Ms.toFixed(1)}`,
        `${d.bareStartP50Ms.toFixed(1)} / ${d.bareStartP99Ms.toFixed(1)} bare start`,
        undefined,
        '',
      );
      table.add(
        '  CPU of this process per request µs',
        d.apiCpuUsPerRequest.toFixed(0),
        `${d.bareCpuUsPerStart.toFixed(0)} per bare start / ${d.httpStartCpuUsPerRequest.toFixed(0)} bare HTTP + start`,
        undefined,
        '',
      );
    },
  },
  {
    name: 'reject',
    table: 'webhooks',
    async onSharedStack(bench) {
      const { profile, results, detail, notes } = bench;
      // On the ingress section's stack.
      const { stack, load, automation } = await bench.sharedStack('ingress');
      const reject = await runRejectBench(stack, load, automation, profile.reject, log, bench.profiled('reject'));
      detail.reject = reject;
      results.reject = {
        perSec: round(reject.perSec, 1),
        bareKoaPerSec: round(reject.bareKoaPerSec, 1),
        ratioToBareKoa: round(reject.ratioToBareKoa, 3),
        hmacFloorPerSec: round(reject.hmacFloorPerSec, 1),
        ratioToHmacFloor: round(reject.ratioToHmacFloor, 3),
        roundRatiosToHmacFloor: reject.roundRatiosToHmacFloor.map((ratio) => round(ratio, 3)),
        cpuRatioToHmacFloor: round(reject.hmacFloorCpuUsPerRequest / reject.cpuUsPerRequest, 3),
      };
      if (Object.keys(reject.otherStatuses).length > 0)
        notes.push(`reject: other outcomes ${JSON.stringify(reject.otherStatuses)}`);
    },
    rows({ results, detail }, table) {
      if (!results.reject) return;
      const d = detail.reject!;
      table.add(
        'bad signature rejected/s vs its floor',
        d.perSec.toFixed(0),
        `${d.hmacFloorPerSec.toFixed(0)} bare Koa + body + HMAC → the same 401 /s (median of ${d.roundRatiosToHmacFloor.length} rounds: ${d.roundRatiosToHmacFloor.map((r) => r.toFixed(2)).join(', ')})`,
        d.ratioToHmacFloor,
        '≥0.85',
      );
      table.add(
        '  the same vs bare Koa answering 200',
        d.perSec.toFixed(0),
        `${d.bareKoaPerSec.toFixed(0)} bare Koa/s`,
        d.ratioToBareKoa,
        '',
      );
      table.add(
        '  CPU of this process per request µs',
        d.cpuUsPerRequest.toFixed(0),
        `${d.hmacFloorCpuUsPerRequest.toFixed(0)} floor / ${d.bareKoaCpuUsPerRequest.toFixed(0)} bare Koa (floor ÷ API)`,
        d.hmacFloorCpuUsPerRequest / d.cpuUsPerRequest,
        '',
      );
    },
  },
  {
    name: 'e2e',
    table: 'webhooks',
    async onSharedStack(bench) {
      const { profile, results, detail } = bench;
      const { stack, automation } = await bench.sharedStack('e2e');
      const e2e = await runE2eBench(stack, automation, profile.e2e, log);
      detail.e2e = e2e;
      results.e2e = {
        p50Ms: round(e2e.p50Ms),
        bareP50Ms: round(e2e.bareP50Ms),
        ratioToBare: round(e2e.ratioToBare, 3),
        npmStartP50Ms: null,
        emptyWorkflowP50Ms: round(e2e.emptyP50Ms),
        ratioToEmptyWorkflow: round(e2e.ratioToEmptyWorkflow, 3),
        shapeFloorRatioToEmptyWorkflow: round(e2e.shapeP50Ms / e2e.emptyP50Ms, 3),
        shapeFloorP50Ms: round(e2e.shapeP50Ms),
        ratioToShapeFloor: round(e2e.ratioToShapeFloor, 3),
        shapeFloorWithStoreP50Ms: Number.isNaN(e2e.shapeWithStoreP50Ms) ? null : round(e2e.shapeWithStoreP50Ms),
        ratioToShapeFloorWithStore: Number.isNaN(e2e.shapeWithStoreP50Ms)
          ? null
          : round(e2e.ratioToShapeFloorWithStore, 3),
        productShapeFloorP50Ms: Number.isNaN(e2e.productShapeP50Ms) ? null : round(e2e.productShapeP50Ms),
        ratioToProductShapeFloor: Number.isNaN(e2e.productShapeP50Ms) ? null : round(e2e.ratioToProductShapeFloor, 3),
        productShapeFloorRatioToShapeFloor: Number.isNaN(e2e.productShapeP50Ms)
          ? null
          : round(e2e.productShapeP50Ms / e2e.shapeP50Ms, 3),
        cpuMsPerRun: Object.fromEntries(
          Object.entries(e2e.cpuMsPerRun).map(([kind, c]) => [
            kind,
            { process: round(c.process), mainThread: round(c.mainThread), temporal: round(c.temporal) },
          ]),
        ),
      };
      if (profile.e2eDiagnosticRuns > 0 && !automation.fallback) {
        log('end to end, diagnostic: the same with three setVariables steps (3 activities, like the baseline)');
        const plain = await createBenchAutomation(stack.e2eApi.url, stack.adminToken, { withOwnership: false });
        detail.e2eSetVariables = await runE2eBench(stack, plain, { warmup: 3, runs: profile.e2eDiagnosticRuns }, log);
        detail.e2eFloor = await runFloorBench(
          stack,
          automation.body,
          { warmup: 3, runs: profile.e2eDiagnosticRuns },
          log,
        );
      }
    },
    async afterStacks({ profile, results, detail }) {
      // The same p50, absolute, on a fresh `npm start` (bench/start-e2e.ts).
      if (!results.e2e) return;
      detail.e2eOnStart = await runStartE2eBench(profile.e2eOnStartRuns, log);
      results.e2e.npmStartP50Ms = round(detail.e2eOnStart.p50Ms);
    },
    rows({ results, detail }, table) {
      if (!results.e2e) return;
      const d = detail.e2e!;
      table.add(
        `e2e POST→result p50 ms (${detail.automation?.shape ?? ''})`,
        d.p50Ms.toFixed(1),
        `${d.emptyP50Ms.toFixed(1)} empty workflow`,
        d.ratioToEmptyWorkflow,
        '',
      );
      // Missed: the product-shaped floor's own ratio to the shape's says how much of the gap any run recorded as the product's pays.
      const productFloor = d.productShapeP50Ms / d.shapeP50Ms;
      table.row(
        "  e2e p50 ms vs its shape's floor (bare POST + 4 no-op local activities)",
        d.p50Ms.toFixed(1),
        `${d.shapeP50Ms.toFixed(1)} floor`,
        d.ratioToShapeFloor.toFixed(3),
        '≤1.15',
        verdict(d.ratioToShapeFloor, '≤1.15') === 'ok' || !Number.isFinite(productFloor)
          ? verdict(d.ratioToShapeFloor, '≤1.15')
          : `MISSED (floor ${productFloor.toFixed(3)})`,
      );
      const cpuOf = (kind: string): string => {
        const c = d.cpuMsPerRun[kind];
        return c ? `${c.process.toFixed(1)} (${c.mainThread.toFixed(1)}) / ${c.temporal.toFixed(1)}` : '?';
      };
      table.row(
        '  CPU ms per run, this process (its main thread) / Temporal',
        cpuOf('automation'),
        `${cpuOf('shape')} floor${d.cpuMsPerRun.shapeWithStore ? `; ${cpuOf('shapeWithStore')} with store` : ''}${d.cpuMsPerRun.product ? `; ${cpuOf('product')} product-shaped` : ''}; ${cpuOf('empty')} empty`,
      );
      if (!Number.isNaN(d.shapeWithStoreP50Ms))
        table.add(
          '  e2e p50 ms vs the floor with its store write (+ the ownership statement)',
          d.p50Ms.toFixed(1),
          `${d.shapeWithStoreP50Ms.toFixed(1)} floor with store`,
          d.ratioToShapeFloorWithStore,
          '',
        );
      if (!Number.isNaN(d.productShapeP50Ms))
        table.add(
          '  e2e p50 ms vs the product-shaped floor (+ start options, patch marker, summaries)',
          d.p50Ms.toFixed(1),
          `${d.productShapeP50Ms.toFixed(1)} product-shaped floor (${(d.productShapeP50Ms / d.shapeP50Ms).toFixed(3)} × the shape's)`,
          d.ratioToProductShapeFloor,
          '',
        );
      table.add(
        '  e2e p50 ms vs bare 3 activities',
        d.p50Ms.toFixed(1),
        `${d.bareP50Ms.toFixed(1)} bare 3 activities`,
        d.ratioToBare,
        '≤1.0',
      );
      table.add(
        '  e2e p90 ms',
        d.p90Ms.toFixed(1),
        `${d.bareP90Ms.toFixed(1)} bare / ${d.emptyP90Ms.toFixed(1)} empty`,
        undefined,
        '',
      );
      const plain = detail.e2eSetVariables;
      const onStart = detail.e2eOnStart;
      if (onStart)
        table.row(
          'e2e p50 ms on npm start, absolute (information)',
          onStart.p50Ms.toFixed(1),
          `p90 ${onStart.p90Ms.toFixed(1)}`,
        );
      if (plain)
        table.add(
          '  e2e p50 ms, setVariables ×3 (diagnostic)',
          plain.p50Ms.toFixed(1),
          `${plain.emptyP50Ms.toFixed(1)} empty workflow`,
          plain.ratioToEmptyWorkflow,
          '',
        );
      const floor = detail.e2eFloor;
      if (floor) {
        table.add(
          '  3 no-op local activities, start→result p50 ms (diagnostic floor)',
          floor.localThreeP50Ms.toFixed(1),
          `${floor.emptyP50Ms.toFixed(1)} empty workflow`,
          floor.ratioToEmptyWorkflow,
          '',
        );
        table.add(
          "  bare POST + 4 no-op local activities, p50 ms (the shape's floor)",
          floor.shapeP50Ms.toFixed(1),
          `${floor.emptyP50Ms.toFixed(1)} empty workflow`,
          floor.shapeRatioToEmptyWorkflow,
          '',
        );
        table.add(
          '  bare POST + 3 no-op local activities, p50 ms (without the load)',
          floor.shapeThreeP50Ms.toFixed(1),
          `${floor.emptyP50Ms.toFixed(1)} empty workflow`,
          floor.shapeThreeRatioToEmptyWorkflow,
          '',
        );
      }
    },
  },
  {
    name: 'breaker',
    table: 'automations',
    async onSharedStack(bench) {
      const { profile, results, detail } = bench;
      const { stack } = await bench.sharedStack('breaker');
      const breaker = await runBreakerBench(stack, profile.breaker, log);
      detail.breaker = breaker;
      results.breaker = {
        ingressRatio: round(breaker.ingressRatio, 3),
        breakerPerSec: round(breaker.breakerPerSec, 1),
        plainPerSec: round(breaker.plainPerSec, 1),
      };
    },
    rows({ detail }, table) {
      if (!detail.breaker) return;
      const b = detail.breaker;
      table.add(
        'closed circuit breaker ingress accepted/s (breaker.ingressRatio)',
        b.breakerPerSec.toFixed(0),
        `${b.plainPerSec.toFixed(0)} plain/s`,
        b.ingressRatio,
        '≥0.90',
      );
    },
  },
  {
    name: 'grants',
    table: 'automations',
    async onSharedStack(bench) {
      const { profile, results, detail } = bench;
      const { stack } = await bench.sharedStack('grants');
      const g = await runGrantsBench(stack, profile.grants, log);
      detail.grants = g;
      results.grants = {
        ratioToFloor: round(g.ratioToFloor, 3),
        grantedP50Ms: round(g.grantedP50Ms, 1),
        floorP50Ms: round(g.floorP50Ms, 1),
        expiryLatenessP99Ms: round(g.expiry100P99Ms, 0),
        expiryRatioToFloor: round(g.expiryRatioToFloor, 3),
        expiryGrants: g.expiryGrants,
        expiryP99Ms: round(g.expiryManyP99Ms, 0),
        floorP99Ms: round(g.floorManyP99Ms, 0),
        ingressRatioDuringExpiry: g.ingressRatioDuringExpiry,
      };
    },
    rows({ detail }, table) {
      if (!detail.grants) return;
      const g = detail.grants;
      table.add(
        'grant to GRANTED p50 ms, provisioned in its workflow (grants.ratioToFloor)',
        g.grantedP50Ms.toFixed(1),
        `${g.floorP50Ms.toFixed(1)} ms a one-row workflow`,
        g.ratioToFloor,
        '≤1.30',
      );
      table.row(
        '  100 grants of one expiresAt, p99 ms late (grants.expiryLatenessP99Ms; goal ≤5000)',
        g.expiry100P99Ms.toFixed(0),
        '',
      );
      table.add(
        `  ${g.expiryGrants} grants of one expiresAt, p99 ms late (grants.expiryRatioToFloor)`,
        g.expiryManyP99Ms.toFixed(0),
        `${g.floorManyP99Ms.toFixed(0)} ms as many bare timers`,
        g.expiryRatioToFloor,
        '≤1.50',
      );
    },
  },
  {
    name: 'schedule',
    table: 'automations',
    async onSharedStack(bench) {
      const { profile, results, detail } = bench;
      const { stack } = await bench.sharedStack('schedule');
      const s = await runScheduleBench(stack, profile.schedule, log);
      detail.schedule = s;
      results.schedule = {
        latenessP50Ms: round(s.latenessP50Ms, 0),
        floorP50Ms: round(s.floorP50Ms, 0),
        ratioToFloor: round(s.ratioToFloor, 3),
        latenessP90Ms: round(s.latenessP90Ms, 0),
        floorP90Ms: round(s.floorP90Ms, 0),
        actions: s.actions,
      };
    },
    rows({ detail }, table) {
      if (!detail.schedule) return;
      const s = detail.schedule;
      table.add(
        'schedule automation, scheduledAt → first step p50 ms (schedule.ratioToFloor)',
        s.latenessP50Ms.toFixed(0),
        `${s.floorP50Ms.toFixed(0)} ms a bare Schedule → its activity`,
        s.ratioToFloor,
        '',
      );
      table.row(
        `  schedule.latenessP50Ms (goal ≤1500), ${s.actions} actions`,
        s.latenessP50Ms.toFixed(0),
        `p90 ${s.latenessP90Ms.toFixed(0)}; floor p90 ${s.floorP90Ms.toFixed(0)}`,
        '',
        '≤1500 ms',
        s.latenessP50Ms <= 1500 ? 'ok' : `MISSED (floor ${s.floorP50Ms.toFixed(0)} ms)`,
      );
      table.row(
        '  of which: scheduledAt → the action started / the action → the first step, p50 ms',
        `${s.scheduleToActionP50Ms.toFixed(0)} / ${s.actionToStepP50Ms.toFixed(0)}`,
        `first step: ${s.firstStepFrom}`,
      );
    },
  },
  {
    name: 'events',
    table: 'automations',
    async onSharedStack(bench) {
      const { profile, results, detail, notes } = bench;
      const { stack } = await bench.sharedStack('events');
      const targets: Array<{ name: 'pglite' | 'postgres'; databaseUrl: string | undefined }> = [
        { name: 'pglite', databaseUrl: undefined },
      ];
      const pgUrl = process.env.DATABASE_URL?.trim();
      if (pgUrl) targets.push({ name: 'postgres', databaseUrl: pgUrl });
      else notes.push('events on PostgreSQL skipped: DATABASE_URL is not set (events.dispatchP50MsPostgres is null)');
      const measured: EventsResult[] = [];
      for (const target of targets) measured.push(await runEventsBench(stack, target, profile.events, log));
      detail.events = measured;
      const pglite = measured.find((e) => e.store === 'pglite')!;
      const postgres = measured.find((e) => e.store === 'postgres');
      results.events = {
        dispatchP50Ms: round(pglite.dispatchP50Ms, 1),
        floorP50Ms: round(pglite.floorP50Ms, 1),
        ratioToFloor: round(pglite.ratioToFloor, 3),
        dispatchP50MsPostgres: postgres ? round(postgres.dispatchP50Ms, 1) : null,
        floorP50MsPostgres: postgres ? round(postgres.floorP50Ms, 1) : null,
        ratioToFloorPostgres: postgres ? round(postgres.ratioToFloor, 3) : null,
        samples: pglite.samples,
      };
    },
    rows({ detail }, table) {
      for (const e of detail.events ?? []) {
        const key = e.store === 'postgres' ? 'dispatchP50MsPostgres' : 'dispatchP50Ms';
        table.add(
          `event automation, commit → run started p50 ms, ${e.store} (events.${key})`,
          e.dispatchP50Ms.toFixed(1),
          `${e.floorP50Ms.toFixed(1)} ms commit → a bare start`,
          e.ratioToFloor,
          '',
        );
        table.row(
          `  events.${key} (goal ≤250), ${e.samples} users`,
          e.dispatchP50Ms.toFixed(1),
          `p90 ${e.dispatchP90Ms.toFixed(1)}; floor p90 ${e.floorP90Ms.toFixed(1)}; marked dispatched p50 ${e.markedP50Ms.toFixed(1)}`,
          '',
          '≤250 ms',
          e.dispatchP50Ms <= 250 ? 'ok' : `MISSED (floor ${e.floorP50Ms.toFixed(1)} ms)`,
        );
      }
    },
  },
  {
    name: 'tracing',
    table: 'webhooks',
    // Alone, after every stack stopped: it runs three npm starts of its own, and a Jaeger.
    async afterStacks({ profile, results, detail }) {
      const load = await LoadGenerator.start();
      try {
        const t = await runTracingBench(load, profile.tracing, log);
        detail.tracing = t;
        results.tracing = {
          ingressRatio: round(t.ingressRatio, 3),
          offIngressRatio: round(t.offIngressRatio, 3),
          onPerSec: round(t.medianPerSec.on, 1),
          unsetPerSec: round(t.medianPerSec.unset, 1),
          noSdkPerSec: round(t.medianPerSec.noSdk, 1),
          rounds: t.perSec.on.length,
          idleRssMbOn: round(t.idleOn.idleRssMb, 1),
          idleRssMbOff: round(t.idleOff.idleRssMb, 1),
        };
      } finally {
        await load.close();
      }
    },
    rows({ detail }, table) {
      if (!detail.tracing) return;
      const t = detail.tracing;
      table.add(
        'ingress/s, tracing exporting to Jaeger vs unset, npm start (tracing.ingressRatio)',
        t.medianPerSec.on.toFixed(0),
        `${t.medianPerSec.unset.toFixed(0)} unset/s; ${t.exportedTraces} traces in Jaeger`,
        t.ingressRatio,
        '≥0.90',
      );
      table.add(
        '  ingress/s, unset vs a bundle without the interceptors (tracing.offIngressRatio)',
        t.medianPerSec.unset.toFixed(0),
        `${t.medianPerSec.noSdk.toFixed(0)} without/s, median of ${t.perSec.unset.length}`,
        t.offIngressRatio,
        '≥0.95',
      );
      table.row(
        '  idle npm start with tracing on / off, RSS MB (information)',
        `${t.idleOn.idleRssMb.toFixed(0)} / ${t.idleOff.idleRssMb.toFixed(0)}`,
        `on − off: ${(t.idleOn.idleRssMb - t.idleOff.idleRssMb).toFixed(0)} MB`,
      );
    },
  },
  {
    name: 'bulk',
    table: 'automations',
    async onOwnStack(bench) {
      // On a stack of its own in either mode, whose dev server keeps its database in a file as
      // `npm start` does: the section leaves its parked runs and every run its ingress windows
      // started, tens of thousands in a full run (bench/bulk.ts), more than an in-memory
      // database holds.
      const { profile, results, detail } = bench;
      log('a stack of its own for the bulk section (the dev server on a SQLite file)');
      await bench.cleanUp();
      bench.temporalDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-temporal-'));
      const stack = await startStack({
        log,
        databaseUrl: undefined,
        embeddedStore: 'dataDir',
        temporalDataDir: bench.temporalDataDir,
        baselineWorker: false,
      });
      bench.stack = stack;
      // BENCH_BULK_RUNS: fewer (or more) parked runs than the profile's, for a shorter look at a cancel's cost.
      const runs = Number(process.env.BENCH_BULK_RUNS ?? profile.bulk.runs);
      const bulk = await runBulkBench(stack, { ...profile.bulk, runs }, log, bench.profiled('bulk'));
      detail.bulk = bulk;
      results.bulk = {
        ingressRatioDuringCancel: round(bulk.ingressRatioDuringCancel, 3),
        duringCancelPerSec: round(bulk.duringCancelPerSec, 1),
        duringCancelWindows: bulk.duringCancelWindows,
        plainPerSec: round(bulk.plainPerSec, 1),
        runs: bulk.runs,
        cancelSeconds: round(bulk.cancelSeconds, 1),
        cancelRunsPerSec: round(bulk.cancelRunsPerSec, 1),
      };
    },
    rows({ detail }, table) {
      if (!detail.bulk) return;
      const b = detail.bulk;
      table.add(
        `ingress accepted/s during a bulk cancel of ${b.runs.toLocaleString('en')} runs (bulk.ingressRatioDuringCancel)`,
        `${b.duringCancelPerSec.toFixed(0)} in ${b.duringCancelWindows} windows`,
        `${b.plainPerSec.toFixed(0)} plain/s (${b.plainBeforePerSec.toFixed(0)} before, ${b.plainAfterPerSec.toFixed(0)} after)`,
        b.ingressRatioDuringCancel,
        '≥0.80',
      );
      table.add(
        '  the bulk cancel: seconds / runs per second',
        `${b.cancelSeconds.toFixed(1)} s / ${b.cancelRunsPerSec.toFixed(1)} runs/s`,
        `parked in ${b.parkSeconds.toFixed(0)} s`,
        undefined,
        '',
      );
      table.add(
        '  CPU per canceled run beyond ingress, ms: this process / Temporal',
        `${b.perRunCpuMs.bench.toFixed(1)} / ${b.perRunCpuMs.temporal?.toFixed(1) ?? '?'}`,
        `per webhook: ${b.cpu.before.perAcceptedMs.bench.toFixed(1)} / ${b.cpu.before.perAcceptedMs.temporal?.toFixed(1) ?? '?'}`,
        undefined,
        '',
      );
    },
  },
  {
    // Pagination and search, on an in-memory PGlite of its own (the stack's store is the file-backed
    // one of npm start) and on PostgreSQL when DATABASE_URL is set.
    name: 'pagination',
    table: 'store',
    async afterStacks({ profile, results, detail, notes }) {
      const targets: Array<{ name: 'pglite' | 'postgres'; databaseUrl: string | undefined }> = [
        { name: 'pglite', databaseUrl: undefined },
      ];
      const pgUrl = process.env.DATABASE_URL?.trim();
      if (pgUrl) targets.push({ name: 'postgres', databaseUrl: pgUrl });
      else notes.push('pagination on PostgreSQL skipped: DATABASE_URL is not set (pagination.postgres is null)');
      for (const target of targets) {
        const result = await runPaginationBench(target, profile.pagination, log);
        detail[target.name] = result;
        // Each store's figure; the top-level one is PostgreSQL's when measured, PGlite's when it is the only one.
        const figure: SearchFigure = {
          rows: result.rows,
          firstPageMs: round(result.firstMs, 3),
          searchMs: round(result.searchMs, 3),
          ratioToFirstPage: round(result.ratioSearchToFirst, 3),
        };
        const perStore = {
          pglite: results.search?.pglite ?? null,
          postgres: results.search?.postgres ?? null,
          [target.name]: figure,
        };
        if (target.name === 'postgres' || !results.search) {
          results.search = {
            firstPageMs: figure.firstPageMs,
            searchMs: figure.searchMs,
            ratioToFirstPage: figure.ratioToFirstPage,
            store: target.name,
            ...perStore,
          };
        } else {
          results.search = { ...results.search, ...perStore };
        }
        if (target.name === 'postgres' || results.pagination.ratioDeepToFirst === null)
          results.pagination.ratioDeepToFirst = round(result.ratioDeepToFirst, 3);
        results.pagination[target.name] = {
          firstMs: round(result.firstMs, 3),
          deepMs: round(result.deepMs, 3),
          ratioDeepToFirst: round(result.ratioDeepToFirst, 3),
        };
        if (result.tokenFrom === 'walked')
          notes.push(`pagination on ${target.name}: the deep token was reached by walking pages`);
      }
    },
    rows({ detail }, table) {
      for (const name of ['pglite', 'postgres'] as const) {
        const d = detail[name];
        if (!d) continue;
        table.add(
          `page at row ${(d.rows / 2).toLocaleString('en')} of ${d.rows.toLocaleString('en')}, ${name} (ms)`,
          d.deepMs.toFixed(2),
          `${d.firstMs.toFixed(2)} first page`,
          d.ratioDeepToFirst,
          '≤1.5',
        );
        table.add(
          `search by query at ${d.rows.toLocaleString('en')} rows, ${name} (ms)`,
          d.searchMs.toFixed(2),
          `${d.firstMs.toFixed(2)} first page`,
          d.ratioSearchToFirst,
          '≤5',
        );
      }
    },
  },
];

function parseArgs(argv: string[]): Args {
  const names = SECTIONS.map((section) => section.name);
  let quick = false;
  let cpuProfDir: string | undefined;
  let only = new Set(names);
  for (const arg of argv) {
    if (arg === '--quick') quick = true;
    else if (arg.startsWith('--cpu-prof=')) cpuProfDir = path.resolve(arg.slice('--cpu-prof='.length));
    else if (arg.startsWith('--only=')) {
      const chosen = arg.slice('--only='.length).split(',').filter(Boolean);
      for (const name of chosen) {
        if (!names.includes(name)) throw new Error(`unknown section "${name}": use ${names.join(', ')}`);
      }
      only = new Set(chosen);
    } else throw new Error(`unknown argument "${arg}": use --quick, --cpu-prof=<dir> and/or --only=${names.join(',')}`);
  }
  return { quick, only, cpuProfDir };
}

/** Runs the chosen sections' steps, moment by moment (BenchSection), and stops the stacks they started. */
async function measure(bench: Bench): Promise<void> {
  const chosen = SECTIONS.filter((section) => bench.args.only.has(section.name));
  for (const section of chosen) await section.alone?.(bench);
  const onShared = chosen.some((section) => section.onSharedStack);
  if (onShared || chosen.some((section) => section.onOwnStack)) installRuntime();
  if (onShared) {
    await bench.startSharedStack();
    for (const section of chosen) await section.onSharedStack?.(bench);
    for (const section of chosen) await section.afterSharedStack?.(bench);
  }
  for (const section of chosen) await section.onOwnStack?.(bench);
  if (bench.stack) {
    log('stopping Temporal, the workers, the API and their store');
    await bench.cleanUp();
  }
  for (const section of chosen) await section.afterStacks?.(bench);
}

/** A goal's verdict on a ratio: 'ok', 'MISSED', or '' without a ratio. */
function verdict(ratio: number | undefined, goal: string): string {
  if (ratio === undefined || !Number.isFinite(ratio)) return '';
  const [op, value] = [goal.slice(0, 1), Number(goal.slice(1))];
  return (op === '≥' ? ratio >= value : ratio <= value) ? 'ok' : 'MISSED';
}

/** The printed table: figure, measured, baseline, ratio, goal, verdict. */
class Table {
  private readonly rows: string[][] = [['figure', 'measured', 'baseline', 'ratio', 'goal', '']];

  /** A row whose verdict is its ratio's against its goal ('' = no goal). */
  add(figure: string, measured: string, baseline: string, ratio: number | undefined, goal: string): void {
    this.row(
      figure,
      measured,
      baseline,
      ratio === undefined ? '' : ratio.toFixed(3),
      goal,
      goal ? verdict(ratio, goal) : '',
    );
  }

  /** A row as given, the columns left out empty. */
  row(figure: string, measured = '', baseline = '', ratio = '', goal = '', verdict = ''): void {
    this.rows.push([figure, measured, baseline, ratio, goal, verdict]);
  }

  print(heading: string): void {
    const rows = this.rows;
    const widths = rows[0]!.map((_, col) => Math.max(...rows.map((row) => row[col]!.length)));
    console.log(heading);
    for (const [index, row] of rows.entries()) {
      console.log(
        row
          .map((cell, col) => cell.padEnd(widths[col]!))
          .join('  ')
          .trimEnd(),
      );
      if (index === 0) console.log(widths.map((w) => '-'.repeat(w)).join('  '));
    }
  }
}

/** Every section's rows, part by part (TABLE_PARTS). */
function printTable(bench: Bench): void {
  const table = new Table();
  for (const part of TABLE_PARTS) {
    for (const section of SECTIONS) if (section.table === part) section.rows(bench, table);
  }
  const cpus = os.cpus();
  table.print(
    `\nBenchmark (${bench.args.quick ? 'quick' : 'full'}), ${new Date().toISOString()}, Node ${process.version}, ${cpus.length} × ${cpus[0]?.model ?? 'unknown CPU'}, load average ${os.loadavg()[0]!.toFixed(1)}`,
  );
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const bench = new Bench(args, args.quick ? QUICK : FULL);
  const began = performance.now();
  let interrupted = false;
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.on(signal, () => {
      if (interrupted) return;
      interrupted = true;
      log(`${signal}: stopping`);
      void bench.cleanUp().finally(() => process.exit(130));
    });
  }

  log(`${args.quick ? 'quick' : 'full'} run: ${[...args.only].join(', ')}`);
  // glibc reads it at the process's start: `npm run bench` sets it as `npm start` does for the
  // service, so that the peak of this process describes the service a user runs.
  if (process.env.MALLOC_ARENA_MAX !== '2') {
    bench.notes.push(
      'memory: this process ran without MALLOC_ARENA_MAX=2 (npm start sets it; npm run bench does): apiWorkerPeakRssMb counts more malloc arenas than the service has',
    );
  }
  try {
    await measure(bench);
  } finally {
    await bench.cleanUp();
    closeHttpAgent();
  }

  const file = path.resolve(__dirname, '..', 'bench-results.json');
  fs.writeFileSync(file, `${JSON.stringify(bench.results, null, 2)}\n`);
  printTable(bench);
  for (const note of bench.notes) console.log(`note: ${note}`);
  console.log(
    `\nwrote ${path.relative(process.cwd(), file) || file} in ${((performance.now() - began) / 1000).toFixed(0)} s`,
  );
}

runToExit(main, log);
