/**
 * Entry point. `npm start` (no role): everything on one machine with embedded defaults — the
 * Temporal dev server (unless TEMPORAL_ADDRESS is set), the store, the worker and the API.
 * `npm run api` / `npm run worker`: one role each, against TEMPORAL_ADDRESS and DATABASE_URL.
 */
import http from 'node:http';
import path from 'node:path';
import { Client } from '@temporalio/client';
import { DefaultLogger, Runtime, type NativeConnection, type Worker } from '@temporalio/worker';
import { loadConfig, type Config } from './config';
import { createLogger, resolveLogFormat, type Logger } from './logger';
import { StartBanner } from './banner';
import { openDb, type Db } from './store/db';
import { openEmbeddedStore } from './store/embedded';
import { runNodeChild } from './node-child';
import { startMemoryTrim } from './memory-trim';
import { ensureBootstrapClient } from './auth/clients';
import { createApp } from './http/app';
import { composeApp } from './compose';
import { createAdminApp } from './http/admin';
import { SecretBox, ensurePrivateDir, loadSecretKey } from './crypto/secret-box';
import { bindSealedValues } from './store/sealing';
import { startDevServer, type DevServer } from './temporal/devserver';
import { ensureNamespace } from './temporal/setup';
import {
  connectClientConnection,
  createLazyClient,
  connectWorkerConnection,
  type TemporalTarget,
} from './temporal/connection';
import { createAutomationWorker } from './temporal/worker';
import { skipDroppedSdkLogMetadata } from './temporal/sdk-log-levels';
import { createActivities } from '../activities';
import { EncryptionCodec, encryptedDataConverter, loadPayloadKeys } from './temporal/codec';
import { CODEC_PATH } from './http/routes/codec';
import { tracingClientInterceptors } from './temporal/tracing';
import type * as TracingSdk from './tracing/sdk';
import type { Tracing } from './tracing/sdk';

type Role = 'all' | 'api' | 'worker';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { ensureTemporalCli } = require('./temporal/temporal-cli.js') as {
  ensureTemporalCli: (log: (l: string) => void) => Promise<string>;
};

/** The URLs and the one-time secret, printed as one block once start-up is done. */
const banner = new StartBanner();

interface Running {
  stop(): Promise<void>;
  /** The worker's native connection (workers only): the API in the same process starts runs through it. */
  connection?: NativeConnection;
}

async function main(): Promise<void> {
  const role = parseRole(process.argv[2]);
  const config = loadConfig(process.env);
  const logger = createLogger(config.logLevel, undefined, resolveLogFormat(config.logFormat));
  for (const warning of config.warnings) logger.warn(warning);
  Runtime.install({
    logger: new DefaultLogger('WARN'),
    shutdownSignals: [],
    ...(config.temporal.metricsBind
      ? { telemetryOptions: { metrics: { prometheus: { bindAddress: config.temporal.metricsBind } } } }
      : {}),
  });
  skipDroppedSdkLogMetadata();
  const stops: Array<() => Promise<void>> = [];
  const tracing = startTracingWhenOn(config, logger);
  if (tracing) stops.push(() => tracing.shutdown());
  let stopping = false;
  const shutdown = async (signal: string): Promise<void> => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    for (const stop of stops.reverse()) {
      await stop().catch((err: unknown) => logger.error({ err: String(err) }, 'error while stopping'));
    }
    logger.info('stopped');
    process.exit(0);
  };
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));

  try {
    if (ensurePrivateDir(config.dataDir).openToOthers) {
      logger.warn({ dataDir: config.dataDir }, 'DATA_DIR can be read by other users: restrict it (chmod 700)');
    }
    const codec = payloadCodec(config, logger);
    // Three slow first-start steps at once: the Temporal CLI and dev server, the store (a new one is
    // created by a child process), and the workflow bundle (another child process).
    const bundling =
      role !== 'api' && !config.worker.workflowBundlePath ? bundleInChildProcess(config, logger) : undefined;
    bundling?.catch(() => undefined); // awaited by startWorker; a failure elsewhere must not leave it unhandled
    const opening = openStore(config, role, logger);
    opening.then((db) => stops.push(() => db.close())).catch(() => undefined);
    const [target, db] = await Promise.all([
      temporalTarget(role, config, logger, stops).then(async (target) => {
        await prepareNamespace(target, config, logger);
        return target;
      }),
      opening,
    ]);

    // The API seals secrets with it; the worker opens named outbound secrets (callWebhook headers).
    const secretBox = new SecretBox(secretKey(config, logger));
    // Values sealed by earlier versions are bound to their rows before anything reads one.
    const sealing = await bindSealedValues(db, secretBox);
    if (sealing.resealed > 0)
      logger.info({ resealed: sealing.resealed }, 'sealed values bound to their rows (one-time migration)');
    const parts: ProcessParts = { target, config, db, codec, logger, secretBox, tracing };
    let worker: Running | undefined;
    if (role !== 'api') {
      worker = await startWorker(parts, bundling);
      stops.push(() => worker!.stop());
    }
    if (role !== 'worker') {
      const api = await startApi(parts, worker?.connection);
      stops.push(() => api.stop());
      await printBootstrap(db, secretBox, config, logger);
      console.log(banner.render(process.stdout.isTTY === true && !process.env.NO_COLOR));
    }
    if (config.memoryTrim) {
      // Started once the process is up, so that its first idle look returns what start-up freed.
      const trimmer = startMemoryTrim((message, fields) => logger.debug(fields, message));
      if (trimmer) stops.push(async () => trimmer.stop());
    }
  } catch (err) {
    logger.fatal({ err: (err as Error).message }, 'start-up failed');
    await shutdown('startup-failure');
    process.exit(1);
  }
}

