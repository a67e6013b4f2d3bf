/**
 * startStack() with a longer bound on workflow starts. The production bound (5 s, then 503) is
 * right for senders, but on a loaded test machine a start can take longer, which would turn a
 * test about something else into a flaky 503. The runs go to the test run's Temporal server, on a
 * task queue of their own, served by a worker in this process.
 */
import { Client } from '@temporalio/client';
import { startStack, type Stack } from './stack';
import type { TestServiceOptions } from './test-service';
import { connectClient, testDataConverter, testTemporal, uniqueTaskQueue } from './temporal';
import { startWorker } from './workers';

export async function startPatientStack(startTimeoutMs = 30_000, options: TestServiceOptions = {}): Promise<Stack> {
  const temporal = await testTemporal();
  const connection = await connectClient(temporal.address);
  const taskQueue = uniqueTaskQueue('patient');
  const client = new Client({ connection, namespace: temporal.namespace, ...testDataConverter() });
  const stack = await startStack({ ...options, temporal: { client, taskQueue, startTimeoutMs }, worker: false });
  const worker = await startWorker({
    address: temporal.address,
    namespace: temporal.namespace,
    taskQueue,
    db: stack.service.deps.db,
  });
  return {
    ...stack,
    taskQueue,
    async close() {
      await worker.stop();
      await stack.close();
      await connection.close();
    },
  };
}
