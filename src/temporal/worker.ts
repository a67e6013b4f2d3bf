/**
 * The automation worker: polls one task queue, runs the automation workflow and its activities.
 * In development the workflow code is bundled from source (`workflowsPath`); in production pass a
 * bundle prebuilt with `bundleWorkflowCode({ workflowsPath: automationWorkflowsPath() })`.
 */
import { Worker, type NativeConnection, type WorkflowBundleOption } from '@temporalio/worker';
import { createActivities } from '../../activities';
import type { PayloadCodec } from '@temporalio/common';
import type { Db } from '../store/db';
import { encryptedDataConverter } from './codec';

export interface AutomationWorkerOptions {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  db: Db;
  /** Encrypts and decrypts payloads around the workflow sandbox (the bundle never sees it). */
  codec: PayloadCodec;
  /** Prebuilt workflow bundle; when absent the workflows are bundled from source at start. */
  bundle?: WorkflowBundleOption;
  maxConcurrentActivityTaskExecutions?: number;
  maxConcurrentWorkflowTaskExecutions?: number;
}

/** Path of the workflow module the bundler starts from. */
export function automationWorkflowsPath(): string {
  return require.resolve('../../workflows');
}

/** Creates (does not run) the worker; call `worker.run()` and `worker.shutdown()`. */
export async function createAutomationWorker(opts: AutomationWorkerOptions): Promise<Worker> {
  return Worker.create({
    connection: opts.connection,
    namespace: opts.namespace,
    taskQueue: opts.taskQueue,
    activities: createActivities({ db: opts.db }),
    dataConverter: encryptedDataConverter(opts.codec),
    ...(opts.bundle ? { workflowBundle: opts.bundle } : { workflowsPath: automationWorkflowsPath() }),
    ...(opts.maxConcurrentActivityTaskExecutions !== undefined
      ? { maxConcurrentActivityTaskExecutions: opts.maxConcurrentActivityTaskExecutions }
      : {}),
    ...(opts.maxConcurrentWorkflowTaskExecutions !== undefined
      ? { maxConcurrentWorkflowTaskExecutions: opts.maxConcurrentWorkflowTaskExecutions }
      : {}),
  });
}
