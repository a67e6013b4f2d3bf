/**
 * Deadlock detection for workflow code, without the SDK's per-call `vm` watchdog.
 *
 * The SDK enforces `isolateExecutionTimeout` by passing `timeout` to every `runInContext` call into
 * the workflow's V8 context, several per activation. Node starts and joins a watchdog thread for
 * each such call (nodejs/node#47739), a large share of a workflow task's CPU (figures in
 * docs/performance.md#what-keeps-each-figure-low, "The workflow thread").
 *
 * `GuardedWorker` runs the workflow threads without that timeout and watches them from the main
 * thread instead. Each thread runs the calls sent to it in order, so it is stuck when it has calls
 * in flight and has answered none of them for the whole deadline (`isolateExecutionTimeout`, 5 s by
 * default). Then:
 * - the oldest call in flight (the one the thread is running) fails with `WorkflowDeadlockError`:
 *   its workflow task fails, and the Web UI shows the message on the run;
 * - the thread is terminated (which stops even a synchronous endless loop) and a new one is
 *   started in its place;
 * - every other run that lived in that thread fails its next call with
 *   `WorkflowThreadRestartedError`: one failed workflow task, after which the server hands the run
 *   back and it is replayed in the new thread.
 * The worker keeps polling throughout. Progress, not the age of one call, is what is checked, so a
 * thread that is slow because many calls are queued on it is not mistaken for a stuck one.
 *
 * Only the worker's own threads are affected: replay (`Worker.runReplayHistories`) keeps the SDK's
 * watchdog.
 *
 * The threads start from workflow-thread.js: the SDK's workflow thread, whose stack-trace promise
 * hook formats a promise's stack only when the Web UI's Stack Trace query reads it.
 */
import { Worker as NodeWorker } from 'node:worker_threads';
import { Worker, type CompiledWorkerOptions, type WorkerOptions } from '@temporalio/worker';
import type { Duration } from '@temporalio/common';
import type { Logger } from '@temporalio/common';
import type { Workflow, WorkflowCreateOptions, WorkflowCreator } from '@temporalio/worker/lib/workflow/interface';
import type { WorkflowBundleWithSourceMapAndFilename } from '@temporalio/worker/lib/workflow/workflow-worker-thread/input';
import { ThreadedVMWorkflowCreator, WorkerThreadClient } from '@temporalio/worker/lib/workflow/threaded-vm';

/** The call the stuck thread was running: a workflow task of this run did not yield in time. */
export class WorkflowDeadlockError extends Error {
  override readonly name = 'WorkflowDeadlockError';
}

/** A run's thread was restarted because another run on it was stuck; the run is replayed in the new thread. */
export class WorkflowThreadRestartedError extends Error {
  override readonly name = 'WorkflowThreadRestartedError';
}

/** One call into a workflow thread that has not answered yet. */
interface InFlight {
  what: string;
  reject(err: Error): void;
}

/** A clock in milliseconds. */
type Clock = () => number;

/** What the guard needs of a Node worker thread. */
type Thread = Pick<NodeWorker, 'terminate'>;

/**
 * One workflow thread and the calls in flight on it. When it is lost (stuck, then terminated),
 * every call in flight fails at once, and later calls of the runs it held fail without reaching it.
 */
class ThreadGeneration {
  private readonly inFlight = new Set<InFlight>();
  /** When the thread last answered a call, or was given one while idle. */
  private progressAt = 0;
  /** Runs created in this thread and not yet disposed. */
  workflows = 0;
  lost: WorkflowThreadRestartedError | undefined;

  constructor(
    readonly creator: WorkflowCreator,
    private readonly threads: readonly Thread[],
    private readonly clock: Clock,
  ) {}

  /** Runs `fn` (a call into the thread) and tracks it until it answers or the thread is lost. */
  call<T>(what: string, fn: () => Promise<T>): Promise<T> {
    if (this.lost) return Promise.reject(this.lost);
    return new Promise<T>((resolve, reject) => {
      const entry: InFlight = { what, reject };
      if (this.inFlight.size === 0) this.progressAt = this.clock();
      this.inFlight.add(entry);
      const settle = (): boolean => {
        if (!this.inFlight.delete(entry)) return false;
        this.progressAt = this.clock();
        return true;
      };
      let answer: Promise<T>;
      try {
        answer = fn();
      } catch (err) {
        answer = Promise.reject(err);
      }
      answer.then(
        (value) => settle() && resolve(value),
        (err: unknown) => settle() && reject(err),
      );
    });
  }

  /** Calls are in flight and none has been answered for `deadlineMs`. */
  stuck(deadlineMs: number): boolean {
    return !this.lost && this.inFlight.size > 0 && this.clock() - this.progressAt >= deadlineMs;
  }

