#!/usr/bin/env node
/**
 * The floor of idle memory: what a service of `npm start`'s shape holds with nothing of ours, for
 * bench/memory.ts to count as it counts `npm start` (`npm run bench:memory-floor`, in a process
 * group of its own). One Node process, started by npm with `npm start`'s flags, that holds
 *   - the Temporal dev server `npm start` runs (the same CLI, flags and SQLite file in DATA_DIR:
 *     src/temporal/devserver.ts, compiled in dist/ as `npm start` runs it),
 *   - a bare Koa server on PORT,
 *   - PGlite in DATA_DIR/store as the service opens its embedded store (created by a child process,
 *     `shared_buffers=8MB`, pg_trgm, WebAssembly on the baseline compiler), with one table,
 *   - a Temporal client and one Worker polling a task queue, with a bundle of one empty workflow
 *     (bench/workflows/empty.ts, bundled by a child process with the service's source-map setting)
 *     and no activities.
 * Prints `floor ready` on stdout once all of it runs; stops on SIGTERM or SIGINT.
 * Plain JavaScript, run as is: no TypeScript loader in the process it measures.
 */
'use strict';
const { fork } = require('node:child_process');
const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');
const v8 = require('node:v8');

const ROOT = path.resolve(__dirname, '..');
/** The service's embedded-store settings (src/store/db.ts, PGLITE_SETTINGS). */
const PGLITE_SETTINGS = ['-c', 'shared_buffers=8MB'];
/** The service's workflow source map (src/temporal/worker.ts, WORKFLOW_SOURCE_MAP). */
const WORKFLOW_SOURCE_MAP = 'inline-nosources-cheap-module-source-map';
const TASK_QUEUE = 'memory-floor';
/** What the process holds while it idles, as the service holds its parts (nothing of it may be collected). */
let held;

async function pgliteOptions(storeDir) {
  const { PGlite } = await import('@electric-sql/pglite');
  const { pg_trgm } = await import('@electric-sql/pglite/contrib/pg_trgm');
  return {
    PGlite,
    options: {
      dataDir: storeDir,
      startParams: [...PGlite.defaultStartParams, ...PGLITE_SETTINGS],
      extensions: { pg_trgm },
    },
  };
}

/** Child: creates the store with its one table (initdb's memory leaves with this process, as in the service). */
async function createStore(storeDir) {
  fs.mkdirSync(path.dirname(storeDir), { recursive: true });
  const { PGlite, options } = await pgliteOptions(storeDir);
  const pg = await PGlite.create(options);
  await pg.exec('CREATE EXTENSION IF NOT EXISTS pg_trgm; CREATE TABLE item (id text PRIMARY KEY, body jsonb NOT NULL)');
  await pg.close();
}

/** Child: bundles the empty workflow into `out` (webpack's memory leaves with this process, as in the service). */
async function bundle(out) {
  const { bundleWorkflowCode } = require('@temporalio/worker');
  const quiet = { info() {}, warn() {}, error() {}, debug() {}, trace() {}, log() {} };
  const { code } = await bundleWorkflowCode({
    workflowsPath: path.join(__dirname, 'workflows', 'empty.ts'),
    webpackConfigHook: (config) => ({ ...config, devtool: WORKFLOW_SOURCE_MAP }),
    logger: quiet,
  });
  fs.writeFileSync(out, code);
}

function inChild(mode, arg) {
  return new Promise((resolve, reject) => {
    const child = fork(path.join(__dirname, 'memory-floor.js'), [mode, arg], {
      execArgv: process.execArgv,
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    });
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${mode} failed (${code})`))));
  });
}

async function main() {
  const dataDir = path.resolve(process.env.DATA_DIR || '.data/memory-floor');
  const port = Number(process.env.PORT || 8090);
  const temporalPort = Number(process.env.TEMPORAL_PORT || 7243);
  const uiPort = Number(process.env.TEMPORAL_UI_PORT || 8243);
  const namespace = 'default';
  fs.mkdirSync(dataDir, { recursive: true });

  // The dev server's launcher is the service's own (compiled into dist/ as `npm start` does).
  await require(path.join(ROOT, 'scripts', 'start.js')).ensureBuilt();
  const { startDevServer } = require(path.join(ROOT, 'dist', 'src', 'temporal', 'devserver.js'));
  const { ensureTemporalCli } = require(path.join(ROOT, 'dist', 'src', 'temporal', 'temporal-cli.js'));

  const storeDir = path.join(dataDir, 'store');
  const bundlePath = path.join(dataDir, 'workflow-bundle.js');
  // As in the service: the dev server, the store's creation and the bundle at the same time.
  const [server] = await Promise.all([
    ensureTemporalCli(() => undefined).then((cliPath) =>
      startDevServer({
        cliPath,
        dataDir: path.join(dataDir, 'temporal'),
        port: temporalPort,
        uiPort,
        uiCodecEndpoint: `http://127.0.0.1:${port}/codec`,
        namespace,
        ip: '127.0.0.1',
      }),
    ),
    fs.existsSync(path.join(storeDir, 'PG_VERSION')) ? undefined : inChild('create-store', storeDir),
    inChild('bundle', bundlePath),
  ]);

  v8.setFlagsFromString('--liftoff-only');
  const { PGlite, options } = await pgliteOptions(storeDir);
  const pg = await PGlite.create(options);
  await pg.query('SELECT count(*) FROM item');

  const Koa = require('koa');
  const app = new Koa();
  app.use((ctx) => {
    ctx.body = { ok: true };
  });
  const httpServer = http.createServer(app.callback());
  await new Promise((resolve, reject) => {
    httpServer.once('error', reject);
    httpServer.listen(port, '127.0.0.1', resolve);
  });

  const { DefaultLogger, NativeConnection, Runtime, Worker } = require('@temporalio/worker');
  const { Client } = require('@temporalio/client');
  Runtime.install({ logger: new DefaultLogger('WARN'), shutdownSignals: [] });
  const connection = await NativeConnection.connect({ address: server.address });
  const client = new Client({ connection, namespace });
  const worker = await Worker.create({
    connection,
    namespace,
    taskQueue: TASK_QUEUE,
    workflowBundle: { codePath: bundlePath },
  });
  const running = worker.run();
  held = { pg, httpServer, client, worker };

  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    held.worker.shutdown();
    await running.catch(() => undefined);
    await connection.close();
    await held.pg.close();
    await new Promise((resolve) => held.httpServer.close(resolve));
    await server.stop();
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop());
  process.on('SIGINT', () => void stop());
  // The client is held, as the service holds its own; one call shows it is connected.
  await held.client.workflowService.getSystemInfo({});
  console.log(`floor ready: Koa on 127.0.0.1:${port}, Temporal ${server.address}, task queue ${TASK_QUEUE}`);
}

const [mode, arg] = process.argv.slice(2);
const task = mode === 'create-store' ? createStore(arg) : mode === 'bundle' ? bundle(arg) : main();
task.then(
  () => {
    if (mode) process.exit(0);
  },
  (err) => {
    console.error(err && err.stack ? err.stack : String(err));
    process.exit(1);
  },
);
