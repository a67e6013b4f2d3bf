/**
 * The activation guard against the real dev server: a workflow whose code never yields (a
 * synchronous endless loop) fails its workflow task as a potential deadlock, its thread is replaced,
 * and the worker goes on serving: a run that was cached in the lost thread is replayed and finishes,
 * a new run finishes, the worker never stops. Without the guard the loop would hold the only
 * workflow thread for good and nothing after it would run.
 */
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { bundleWorkflowCode, DefaultLogger, type NativeConnection, type Worker } from '@temporalio/worker';
import { temporal } from '@temporalio/proto';
import '../helpers/quiet-runtime';
import { GuardedWorker } from '../../src/temporal/activation-guard';
import { connectTestTemporal, uniqueTaskQueue } from '../helpers/temporal';
import { poll } from '../helpers/wait';

const EventType = temporal.api.enums.v1.EventType;

let server: Awaited<ReturnType<typeof connectTestTemporal>>;
let connection: NativeConnection;
let client: Client;
let worker: Worker;
let running: Promise<void>;
let taskQueue: string;

beforeAll(async () => {
  server = await connectTestTemporal();
  ({ connection, client } = server);
  taskQueue = uniqueTaskQueue('guard');
  const workflowBundle = await bundleWorkflowCode({
    workflowsPath: path.join(__dirname, '../fixtures/workflows/activation-guard.ts'),
    logger: new DefaultLogger('WARN'),
  });
  worker = await GuardedWorker.create({
    connection,
    namespace: 'default',
    taskQueue,
    workflowBundle,
    activationDeadline: '1s',
  });
  running = worker.run();
});

afterAll(async () => {
  if (worker?.getState() === 'RUNNING') worker.shutdown();
  await running?.catch(() => undefined);
  await server?.close();
});

/** The failure messages of the run's failed workflow tasks so far. */
async function failedTasks(workflowId: string): Promise<string[]> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  return (history.events ?? [])
    .filter((event) => event.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED)
    .map((event) => event.workflowTaskFailedEventAttributes?.failure?.message ?? '');
}

/** True once the run's first workflow task completed (it is cached in the worker). */
async function settled(workflowId: string): Promise<boolean> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  return (history.events ?? []).some((event) => event.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED);
}

it('a workflow task that never yields fails as a potential deadlock, and the worker goes on serving every other run', async () => {
  const held = await client.workflow.start('held', { taskQueue, workflowId: `held-${taskQueue}` });
  expect(
    await poll(
      () => settled(held.workflowId),
      (done) => done,
      { timeoutMs: 60_000 },
    ),
  ).toBe(true);

  const spin = await client.workflow.start('spin', { taskQueue, workflowId: `spin-${taskQueue}` });
  const spinFailures = await poll(
    () => failedTasks(spin.workflowId),
    (messages) => messages.length > 0,
    { timeoutMs: 60_000 },
  );
  expect(spinFailures[0]).toMatch(
    /^Potential deadlock: a workflow task of run .+ did not yield within 1 s \(isolateExecutionTimeout\); its workflow thread was restarted$/,
  );
  await spin.terminate('test: the deadlock was seen');

  // `held` lived in the terminated thread: its next task fails once, then it is replayed and finishes.
  await held.signal('release');
  expect(await held.result()).toBe('released');
  expect(await failedTasks(held.workflowId)).toContainEqual(
    expect.stringMatching(
      /^the workflow thread was restarted because another run on it did not yield within 1 s; this run is replayed$/,
    ),
  );

  const quick = await client.workflow.start('quick', { taskQueue, workflowId: `quick-${taskQueue}` });
  expect(await quick.result()).toBe('quick');
  expect(worker.getState()).toBe('RUNNING');
});
