/**
 * The automation worker: polls one task queue, runs the automation workflow and its activities.
 * In development the workflow code is bundled from source (`workflowsPath`); in production pass a
 * bundle prebuilt with `bundleWorkflowCode(automationBundleOptions())`. The activities come from
 * the composition root (`activities`), so this adapter imports neither them nor the workflow code.
 */
import { Client } from '@temporalio/client';
import {
  bundleWorkflowCode,
  type BundleOptions,
  type NativeConnection,
  type Worker,
  type WorkflowBundleOption,
} from '@temporalio/worker';
import { GuardedWorker } from './activation-guard';
import type { PayloadCodec } from '@temporalio/common';
import type { Db } from '../store/db';
import type { AutomationActivities } from '../contract/activities';
import type { RunEngine } from '../domain/engine';
import { describeFailures, loadCommittedHistories, replayHistories } from './history-replay';
import { encryptedDataConverter } from './codec';
import { createTemporalEngine } from './engine';
import {
  tracingClientInterceptors,
  tracingWorkerOptions,
  WORKFLOW_TRACING_INTERCEPTORS,
  type WorkerTracing,
} from './tracing';

export interface AutomationWorkerOptions {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  db: Db;
  /**
   * Builds the activities with the run engine the worker makes on its own connection and codec:
   * `createActivities` of activities/ with the store and the outbound settings, handed in by
   * whoever composes the worker.
   */
  activities: (engine: RunEngine) => AutomationActivities;
  /** Encrypts and decrypts payloads around the workflow sandbox (the bundle never sees it). */
  codec: PayloadCodec;
  /** Prebuilt workflow bundle; when absent the workflows are bundled from source at start. */
  bundle?: WorkflowBundleOption;
  maxConcurrentActivityTaskExecutions?: number;
  maxConcurrentWorkflowTaskExecutions?: number;
  /** Runs kept in the sticky cache (WORKER_MAX_CACHED_WORKFLOWS); default DEFAULT_MAX_CACHED_WORKFLOWS. */
  maxCachedWorkflows?: number;
  /** Refuse to start unless the workflow code replays every committed history (WORKER_VERIFY_HISTORIES). */
  verifyHistories?: boolean;
  /** Where the workflow spans go while tracing is on (src/tracing/sdk.ts); absent: dropped. */
  tracing?: WorkerTracing;
}

/**
 * Sticky-cache size. The SDK's default grows with the heap limit, and every cached run keeps its
 * state in the workflow isolate, so memory would grow with the heap rather than with the work
 * (docs/performance.md#constants). A run evicted from the cache is replayed from its history on its next task.
 */
export const DEFAULT_MAX_CACHED_WORKFLOWS = 200;

/** Path of the workflow module the bundler starts from. */
export function automationWorkflowsPath(): string {
  return require.resolve('../../workflows');
}

/**
 * Modules the workflow isolate evaluates once and shares between runs (the SDK's `preloadModules`,
 * frozen after loading) instead of once per run: zod and the step registry (src/steps, whose
 * schemas are built with zod). Evaluated per run, they would cost heap and CPU at every run's start
 * (docs/performance.md#constants has the figures). Neither keeps per-run state: a module listed here must never
 * hold a mutable module-level value (every run would share it) nor call workflow APIs at load time.
 */
export const AUTOMATION_PRELOAD_MODULES: readonly string[] = ['zod', require.resolve('../steps')];

/**
 * The bundle's inline source map (the worker requires one) maps lines only and carries no copy of
 * the sources, so it is less than half the size. The worker parses it in both threads and keeps it
 * for the bundle's lifetime, so this is resident memory; stack traces still name each file and line.
 */
const WORKFLOW_SOURCE_MAP = 'inline-nosources-cheap-module-source-map';