function parseRole(arg: string | undefined): Role {
  if (arg === undefined || arg === 'all') return 'all';
  if (arg === 'api' || arg === 'worker') return arg;
  throw new Error(`unknown role "${arg}": use api, worker or nothing`);
}

async function temporalTarget(
  role: Role,
  config: Config,
  logger: Logger,
  stops: Array<() => Promise<void>>,
): Promise<TemporalTarget> {
  if (config.temporal.address) return { address: config.temporal.address, embedded: false };
  if (role !== 'all') {
    throw new Error(
      `npm run ${role} runs against an existing Temporal server: set TEMPORAL_ADDRESS (or use npm start)`,
    );
  }
  const cliPath = await ensureTemporalCli((line) => logger.info(line));
  logger.info({ dataDir: config.dataDir }, 'starting the embedded Temporal dev server');
  const server: DevServer = await startDevServer({
    cliPath,
    dataDir: path.join(config.dataDir, 'temporal'),
    port: config.temporal.embeddedPort,
    uiPort: config.temporal.uiPort,
    // The UI decodes encrypted payloads through this service's codec endpoint (loopback callers).
    uiCodecEndpoint: `${config.baseUrl}${CODEC_PATH}`,
    namespace: config.temporal.namespace,
    ip: '127.0.0.1',
    log: (line) => logger.debug({ source: 'temporal' }, line),
  });
  stops.push(() => server.stop());
  if (server.uiUrl) banner.addUrl('Temporal Web UI', server.uiUrl);
  return { address: server.address, embedded: true };
}

async function prepareNamespace(target: TemporalTarget, config: Config, logger: Logger): Promise<void> {
  const connection = await connectClientConnection(target);
  try {
    const report = await ensureNamespace(connection, config.temporal.namespace);
    logger.info({ namespace: config.temporal.namespace, ...report }, 'temporal namespace ready');
  } catch (err) {
    logger.warn(
      { err: (err as Error).message },
      'could not set up the namespace (retention, search attributes); continuing',
    );
  } finally {
    await connection.close();
  }
}

async function openStore(config: Config, role: Role, logger: Logger): Promise<Db> {
  if (!config.databaseUrl && role !== 'all') {
    logger.warn('DATABASE_URL is not set: using the embedded store, which only one process can open');
  }
  const storeDir = path.join(config.dataDir, 'store');
  const db = config.databaseUrl
    ? await openDb({ databaseUrl: config.databaseUrl })
    : await openEmbeddedStore(storeDir, () => logger.info({ dataDir: storeDir }, 'embedded store created'));
  logger.info({ store: db.kind }, 'store ready');
  return db;
}

