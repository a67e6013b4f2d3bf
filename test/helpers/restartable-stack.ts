/**
 * startStack() whose worker a test stops and starts again (a worker restart while runs wait, a
 * bulk action that waits for a worker): the stack runs no worker of its own; this one polls the
 * stack's task queue in this process, and callWebhook steps may reach loopback targets. With the
 * tokens of the three roles the tests call with.
 */
import { startStack, type Stack } from './stack';
import { testTemporal, testWorkflowBundle } from './temporal';
import { startWorker, type RunningWorker } from './workers';

export interface RestartableStack {
  stack: Stack;
  superAdmin: string;
  admin: string;
  readOnly: string;
  /** Starts the worker unless it is running. */
  startWorker(): Promise<void>;
  /** Shuts the running worker down gracefully; fails when none is running. */
  stopWorker(): Promise<void>;
  workerRunning(): boolean;
  close(): Promise<void>;
}

export async function startRestartableStack(): Promise<RestartableStack> {
  const stack = await startStack({ worker: false });
  const temporal = await testTemporal();
  let worker: RunningWorker | undefined;
  const restartable = {
    stack,
    superAdmin: stack.adminToken,
    admin: '',
    readOnly: '',
    async startWorker() {
      if (worker) return;
      const bundle = testWorkflowBundle();
      worker = await startWorker({
        address: temporal.address,
        namespace: temporal.namespace,
        taskQueue: stack.taskQueue,
        db: stack.service.deps.db,
        allowPrivateOutbound: true,
        ...(bundle ? { bundle } : {}),
      });
    },
    async stopWorker() {
      if (!worker) throw new Error('stopWorker: no worker is running');
      const stopping = worker;
      worker = undefined;
      await stopping.stop();
    },
    workerRunning: () => worker !== undefined,
    async close() {
      await worker?.stop();
      worker = undefined;
      await stack.close();
    },
  };
  try {
    await restartable.startWorker();
    restartable.admin = await stack.service.tokenFor('admin');
    restartable.readOnly = await stack.service.tokenFor('read_only');
  } catch (err) {
    await restartable.close();
    throw err;
  }
  return restartable;
}