/** Options for `bundleWorkflowCode` that make the automation workflow bundle, wherever it is built. */
export function automationBundleOptions(): Required<
  Pick<BundleOptions, 'workflowsPath' | 'preloadModules' | 'webpackConfigHook' | 'workflowInterceptorModules'>
> {
  return {
    workflowsPath: automationWorkflowsPath(),
    preloadModules: [...AUTOMATION_PRELOAD_MODULES],
    // Temporal's OpenTelemetry workflow interceptors, in every bundle (src/temporal/tracing.ts).
    workflowInterceptorModules: [WORKFLOW_TRACING_INTERCEPTORS],
    webpackConfigHook: (config) => ({ ...config, devtool: WORKFLOW_SOURCE_MAP }),
  };
}

/** Creates (does not run) the worker; call `worker.run()` and `worker.shutdown()`. */
export async function createAutomationWorker(opts: AutomationWorkerOptions): Promise<Worker> {
  if (opts.verifyHistories) {
    const bundle = opts.bundle ?? (await bundleWorkflowCode(automationBundleOptions()));
    await verifyCommittedHistories(bundle);
    opts = { ...opts, bundle };
  }
  // The activities reach Temporal (lanes, bulk actions) with the worker's connection and payload codec.
  const client = new Client({
    connection: opts.connection,
    namespace: opts.namespace,
    dataConverter: encryptedDataConverter(opts.codec),
    interceptors: tracingClientInterceptors(),
  });
  const engine = createTemporalEngine({ client, taskQueue: opts.taskQueue, db: opts.db });
  // Deadlock detection from the main thread instead of a vm watchdog per call (src/temporal/activation-guard.ts).
  return GuardedWorker.create({
    connection: opts.connection,
    namespace: opts.namespace,
    taskQueue: opts.taskQueue,
    activities: opts.activities(engine),
    dataConverter: encryptedDataConverter(opts.codec),
    ...(opts.bundle
      ? { workflowBundle: opts.bundle }
      : {
          workflowsPath: automationWorkflowsPath(),
          bundlerOptions: {
            preloadModules: [...AUTOMATION_PRELOAD_MODULES],
            webpackConfigHook: automationBundleOptions().webpackConfigHook,
          },
          interceptors: { workflowModules: [WORKFLOW_TRACING_INTERCEPTORS] },
        }),
    ...tracingWorkerOptions(opts.tracing),
    maxCachedWorkflows: opts.maxCachedWorkflows ?? DEFAULT_MAX_CACHED_WORKFLOWS,
    // A worker that died (SIGKILL, out of memory) leaves every run it cached waiting this long at its
    // next task before the server gives the task to another worker: Temporal's 10 s would make a
    // grant expiring after a worker's crash up to 10 s late. A live worker takes a sticky task within
    // milliseconds, so 2 s moves only the tasks of a dead or wedged one.
    stickyQueueScheduleToStartTimeout: '2s',
    ...(opts.maxConcurrentActivityTaskExecutions !== undefined
      ? { maxConcurrentActivityTaskExecutions: opts.maxConcurrentActivityTaskExecutions }
      : {}),
    ...(opts.maxConcurrentWorkflowTaskExecutions !== undefined
      ? { maxConcurrentWorkflowTaskExecutions: opts.maxConcurrentWorkflowTaskExecutions }
      : {}),
  });
}

/** Throws, naming each history and its nondeterminism, unless `bundle` replays every committed history. */
export async function verifyCommittedHistories(bundle: WorkflowBundleOption): Promise<number> {
  const histories = loadCommittedHistories();
  if (histories.length === 0) throw new Error('WORKER_VERIFY_HISTORIES: no committed histories found (histories/)');
  const failures = await replayHistories(bundle, histories);
  if (failures.length > 0) {
    throw new Error(
      `WORKER_VERIFY_HISTORIES: this workflow code is not compatible with ${failures.length} of ${histories.length} committed histories, refusing to start:\n${describeFailures(failures)}`,
    );
  }
  return histories.length;
}