/**
 * Without WORKFLOW_BUNDLE, the workflow code is bundled from source by a short-lived child process
 * into DATA_DIR: webpack's memory leaves with it instead of staying resident here.
 */
async function bundleInChildProcess(config: Config, logger: Logger): Promise<string> {
  const out = path.join(config.dataDir, 'workflow-bundle.js');
  // scripts/bundle-workflows.ts from the sources (npm run dev), its compiled .js from dist/ (npm start)
  await runNodeChild(
    path.resolve(__dirname, `../scripts/bundle-workflows${path.extname(__filename)}`),
    [out],
    'bundling the workflows',
  );
  logger.info({ bundle: out }, 'workflow code bundled');
  return out;
}

/** What the worker and the API of this process are built from. */
interface ProcessParts {
  target: TemporalTarget;
  config: Config;
  db: Db;
  codec: EncryptionCodec;
  logger: Logger;
  secretBox: SecretBox;
  /** The OpenTelemetry SDK, while tracing is on. */
  tracing: Tracing | undefined;
}

/**
 * Starts OpenTelemetry's SDK when the OTEL_* variables turn tracing on (src/tracing/sdk.ts, loaded
 * only then); before any Temporal client is made, so that each gets the interceptors.
 */
function startTracingWhenOn(config: Config, logger: Logger): Tracing | undefined {
  if (!config.tracing.enabled) return undefined;
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { startTracing } = require('./tracing/sdk') as typeof TracingSdk;
  const tracing = startTracing(process.env);
  logger.info({ serviceName: tracing.resource.attributes['service.name'] }, 'tracing on: spans are exported over OTLP');
  return tracing;
}

async function startWorker(
  { target, config, db, codec, logger, secretBox, tracing }: ProcessParts,
  bundling: Promise<string> | undefined,
): Promise<Running> {
  const connection = await connectWorkerConnection(target);
  const bundlePath = config.worker.workflowBundlePath ?? (await (bundling ?? bundleInChildProcess(config, logger)));
  const worker: Worker = await createAutomationWorker({
    connection,
    namespace: config.temporal.namespace,
    taskQueue: config.temporal.taskQueue,
    db,
    activities: (engine) =>
      createActivities({
        db,
        allowPrivateOutbound: config.allowPrivateOutbound,
        secretBox,
        engine,
        baseUrl: config.baseUrl,
      }),
    bundle: { codePath: bundlePath },
    codec,
    ...(config.worker.maxConcurrentActivityTaskExecutions
      ? { maxConcurrentActivityTaskExecutions: config.worker.maxConcurrentActivityTaskExecutions }
      : {}),
    ...(config.worker.maxConcurrentWorkflowTaskExecutions
      ? { maxConcurrentWorkflowTaskExecutions: config.worker.maxConcurrentWorkflowTaskExecutions }
      : {}),
    ...(config.worker.maxCachedWorkflows !== undefined ? { maxCachedWorkflows: config.worker.maxCachedWorkflows } : {}),
    ...(config.worker.verifyHistories ? { verifyHistories: true } : {}),
    ...(tracing ? { tracing: { processor: tracing.processor, resource: tracing.resource } } : {}),
  });
  const running = worker.run();
  running.catch((err: unknown) => logger.fatal({ err: (err as Error).message }, 'worker stopped unexpectedly'));
  logger.info({ taskQueue: config.temporal.taskQueue }, 'worker running');
  return {
    connection,
    async stop() {
      worker.shutdown();
      await running.catch(() => undefined);
      await connection.close();
    },
  };
}

/**
 * `workerConnection`: the native connection of a worker of this process (npm start); runs are then
 * started through it with eager workflow start, so their first workflow task skips matching.
 */
