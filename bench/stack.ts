/**
 * The embedded stack the benchmark measures, all started here and stopped by `stop()`: its own
 * Temporal dev server (in memory, free port, guarded by scripts/child-guard.js), the store, the
 * automation worker, a second worker running the baseline workflow (bench/workflows/bare.ts;
 * `baselineWorker: false` leaves it out), and the real Koa app on free ports, built as src/main.ts
 * builds it.
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { randomBytes, randomUUID } from 'node:crypto';
import Koa from 'koa';
import pino from 'pino';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { GuardedWorker } from '../src/temporal/activation-guard';
import { loadConfig } from '../src/config';
import { createLogger } from '../src/logger';
import { openDb, type Db } from '../src/store/db';
import { openEmbeddedStore } from '../src/store/embedded';
import { AccessTokens } from '../src/auth/tokens';
import { createClient } from '../src/auth/clients';
import { createApp } from '../src/http/app';
import { composeApp } from '../src/compose';
import type { AppDeps } from '../src/http/context';
import { SecretBox } from '../src/crypto/secret-box';
import { startDevServer, freePort, type DevServer } from '../src/temporal/devserver';
import { ensureNamespace } from '../src/temporal/setup';
import { skipDroppedSdkLogMetadata } from '../src/temporal/sdk-log-levels';
import { createLazyClient } from '../src/temporal/connection';
import { automationBundleOptions, createAutomationWorker } from '../src/temporal/worker';
import { createActivities } from '../activities';
import { bundleInChild } from './bundle-child';
import { EncryptionCodec, encryptedDataConverter, newPayloadKeyEntry, parsePayloadKeys } from '../src/temporal/codec';

/** Payloads are encrypted in the bench as in production (one fresh key per bench run). */
const BENCH_CODEC = new EncryptionCodec(parsePayloadKeys(newPayloadKeyEntry()));
import { createBareActivities } from './bare-activities';
import { commandLineOf, descendantPids } from './util';
import { NO_TEMPORAL } from '../test/helpers/engine';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { ensureTemporalCli } = require('../scripts/temporal-cli.js') as {
  ensureTemporalCli: (log: (l: string) => void) => Promise<string>;
};

export const NAMESPACE = 'default';
/** Polled by the automation worker: end-to-end runs. */
export const AUTOMATION_QUEUE = 'bench-automations';
/** Polled by the baseline worker. */
export const BARE_QUEUE = 'bench-bare';
/**
 * Polled by nobody: the ingress measurements start runs here, so that only the accept path is
 * measured (no worker competes for the two cores while requests are timed).
 */
export const UNPOLLED_QUEUE = 'bench-unpolled';

export interface Server {
  url: string;
  close(): Promise<void>;
}

export interface Stack {
  temporalAddress: string;
  /** Pid of the Temporal server process itself (not its guard), when found. */
  temporalPid: number | undefined;
  /** The benchmark's own client, for the baselines and for awaiting results. */
  client: Client;
  /** A client on the workers' native connection: eager workflow start reaches them. */
  workerClient: Client;
  db: Db;
  /** The box the store's secrets are sealed with (a second user of the store needs the same one). */
  secretBox: SecretBox;
  /** API starting runs on UNPOLLED_QUEUE (ingress, rejection). */
  ingressApi: Server;
  /** API starting runs on AUTOMATION_QUEUE (end to end). */
  e2eApi: Server;
  /** A bare Koa app answering 200 to everything (rejection baseline). */
  bareKoa: Server;
  /**
   * A bare Koa app whose one handler starts `localFour` (`POST /localThree`: `localThree`;
   * `POST /localFourWithStore`: `localFourWithStore`, whose third activity is the ownership
   * statement on the automation's store) of bench/workflows/bare.ts with the POST's JSON body as its
   * trigger, as the API starts a run (the workers' client, eager start), and answers 200
   * `{executionId}`: the webhook's round trip with nothing checked or stored.
   */
  bareStart: Server;
  adminToken: string;
  stop(): Promise<void>;
}

export interface StackOptions {
  log: (line: string) => void;
  databaseUrl: string | undefined;
  /**
   * Without databaseUrl: `dataDir` opens the embedded store as `npm start` does (PGlite files in a
   * temporary data directory, src/store/embedded.ts); `memory` (default) an in-memory PGlite,
   * whose database files are JavaScript buffers in this process (about 80 MB more resident).
   */
  embeddedStore?: 'memory' | 'dataDir';
  /** Start the baseline worker (BARE_QUEUE, bench/workflows/bare.ts); default true. The soak measures the product only. */
  baselineWorker?: boolean;
  /** The automation worker's sticky cache (`WORKER_MAX_CACHED_WORKFLOWS`); default the service's. Labs only. */
  maxCachedWorkflows?: number;
  /**
   * A directory for the dev server's SQLite file (as `npm start` keeps it: WAL, fsynced commits);
   * default in memory. The in-memory database grows about 87 KB per run it holds (docs/performance.md#constants),
   * so a section that leaves hundreds of thousands of runs (the full bulk section) keeps them on disk.
   */
  temporalDataDir?: string;
}