  /** The SDK's graceful destroy (it asks the thread to stop); a thread that does not answer within the deadline is terminated. */
  async destroy(deadlineMs: number): Promise<void> {
    if (this.lost) return;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), deadlineMs)));
    const outcome = await Promise.race([this.creator.destroy().then(() => 'done' as const), late]).finally(() =>
      clearTimeout(timer),
    );
    if (outcome === 'late') for (const thread of this.threads) await thread.terminate().catch(() => undefined);
  }

  /**
   * Fails every call in flight, the oldest (the one the thread is running: it runs them in order)
   * with `culprit(what)`, and terminates the thread. Answers what the oldest call was.
   */
  lose(culprit: (what: string) => Error, others: WorkflowThreadRestartedError): string {
    this.lost = others;
    const [running, ...queued] = [...this.inFlight];
    this.inFlight.clear();
    if (running) running.reject(culprit(running.what));
    for (const entry of queued) entry.reject(others);
    for (const thread of this.threads) void thread.terminate().catch(() => undefined);
    return running?.what ?? '';
  }
}

/** A run as the SDK worker sees it; every call goes through its thread's generation. */
class GuardedWorkflow implements Workflow {
  private disposed = false;

  constructor(
    private readonly inner: Workflow,
    private readonly generation: ThreadGeneration,
    private readonly runId: string,
  ) {
    generation.workflows++;
  }

  activate(activation: Parameters<Workflow['activate']>[0]): ReturnType<Workflow['activate']> {
    return this.generation.call(`a workflow task of run ${this.runId}`, () => this.inner.activate(activation));
  }

  getAndResetSinkCalls(): ReturnType<Workflow['getAndResetSinkCalls']> {
    // A lost thread took the run's sink calls (its workflow log lines) with it.
    if (this.generation.lost) return Promise.resolve([]);
    return this.generation.call(`the sink calls of run ${this.runId}`, () => this.inner.getAndResetSinkCalls());
  }

  async dispose(): Promise<void> {
    if (!this.disposed) {
      this.disposed = true;
      this.generation.workflows--;
    }
    if (this.generation.lost) return;
    await this.generation.call(`disposing run ${this.runId}`, () => this.inner.dispose());
  }
}

/** A new generation: one thread from `spawn`, watched with `clock`. */
async function startThread(spawn: SpawnThread, clock: Clock): Promise<ThreadGeneration> {
  const { creator, threads } = await spawn();
  return new ThreadGeneration(creator, threads, clock);
}

/** Starts one workflow thread, with no vm timeout, and answers its creator and the thread. */
export type SpawnThread = () => Promise<{ creator: WorkflowCreator; threads: Thread[] }>;

export interface GuardOptions {
  /** How long a thread may hold calls without answering any (the worker's isolateExecutionTimeout). */
  deadlineMs: number;
  /** How many threads (the worker's workflowThreadPoolSize); each is watched and restarted on its own. */
  threads: number;
  spawn: SpawnThread;
  logger: Pick<Logger, 'error'>;
  clock?: Clock;
}

/** A WorkflowCreator over `threads` workflow threads, each restarted when it is stuck. */
export class GuardedWorkflowCreator implements WorkflowCreator {
  private readonly clock: Clock;
  /** Each slot's thread; a promise while a replacement starts, so that new runs wait for it. */
  private readonly slots: Array<Promise<ThreadGeneration>>;
  /** Each slot's running thread (undefined while a replacement starts), for the check and the choice of slot. */
  private readonly running: Array<ThreadGeneration | undefined>;
  private readonly timer: NodeJS.Timeout;
  private destroyed = false;

  private constructor(
    private readonly options: GuardOptions,
    clock: Clock,
    first: ThreadGeneration[],
  ) {
    this.clock = clock;
    this.slots = first.map((generation) => Promise.resolve(generation));
    this.running = [...first];
    // Often enough to catch a stuck thread within a quarter of the deadline after it passes.
    this.timer = setInterval(
      () => this.checkThreads(),
      Math.max(10, Math.min(1000, Math.floor(options.deadlineMs / 4))),
    );
    this.timer.unref();
  }

  static async create(options: GuardOptions): Promise<GuardedWorkflowCreator> {
    const clock = options.clock ?? (() => performance.now());
    const first = await Promise.all(
      Array.from({ length: Math.max(1, options.threads) }, () => startThread(options.spawn, clock)),
    );
    return new GuardedWorkflowCreator(options, clock, first);
  }

  async createWorkflow(options: WorkflowCreateOptions): Promise<Workflow> {
    // The running slot with the fewest runs, as the SDK's own pool chooses; a restarting one is last.
    let slot = 0;
    const load = (i: number): number => this.running[i]?.workflows ?? Number.MAX_SAFE_INTEGER;
    for (let i = 1; i < this.slots.length; i++) if (load(i) < load(slot)) slot = i;
    const generation = await this.slots[slot]!;
    const runId = options.info.runId;
    const inner = await generation.call(`creating run ${runId}`, () => generation.creator.createWorkflow(options));
    return new GuardedWorkflow(inner, generation, runId);
  }

  async destroy(): Promise<void> {
    this.destroyed = true;
    clearInterval(this.timer);
    const generations = await Promise.all(this.slots.map((slot) => slot.catch(() => undefined)));
    await Promise.all(generations.map((generation) => generation?.destroy(this.options.deadlineMs)));
  }

