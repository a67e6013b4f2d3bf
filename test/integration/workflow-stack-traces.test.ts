/**
 * The Web UI's "Stack Trace" tab (queries `__stack_trace` and `__enhanced_stack_trace`) answers
 * the same on the service's worker as on the SDK's own. The guarded worker's threads record each
 * promise's stack without formatting it (src/temporal/workflow-thread.js) and format it when a
 * query reads it; the SDK's worker formats every stack at once. Both run the same bundle against
 * the same server, and every waiting shape of test/fixtures/workflows/stack-traces.ts must get
 * the same answer, to the character, from both.
 */
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { bundleWorkflowCode, DefaultLogger, Worker, type NativeConnection } from '@temporalio/worker';
import '../helpers/quiet-runtime';
import { GuardedWorker } from '../../src/temporal/activation-guard';
import { connectTestTemporal, uniqueTaskQueue } from '../helpers/temporal';
import { poll } from '../helpers/wait';

const SHAPES = ['onTimer', 'onAll', 'onRace', 'nested', 'onActivity'] as const;

let server: Awaited<ReturnType<typeof connectTestTemporal>>;
let connection: NativeConnection;
let client: Client;
const workers: Worker[] = [];
const running: Array<Promise<void>> = [];
let sdkQueue: string;
let guardedQueue: string;

beforeAll(async () => {
  server = await connectTestTemporal();
  ({ connection, client } = server);
  sdkQueue = uniqueTaskQueue('stacks-sdk');
  guardedQueue = uniqueTaskQueue('stacks-guarded');
  const workflowBundle = await bundleWorkflowCode({
    workflowsPath: path.join(__dirname, '../fixtures/workflows/stack-traces.ts'),
    logger: new DefaultLogger('WARN'),
  });
  workers.push(await Worker.create({ connection, namespace: 'default', taskQueue: sdkQueue, workflowBundle }));
  workers.push(
    await GuardedWorker.create({ connection, namespace: 'default', taskQueue: guardedQueue, workflowBundle }),
  );
  for (const worker of workers) running.push(worker.run());
});

afterAll(async () => {
  for (const worker of workers) if (worker.getState() === 'RUNNING') worker.shutdown();
  await Promise.all(running.map((run) => run.catch(() => undefined)));
  await server?.close();
});

interface Location {
  file_path?: string;
  function_name?: string;
  line?: number;
  column?: number;
  internal_code?: boolean;
}

interface EnhancedStackTrace {
  sdk: { name: string; version: string };
  sources: Record<string, unknown>;
  stacks: Array<{ locations: Location[] }>;
}

/** Both stack-trace queries of a run, once it waits (its first workflow task has completed). */
async function stackTraces(
  workflow: string,
  taskQueue: string,
): Promise<{ text: string; enhanced: EnhancedStackTrace }> {
  const handle = await client.workflow.start(workflow, { taskQueue, workflowId: `${workflow}-${taskQueue}` });
  try {
    const text = await poll(
      () => handle.query<string>('__stack_trace'),
      (answer) => answer.length > 0,
      { timeoutMs: 60_000 },
    );
    const enhanced = await handle.query<EnhancedStackTrace>('__enhanced_stack_trace');
    return { text, enhanced };
  } finally {
    await handle.terminate('test: stack traces read');
  }
}

describe.each(SHAPES)('a run waiting in %s', (workflow) => {
  it('answers both stack-trace queries on the service worker exactly as on the SDK worker', async () => {
    const [sdk, guarded] = await Promise.all([stackTraces(workflow, sdkQueue), stackTraces(workflow, guardedQueue)]);
    // The answer says where the run waits, in the workflow's own source (source-mapped).
    expect(sdk.text).toContain('fixtures/workflows/stack-traces.ts');
    expect(guarded.text).toBe(sdk.text);
    expect(guarded.enhanced.stacks).toEqual(sdk.enhanced.stacks);
    expect(guarded.enhanced.sources).toEqual(sdk.enhanced.sources);
    expect(guarded.enhanced.sdk).toEqual(sdk.enhanced.sdk);
  });
});