async function startApi(
  { target, config, db, codec, logger, secretBox }: ProcessParts,
  workerConnection?: NativeConnection,
): Promise<Running> {
  const { client: lazyClient, connection } = createLazyClient(target, config.temporal.namespace, codec);
  const client = workerConnection
    ? new Client({
        connection: workerConnection,
        namespace: config.temporal.namespace,
        dataConverter: encryptedDataConverter(codec),
        interceptors: tracingClientInterceptors(),
      })
    : lazyClient;
  const deps = await composeApp({
    config,
    db,
    logger,
    secretBox,
    temporal: { client, taskQueue: config.temporal.taskQueue, eagerStart: workerConnection !== undefined },
    payloadCodec: codec,
    scheduleReconcile: true,
  });
  const app = createApp(deps);
  const server = http.createServer(app.callback());
  server.requestTimeout = 30_000;
  server.headersTimeout = 10_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, resolve);
  });
  banner.addUrl('API', `${config.baseUrl}  (listening on ${config.host}:${config.port})`);
  banner.addUrl('Console', `${config.baseUrl}/console`);
  let admin: http.Server | undefined;
  if (config.admin.port !== undefined) {
    const adminServer = http.createServer(createAdminApp(deps).callback());
    await new Promise<void>((resolve, reject) => {
      adminServer.once('error', reject);
      adminServer.listen(config.admin.port, config.admin.host, resolve);
    });
    admin = adminServer;
    banner.addUrl('Admin (/ready, /metrics)', `http://${config.admin.host}:${config.admin.port}`);
  } else if (config.admin.token === undefined) {
    logger.warn('/ready and /metrics are public on the API port: set ADMIN_PORT or ADMIN_TOKEN in production');
  }
  return {
    async stop() {
      if (admin) await new Promise<void>((resolve) => admin!.close(() => resolve()));
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      });
      await deps.close(); // what the delivery log buffered is written before the store closes
      await connection.close();
    },
  };
}

/** Payload encryption keys: PAYLOAD_KEYS, else DATA_DIR/payload.keys (made once, mode 0600). */
function payloadCodec(config: Config, logger: Logger): EncryptionCodec {
  const { keys, source, file } = loadPayloadKeys(config.codec.payloadKeys, config.dataDir);
  if (source !== 'env' && (config.databaseUrl || config.temporal.address)) {
    logger.warn(
      'PAYLOAD_KEYS is not set: Temporal payloads are encrypted with a key file in DATA_DIR; every API and worker process needs the same PAYLOAD_KEYS',
    );
  }
  if (source === 'generated') logger.info({ file }, 'generated the key that encrypts Temporal payloads (mode 0600)');
  const codec = new EncryptionCodec(keys);
  logger.info({ keyId: codec.currentKeyId, keys: keys.length, source }, 'Temporal payloads are encrypted');
  return codec;
}

function secretKey(config: Config, logger: Logger): Buffer {
  const { key, source } = loadSecretKey(config.secretKey, config.dataDir);
  if (source !== 'env' && config.databaseUrl) {
    logger.warn(
      'SECRET_KEY is not set: signing secrets are sealed with a key file in DATA_DIR; every API process sharing DATABASE_URL needs the same SECRET_KEY',
    );
  }
  if (source === 'generated')
    logger.info(
      { file: path.join(config.dataDir, 'secret.key') },
      'generated the key that seals secrets at rest (mode 0600)',
    );
  return key;
}

async function printBootstrap(db: Db, secretBox: SecretBox, config: Config, logger: Logger): Promise<void> {
  const result = await ensureBootstrapClient(db, secretBox, config.bootstrap);
  if (result.kind === 'created') {
    // Shown once, in the start banner on stdout (never in the log stream): it is not stored in clear anywhere.
    banner.setBootstrap({
      clientId: result.clientId,
      clientSecret: result.clientSecret,
      tokenUrl: `${config.baseUrl}/auth/v1/token`,
    });
  } else if (result.kind === 'configured') {
    logger.info({ clientId: result.clientId }, 'bootstrap client from BOOTSTRAP_CLIENT_ID is ready');
  } else if (result.kind === 'deleted') {
    logger.warn(
      { clientId: result.clientId },
      'the bootstrap client from BOOTSTRAP_CLIENT_ID was deleted through the API and is not made again; unset BOOTSTRAP_CLIENT_ID/SECRET',
    );
  }
}

void main();
