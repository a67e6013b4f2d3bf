/**
 * A real automation worker in the test process, on any Temporal server and task queue (the stack's
 * own worker always uses the shared test server). Pass a prebuilt bundle to start several quickly.
 */
import { bundleWorkflowCode, DefaultLogger, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import './quiet-runtime';
import { automationBundleOptions, createAutomationWorker } from '../../src/temporal/worker';
import type { Db } from '../../src/store/db';
import { createActivities } from '../../activities';
import { connectNative, testCodec } from './temporal';

export interface RunningWorker {
  /** Graceful shutdown, then the connection is closed. */
  stop(): Promise<void>;
}

/** Bundles the automation workflow once (quietly) for several workers. */
export function bundleAutomationWorkflow(): Promise<WorkflowBundleWithSourceMap> {
  return bundleWorkflowCode({ ...automationBundleOptions(), logger: new DefaultLogger('WARN') });
}

export async function startWorker(options: {
  address: string;
  taskQueue: string;
  db: Db;
  namespace?: string;
  bundle?: WorkflowBundleWithSourceMap | { codePath: string };
  /** callWebhook steps may reach loopback and private targets (ALLOW_PRIVATE_OUTBOUND); default false. */
  allowPrivateOutbound?: boolean;
}): Promise<RunningWorker> {
  const connection = await connectNative(options.address, 90_000);
  const worker = await createAutomationWorker({
    connection,
    namespace: options.namespace ?? 'default',
    taskQueue: options.taskQueue,
    db: options.db,
    activities: (engine) =>
      createActivities({ db: options.db, allowPrivateOutbound: options.allowPrivateOutbound ?? false, engine }),
    codec: testCodec(),
    ...(options.bundle ? { bundle: options.bundle } : {}),
  });
  const running = worker.run();
  running.catch(() => undefined);
  return {
    async stop() {
      worker.shutdown();
      await running.catch(() => undefined);
      await connection.close().catch(() => undefined);
    },
  };
}
