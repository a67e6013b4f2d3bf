/**
 * The whole service for end-to-end tests: the real HTTP app on a real store, starting runs on the
 * real Temporal dev server of this test run, with a real worker polling its own task queue.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { Client } from '@temporalio/client';
import type { NativeConnection, Worker } from '@temporalio/worker';
import './quiet-runtime';
import { createAutomationWorker } from '../../src/temporal/worker';
import { tracingClientInterceptors, type WorkerTracing } from '../../src/temporal/tracing';
import { createActivities } from '../../activities';
import { startTestService, type TestService, type TestServiceOptions } from './test-service';
import {
  connectClient,
  connectNative,
  testCodec,
  testDataConverter,
  testTemporal,
  testWorkflowBundle,
  uniqueTaskQueue,
} from './temporal';

export interface Stack {
  service: TestService;
  client: Client;
  taskQueue: string;
  adminToken: string;
  /** Creates (and by default publishes) an automation through the API. */
  createAutomation(
    body: Record<string, unknown>,
    publish?: boolean,
  ): Promise<{ automation: AutomationView; signingSecret?: string }>;
  /** Stops the stack's worker (the runs wait for another worker on the task queue). */
  stopWorker(): Promise<void>;
  close(): Promise<void>;
}

export interface AutomationView {
  id: string;
  version: number;
  trigger: { incomingWebhook: { listenerId: string; url: string } };
  [key: string]: unknown;
}

/** Upper bound for one workflow start in tests that expect 200. */
export const PATIENT_START_TIMEOUT_MS = 60_000;

export async function startStack(
  options: TestServiceOptions & { worker?: boolean; tracing?: WorkerTracing } = {},
): Promise<Stack> {
  const temporal = await testTemporal();
  const taskQueue = uniqueTaskQueue('stack');
  const connection = await connectClient(temporal.address);
  // With tracing started in the test process (src/tracing/sdk.ts), the client starts runs traced.
  const client = new Client({
    connection,
    namespace: temporal.namespace,
    ...testDataConverter(),
    interceptors: tracingClientInterceptors(),
  });
  // Starts may take long on a loaded test machine: the production bound (5 s, then 503) would turn
  // a test about something else into a flaky 503. Tests about that bound pass `temporal` of their own.
  const service = await startTestService({
    temporal: { client, taskQueue, startTimeoutMs: PATIENT_START_TIMEOUT_MS },
    ...options,
  });
  let worker: Worker | undefined;
  let workerConnection: NativeConnection | undefined;
  let running: Promise<void> | undefined;
  if (options.worker !== false) {
    workerConnection = await connectNative(temporal.address);
    const bundle = testWorkflowBundle();
    worker = await createAutomationWorker({
      connection: workerConnection,
      namespace: temporal.namespace,
      taskQueue,
      db: service.deps.db,
      activities: (engine) =>
        createActivities({
          db: service.deps.db,
          allowPrivateOutbound: service.deps.config.allowPrivateOutbound,
          secretBox: service.deps.secretBox,
          engine,
          baseUrl: service.deps.config.baseUrl,
        }),
      codec: testCodec(),
      ...(bundle ? { bundle } : {}),
      ...(options.tracing ? { tracing: options.tracing } : {}),
    });
    running = worker.run();
  }
  const adminToken = await service.tokenFor('super_admin');
  return {
    service,
    client,
    taskQueue,
    adminToken,
    async createAutomation(body, publish = true) {
      const created = await request(service.server)
        .post('/api/v1/automations')
        .set('Authorization', `Bearer ${adminToken}`)
        .send(body);
      if (created.status !== 200)
        throw new Error(`create automation: ${created.status} ${JSON.stringify(created.body)}`);
      if (publish) {
        const published = await request(service.server)
          .post(`/api/v1/automations/${created.body.automation.id}/publish`)
          .set('Authorization', `Bearer ${adminToken}`);
        if (published.status !== 200) throw new Error(`publish: ${published.status}`);
        created.body.automation = published.body.automation;
      }
      return created.body;
    },
    async stopWorker() {
      if (worker) {
        worker.shutdown();
        await running;
        worker = undefined;
      }
      await workerConnection?.close();
      workerConnection = undefined;
    },
    async close() {
      if (worker) {
        worker.shutdown();
        await running;
      }
      await workerConnection?.close();
      await service.close();
      await connection.close();
    },
  };
}

export { hmacEvent, type SignedEvent } from './signing';

export interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
}

/** POSTs exactly these headers and body bytes (no header added) to a path of the stack's server. */
export function deliver(
  stack: Stack,
  path: string,
  event: { headers: Record<string, string>; body: string | Buffer },
): Promise<RawResponse> {
  const { port } = stack.service.server.address() as AddressInfo;
  return new Promise((resolve, reject) => {
    // A connection of its own (agent: false): a pooled keep-alive socket can be closed by the
    // server's idle timeout just as it is reused, which fails the request with ECONNRESET.
    const req = http.request(
      { host: '127.0.0.1', port, path, method: 'POST', headers: event.headers, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let body: Record<string, unknown> = {};
          try {
            body = text ? (JSON.parse(text) as Record<string, unknown>) : {};
          } catch {
            body = { raw: text };
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body });
        });
      },
    );
    req.on('error', reject);
    req.end(event.body);
  });
}

export function listenerPath(automation: AutomationView): string {
  return new URL(automation.trigger.incomingWebhook.url).pathname;
}
