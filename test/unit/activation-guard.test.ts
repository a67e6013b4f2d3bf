/**
 * The activation guard's bookkeeping, on fake workflow threads with a clock the test moves: when a
 * thread counts as stuck (no answer for the whole deadline, not a call older than it), what each run
 * then sees, and that new runs go to the replacement thread. The same guard against a real Temporal
 * server and a workflow that never yields: test/integration/activation-guard.test.ts.
 */
import type { Workflow, WorkflowCreateOptions, WorkflowCreator } from '@temporalio/worker/lib/workflow/interface';
import {
  GuardedWorkflowCreator,
  WorkflowDeadlockError,
  WorkflowThreadRestartedError,
} from '../../src/temporal/activation-guard';

const DEADLINE = 5000;

/** A call into a fake thread: the test answers it. */
interface Pending {
  what: string;
  answer(): void;
}

/** One fake workflow thread: every call waits until the test answers it. */
class FakeThread {
  readonly pending: Pending[] = [];
  terminated = false;
  destroyed = false;
  destroyCalls = 0;

  private call<T>(what: string, value: T): Promise<T> {
    return new Promise<T>((resolve) => this.pending.push({ what, answer: () => resolve(value) }));
  }

  creator(): WorkflowCreator {
    return {
      createWorkflow: async (options: WorkflowCreateOptions): Promise<Workflow> => {
        const runId = options.info.runId;
        await this.call(`create ${runId}`, undefined);
        return {
          activate: () => this.call(`activate ${runId}`, { runId, successful: {} }),
          getAndResetSinkCalls: () => this.call(`sinks ${runId}`, []),
          dispose: () => this.call(`dispose ${runId}`, undefined),
        };
      },
      destroy: async () => {
        this.destroyCalls++;
        this.destroyed = true;
      },
    };
  }

  async terminate(): Promise<number> {
    this.terminated = true;
    return 1;
  }

  /** Answers the oldest call (after letting the guard's promises send it). */
  async answerNext(): Promise<string> {
    await flush();
    const next = this.pending.shift();
    if (!next) throw new Error('no call in flight on this thread');
    next.answer();
    await flush();
    return next.what;
  }
}

async function flush(): Promise<void> {
  for (let i = 0; i < 5; i++) await Promise.resolve();
}

function createOptions(runId: string): WorkflowCreateOptions {
  return { info: { runId } } as unknown as WorkflowCreateOptions;
}

async function setup(threadsPerGuard = 1) {
  let now = 0;
  const threads: FakeThread[] = [];
  const errors: string[] = [];
  const guard = await GuardedWorkflowCreator.create({
    deadlineMs: DEADLINE,
    threads: threadsPerGuard,
    clock: () => now,
    logger: { error: (message: string) => void errors.push(message) },
    spawn: async () => {
      const thread = new FakeThread();
      threads.push(thread);
      return { creator: thread.creator(), threads: [thread] };
    },
  });
  return {
    guard,
    threads,
    errors,
    advance(ms: number) {
      now += ms;
    },
  };
}

/** Creates a run on the guard, answering the thread's create call. */
async function createRun(guard: GuardedWorkflowCreator, thread: FakeThread, runId: string): Promise<Workflow> {
  const created = guard.createWorkflow(createOptions(runId));
  await thread.answerNext();
  return created;
}

/** Settles to what the promise did, without an unhandled rejection. */
function outcome<T>(promise: Promise<T>): Promise<{ value?: T; error?: unknown }> {
  return promise.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );
}

/**
 * Gives the run a workflow task its thread never answers, lets the whole deadline pass and runs the
 * check; `task` settles to what the task got.
 */
async function stallPastDeadline(
  guard: GuardedWorkflowCreator,
  run: Workflow,
  advance: (ms: number) => void,
): Promise<{ task: Promise<{ value?: unknown; error?: unknown }> }> {
  const task = outcome(run.activate({}));
  await flush();
  advance(DEADLINE);
  guard.checkThreads();
  return { task };
}