  /** Restarts each slot whose thread is stuck (run by an interval; tests call it directly). */
  checkThreads(): void {
    if (this.destroyed) return;
    this.running.forEach((generation, slot) => {
      if (generation?.stuck(this.options.deadlineMs)) this.restart(slot, generation);
    });
  }

  private restart(slot: number, stuck: ThreadGeneration): void {
    const seconds = this.options.deadlineMs / 1000;
    const what = stuck.lose(
      (call) =>
        new WorkflowDeadlockError(
          `Potential deadlock: ${call} did not yield within ${seconds} s (isolateExecutionTimeout); its workflow thread was restarted`,
        ),
      new WorkflowThreadRestartedError(
        `the workflow thread was restarted because another run on it did not yield within ${seconds} s; this run is replayed`,
      ),
    );
    this.options.logger.error('workflow thread stuck: terminated, starting a new one', {
      deadlineMs: this.options.deadlineMs,
      stuck: what,
      runsReplayed: stuck.workflows,
    });
    this.running[slot] = undefined;
    const next = this.spawnGeneration();
    this.slots[slot] = next;
    // (destroy() awaits the slot's promise, so it also ends a thread that starts after it was called.)
    next.then(
      (generation) => {
        if (!this.destroyed) this.running[slot] = generation;
      },
      () => undefined,
    );
  }

  /** A new thread; retried each second until it starts, since runs wait for it. */
  private async spawnGeneration(): Promise<ThreadGeneration> {
    for (;;) {
      try {
        return await startThread(this.options.spawn, this.clock);
      } catch (err) {
        if (this.destroyed) throw err;
        this.options.logger.error('workflow thread did not start; retrying in 1 s', { error: err });
        await new Promise((resolve) => setTimeout(resolve, 1000));
      }
    }
  }
}

/** The entry of every guarded workflow thread: the SDK's, with the stack-trace hook deferring its work. */
const WORKFLOW_THREAD_ENTRY = require.resolve('./workflow-thread.js');

/**
 * One workflow thread as the SDK's `ThreadedVMWorkflowCreator.create` starts each of its threads
 * (a `WorkerThreadClient`, then its `init` message), from WORKFLOW_THREAD_ENTRY and with no vm
 * timeout. The SDK's thread classes and the message are internals; an SDK upgrade that changes
 * them fails here, when the worker starts.
 */
async function startWorkflowThread(
  workflowBundle: WorkflowBundleWithSourceMapAndFilename,
  options: CompiledWorkerOptions,
  logger: Logger,
): Promise<{ creator: WorkflowCreator; threads: Thread[] }> {
  if (typeof WorkerThreadClient !== 'function' || typeof ThreadedVMWorkflowCreator !== 'function') {
    throw new Error(
      'activation guard: the SDK has no WorkerThreadClient/ThreadedVMWorkflowCreator (SDK internals changed)',
    );
  }
  const thread = new NodeWorker(WORKFLOW_THREAD_ENTRY);
  const client = new WorkerThreadClient(thread, logger, options.patchActivationCallback);
  try {
    await client.send({
      type: 'init',
      workflowBundle,
      // No timeout reaches runInContext, so no watchdog thread is started per call.
      isolateExecutionTimeoutMs: undefined as unknown as number,
      reuseV8Context: options.reuseV8Context ?? true,
      registeredActivityNames: new Set(options.activities.keys()),
      hasPatchActivationCallback: options.patchActivationCallback !== undefined,
    });
  } catch (err) {
    await client.destroy().catch(() => undefined);
    throw err;
  }
  return { creator: new ThreadedVMWorkflowCreator([client]), threads: [thread] };
}

export interface GuardedWorkerOptions extends WorkerOptions {
  /** How long a workflow thread may hold calls without answering any before it is restarted (default 5 s). */
  activationDeadline?: Duration;
}

/**
 * The SDK worker with `GuardedWorkflowCreator` in place of its per-call vm watchdog; create it as
 * the SDK's: `GuardedWorker.create(options)`. In `debugMode` (workflows in the main thread, no
 * deadline) it is the SDK worker unchanged.
 */
export class GuardedWorker extends Worker {
  static override create(options: GuardedWorkerOptions): Promise<Worker> {
    const { activationDeadline, ...rest } = options;
    // The SDK reads its (unexported) isolateExecutionTimeout option; the guard takes its deadline from there.
    return super.create(
      activationDeadline === undefined
        ? rest
        : ({ ...rest, isolateExecutionTimeout: activationDeadline } as WorkerOptions),
    );
  }

  protected static override async createWorkflowCreator(
    workflowBundle: WorkflowBundleWithSourceMapAndFilename,
    compiledOptions: CompiledWorkerOptions,
    logger: Logger,
  ): Promise<WorkflowCreator> {
    if (compiledOptions.debugMode) return super.createWorkflowCreator(workflowBundle, compiledOptions, logger);
    // One thread per creator, so that each is watched and restarted on its own.
    const spawn: SpawnThread = () => startWorkflowThread(workflowBundle, compiledOptions, logger);
    return GuardedWorkflowCreator.create({
      deadlineMs: compiledOptions.isolateExecutionTimeoutMs,
      threads: compiledOptions.workflowThreadPoolSize,
      spawn,
      logger,
    });
  }
}