/** Installs the Temporal runtime once, without its own signal handlers (the benchmark stops itself). */
export function installRuntime(): void {
  Runtime.install({ logger: new DefaultLogger('WARN'), shutdownSignals: [] });
  // As src/main.ts: the SDK's trace and debug lines, dropped at WARN, build no metadata.
  skipDroppedSdkLogMetadata();
}

export async function startStack(options: StackOptions): Promise<Stack> {
  const stops: Array<() => Promise<void>> = [];
  let closeStore: (() => Promise<void>) | undefined;
  const stopAllButStore = async (): Promise<void> => {
    for (const fn of stops.reverse()) await fn().catch((err: unknown) => options.log(`stop: ${String(err)}`));
    stops.length = 0;
  };
  const stop = async (): Promise<void> => {
    await stopAllButStore();
    await closeStore?.().catch((err: unknown) => options.log(`stop: ${String(err)}`));
    closeStore = undefined;
  };
  try {
    const cliPath = await ensureTemporalCli(options.log);
    const port = await freePort();
    options.log(
      `starting the Temporal dev server (${options.temporalDataDir ? `SQLite file in ${options.temporalDataDir}` : 'in memory'}) on 127.0.0.1:${port}`,
    );
    const server: DevServer = await startDevServer({
      cliPath,
      port,
      namespace: NAMESPACE,
      ip: '127.0.0.1',
      ...(options.temporalDataDir ? { dataDir: options.temporalDataDir } : {}),
    });
    stops.push(() => server.stop());
    const temporalPid = findTemporalPid(cliPath, port);

    const connection = await Connection.connect({ address: server.address });
    stops.push(() => connection.close());
    await ensureNamespace(connection, NAMESPACE);
    const client = new Client({ connection, namespace: NAMESPACE, dataConverter: encryptedDataConverter(BENCH_CODEC) });

    const db =
      !options.databaseUrl && options.embeddedStore === 'dataDir'
        ? await openDataDirStore()
        : await openStore(options.databaseUrl);
    closeStore = () => db.close();

    options.log('bundling and starting the workers');
    const workerConnection = await NativeConnection.connect({ address: server.address });
    stops.push(() => workerConnection.close());
    // Prebuilt bundles, as production workers run them: webpack's memory stays out of this process.
    const withBaseline = options.baselineWorker ?? true;
    const [automationBundle, bareBundle] = await Promise.all([
      bundleInChild(automationBundleOptions()),
      withBaseline ? bundleInChild({ workflowsPath: path.join(__dirname, 'workflows', 'bare.ts') }) : undefined,
    ]);
    const workers = await Promise.all([
      createAutomationWorker({
        connection: workerConnection,
        namespace: NAMESPACE,
        taskQueue: AUTOMATION_QUEUE,
        db,
        activities: (engine) => createActivities({ db, allowPrivateOutbound: false, engine }),
        codec: BENCH_CODEC,
        bundle: automationBundle,
        ...(options.maxCachedWorkflows !== undefined ? { maxCachedWorkflows: options.maxCachedWorkflows } : {}),
      }),
      ...(bareBundle
        ? [
            // The automation worker's class: both sides of every ratio run with the same deadlock detection.
            GuardedWorker.create({
              connection: workerConnection,
              namespace: NAMESPACE,
              taskQueue: BARE_QUEUE,
              // The same payload encryption as the automation worker (the bench client encrypts).
              dataConverter: encryptedDataConverter(BENCH_CODEC),
              workflowBundle: bareBundle,
              activities: createBareActivities(db),
            }),
          ]
        : []),
    ]);
    for (const worker of workers) {
      const running = worker.run();
      running.catch((err: unknown) => options.log(`worker stopped: ${String(err)}`));
      stops.push(async () => {
        worker.shutdown();
        await running.catch(() => undefined);
      });
    }

    const secretBox = new SecretBox(randomBytes(32));
    // The bench's one token serves every section: it must outlive a full run (a 10,000-run bulk
    // cancel starts more than 10 minutes in).
    const tokens = await AccessTokens.load(db, secretBox, 86_400);
    const shared = { db, tokens, pageTokenKey: randomBytes(32), secretBox, temporalAddress: server.address };
    // As `npm start` (src/main.ts): the API starts runs through a client on the worker's native
    // connection, with eager workflow start; the bare baseline starts its runs the same way.
    const workerClient = new Client({
      connection: workerConnection,
      namespace: NAMESPACE,
      dataConverter: encryptedDataConverter(BENCH_CODEC),
    });
    const ingressApi = await startApi({ ...shared, taskQueue: UNPOLLED_QUEUE }, stops);
    const e2eApi = await startApi({ ...shared, taskQueue: AUTOMATION_QUEUE, runsClient: workerClient }, stops);
    const bareKoa = await startBareKoa();
    stops.push(() => bareKoa.close());
    const bareStart = await startBareKoa(async (ctx) => {
      const chunks: Buffer[] = [];
      for await (const chunk of ctx.req) chunks.push(chunk as Buffer);
      const trigger = JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
      const workflow =
        ctx.path === '/localThree'
          ? 'localThree'
          : ctx.path === '/localFourWithStore'
            ? 'localFourWithStore'
            : 'localFour';
      const workflowId = `${workflow}:${randomUUID()}`;
      await workerClient.workflow.start(workflow, {
        taskQueue: BARE_QUEUE,
        workflowId,
        args: [{ trigger }],
        requestEagerStart: true,
      });
      ctx.body = { executionId: workflowId };
    });
    stops.push(() => bareStart.close());

    return {
      temporalAddress: server.address,
      temporalPid,
      client,
      workerClient,
      db,
      secretBox,
      ingressApi,
      e2eApi,
      bareKoa,
      bareStart,
      adminToken: await tokens.issue(
        (await createClient(db, secretBox, { displayName: 'bench', roles: ['super_admin'] })).client.clientId,
        ['super_admin'],
      ),
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** A fresh store: in-memory PGlite, or a new schema in PostgreSQL (dropped on close). */
export async function openStore(databaseUrl: string | undefined): Promise<Db> {
  if (!databaseUrl) return openDb({});
  const schema = `bench_${randomBytes(6).toString('hex')}`;
  const db = await openDb({ databaseUrl, schema });
  const close = db.close.bind(db);
  return Object.assign(db, {
    async close() {
      await db.exec(`DROP SCHEMA ${schema} CASCADE`).catch(() => undefined);
      await close();
    },
  });
}

/** The embedded store as `npm start` opens it, in a temporary data directory removed on close. */
export async function openDataDirStore(): Promise<Db> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-store-'));
  try {
    const db = await openEmbeddedStore(path.join(dir, 'store'));
    const close = db.close.bind(db);
    return Object.assign(db, {
      async close() {
        await close();
        fs.rmSync(dir, { recursive: true, force: true });
      },
    });
  } catch (err) {
    fs.rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}

export interface ApiOptions {
  db: Db;
  tokens: AccessTokens;
  /** The page-token key both APIs share. */
  pageTokenKey: Buffer;
  secretBox: SecretBox;
  /** Where runs start; undefined = a server that never starts runs. */
  temporalAddress?: string;
  taskQueue?: string;
  /** Start runs through this client (on a worker's connection) with eager workflow start. */
  runsClient?: Client;
}

/**
 * The real app as src/main.ts builds it (lazy client, pino at LOG_LEVEL or info, default metrics,
 * the delivery log),
 * logging to /dev/null so that serialising log lines is measured but nothing floods the terminal.
 */
export async function startApi(
  options: ApiOptions,
  stops: Array<() => Promise<void>>,
): Promise<Server & { deps: AppDeps }> {
  const server = http.createServer();
  server.requestTimeout = 30_000;
  server.headersTimeout = 10_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const config = loadConfig({ PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: process.env.LOG_LEVEL ?? 'info' });
  let temporal: { client: Client; taskQueue: string; eagerStart: boolean } | undefined;
  if (options.runsClient && options.taskQueue) {
    temporal = { client: options.runsClient, taskQueue: options.taskQueue, eagerStart: true };
  } else if (options.temporalAddress && options.taskQueue) {
    const { client, connection } = createLazyClient(
      { address: options.temporalAddress, embedded: true },
      NAMESPACE,
      BENCH_CODEC,
    );
    stops.push(() => connection.close());
    temporal = { client, taskQueue: options.taskQueue, eagerStart: false };
  }
  // As src/main.ts: the same composition (every delivery is noted in the delivery log, buffered).
  const deps = await composeApp({
    config,
    db: options.db,
    logger: createLogger(config.logLevel, pino.destination({ dest: '/dev/null', sync: true })),
    secretBox: options.secretBox,
    ...(temporal ? { temporal } : { engine: NO_TEMPORAL }),
    pageTokenKey: options.pageTokenKey,
    tokens: options.tokens,
  });
  stops.push(() => deps.close());
  server.on('request', createApp(deps).callback());
  const close = (): Promise<void> =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  stops.push(close);
  return { url: `http://127.0.0.1:${port}`, deps, close };
}

/** A Koa app with one handler; by default the rejection baseline's, which answers 200 `{}`. */
export async function startBareKoa(
  handler: Koa.Middleware = (ctx) => {
    ctx.body = {};
  },
): Promise<Server> {
  const app = new Koa();
  app.use(handler);
  const server = http.createServer(app.callback());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** The dev server runs under a guard process; its own pid is the descendant running the CLI on `port`. */
function findTemporalPid(cliPath: string, port: number): number | undefined {
  for (const pid of descendantPids(process.pid)) {
    const argv = commandLineOf(pid);
    if (argv[0] === cliPath && argv.includes('start-dev') && argv.includes(String(port))) return pid;
  }
  return undefined;
}