describe('activation guard', () => {
  let stops: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const stop of stops) await stop();
    stops = [];
  });

  async function started(threadsPerGuard = 1) {
    const s = await setup(threadsPerGuard);
    stops.push(() => s.guard.destroy());
    return s;
  }

  it('restarts a thread that answered nothing for the whole deadline: the running call fails as a deadlock, the queued ones as restarted, the thread is terminated', async () => {
    const { guard, threads, errors, advance } = await started();
    const [first] = threads as [FakeThread];
    const a = await createRun(guard, first, 'run-a');
    const b = await createRun(guard, first, 'run-b');

    const running = outcome(a.activate({}));
    const queued = outcome(b.activate({}));
    await flush();
    advance(DEADLINE - 1);
    guard.checkThreads();
    await flush();
    expect(first.terminated).toBe(false);

    advance(1);
    guard.checkThreads();
    const [r, q] = await Promise.all([running, queued]);
    expect(r.error).toBeInstanceOf(WorkflowDeadlockError);
    expect(String((r.error as Error).message)).toMatch(/a workflow task of run run-a did not yield within 5 s/);
    expect(q.error).toBeInstanceOf(WorkflowThreadRestartedError);
    expect(first.terminated).toBe(true);
    expect(errors).toEqual(['workflow thread stuck: terminated, starting a new one']);
  });

  it('does not restart a thread that keeps answering, however long its queue takes in all', async () => {
    const { guard, threads, advance } = await started();
    const [first] = threads as [FakeThread];
    const runs = [];
    for (let i = 0; i < 4; i++) runs.push(await createRun(guard, first, `run-${i}`));
    const activations = runs.map((run) => outcome(run.activate({})));
    // Four calls answered 4 s apart: 16 s in all, more than three deadlines, yet never 5 s without an answer.
    for (let i = 0; i < 4; i++) {
      advance(DEADLINE - 1000);
      guard.checkThreads();
      await first.answerNext();
    }
    for (const activation of await Promise.all(activations)) expect(activation.error).toBeUndefined();
    expect(first.terminated).toBe(false);
  });

  it('idle time does not count: a call given to a thread idle for longer than the deadline has the whole deadline', async () => {
    const { guard, threads, advance } = await started();
    const [first] = threads as [FakeThread];
    const run = await createRun(guard, first, 'run-a');
    advance(DEADLINE * 10);
    const activation = outcome(run.activate({}));
    await flush();
    advance(DEADLINE - 1);
    guard.checkThreads();
    await first.answerNext();
    expect((await activation).error).toBeUndefined();
    expect(first.terminated).toBe(false);
  });

  it('after a restart, runs of the lost thread fail without reaching it and dispose quietly; new runs go to the new thread', async () => {
    const { guard, threads, advance } = await started();
    const [first] = threads as [FakeThread];
    const stuck = await createRun(guard, first, 'stuck');
    const bystander = await createRun(guard, first, 'bystander');
    expect((await (await stallPastDeadline(guard, stuck, advance)).task).error).toBeInstanceOf(WorkflowDeadlockError);

    const callsBefore = first.pending.length;
    const later = await outcome(bystander.activate({}));
    expect(later.error).toBeInstanceOf(WorkflowThreadRestartedError);
    expect(await outcome(bystander.getAndResetSinkCalls())).toEqual({ value: [] });
    await expect(bystander.dispose()).resolves.toBeUndefined();
    expect(first.pending.length).toBe(callsBefore);

    // The replay of the bystander is created in the second thread, which answers it.
    const replayed = guard.createWorkflow(createOptions('bystander'));
    await flush();
    expect(threads).toHaveLength(2);
    const second = threads[1]!;
    expect(await second.answerNext()).toBe('create bystander');
    const run = await replayed;
    const activation = outcome(run.activate({}));
    expect(await second.answerNext()).toBe('activate bystander');
    expect((await activation).value).toEqual({ runId: 'bystander', successful: {} });
  });

  it('with two threads only the stuck one is restarted; the other keeps its runs', async () => {
    const { guard, threads, advance } = await started(2);
    expect(threads).toHaveLength(2);
    const [one, two] = threads as [FakeThread, FakeThread];
    const onOne = await createRun(guard, one, 'on-one');
    const onTwo = await createRun(guard, two, 'on-two');
    expect((await (await stallPastDeadline(guard, onOne, advance)).task).error).toBeInstanceOf(WorkflowDeadlockError);
    expect(one.terminated).toBe(true);
    expect(two.terminated).toBe(false);

    const fine = outcome(onTwo.activate({}));
    await two.answerNext();
    expect((await fine).error).toBeUndefined();
  });

  it('destroy right after a restart ends the replacement thread once and leaves the lost one alone', async () => {
    const { guard, threads, advance } = await setup();
    const [first] = threads as [FakeThread];
    const run = await createRun(guard, first, 'stuck');
    const { task } = await stallPastDeadline(guard, run, advance);
    await guard.destroy();
    await flush();
    expect((await task).error).toBeInstanceOf(WorkflowDeadlockError);
    expect(threads).toHaveLength(2);
    expect(first.destroyCalls).toBe(0);
    expect(threads[1]!.destroyCalls).toBe(1);
  });

  it('destroy ends each running thread through the SDK', async () => {
    const { guard, threads } = await setup();
    await guard.destroy();
    expect(threads[0]!.destroyed).toBe(true);
    expect(threads[0]!.terminated).toBe(false);
  });
});
