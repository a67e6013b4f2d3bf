/**
 * `npm start` as a user runs it (the package.json start script, embedded defaults, a fresh
 * DATA_DIR, free ports): it creates the embedded store in a short-lived child process and bundles
 * the workflow code in another, so once it serves, its only child is the Temporal dev server;
 * that server does not outlive a SIGKILLed service (Linux); a second start opens the existing store.
 * The service has started its idle memory trimmer (Linux).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { reservedPort } from '../helpers/ports';
import { poll, until } from '../helpers/wait';

const ROOT = path.resolve(__dirname, '../..');
const START_SCRIPT = (
  JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }
).scripts.start!;
const linux = process.platform === 'linux';

interface Started {
  child: ChildProcess;
  baseUrl: string;
  output(): string;
  exited: Promise<unknown>;
}

/** Time one `npm start` gets to serve (creating the store and bundling on a loaded machine). */
const START_MS = 150_000;
/** A console build started in the background at a lower priority (scripts/start.js) ends within it. */
const CONSOLE_BUILD_MS = 240_000;
/** Starts made when a port turned out to be taken meanwhile (each with new ports). */
const PORT_CLASH_ATTEMPTS = 3;

/** `npm start` on free ports; started again on new ports when one was taken between reserving and binding. */
async function npmStart(dataDir: string): Promise<Started> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await npmStartOnce(dataDir);
    } catch (err) {
      if (!(err instanceof PortClash) || attempt >= PORT_CLASH_ATTEMPTS) throw err;
    }
  }
}

class PortClash extends Error {}

async function npmStartOnce(dataDir: string): Promise<Started> {
  const port = await reservedPort();
  const child = spawn('/bin/sh', ['-c', START_SCRIPT], {
    cwd: ROOT,
    env: {
      ...process.env,
      PATH: `${path.join(ROOT, 'node_modules', '.bin')}${path.delimiter}${process.env.PATH ?? ''}`,
      DATA_DIR: dataDir,
      PORT: String(port),
      TEMPORAL_PORT: String(await reservedPort()),
      TEMPORAL_UI_PORT: String(await reservedPort()),
      TEMPORAL_ADDRESS: '',
      DATABASE_URL: '',
      LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  let timedOut: unknown;
  await until(
    async () => /^API:/m.test(output) || child.exitCode !== null,
    'npm start to print its API: line or to exit',
    {
      timeoutMs: START_MS,
      intervalMs: 250,
    },
  ).then(
    () => undefined,
    (err: unknown) => (timedOut = err),
  );
  if (timedOut !== undefined || child.exitCode !== null) {
    if (child.exitCode === null) {
      child.kill('SIGKILL');
      await exited;
    }
    const message = `npm start did not serve${timedOut instanceof Error ? ` (${timedOut.message})` : ''}:\n${output.slice(-3000)}`;
    throw /EADDRINUSE|address already in use/i.test(output) ? new PortClash(message) : new Error(message);
  }
  return { child, baseUrl: `http://127.0.0.1:${port}`, output: () => output, exited };
}

function childPids(pid: number): number[] {
  try {
    return fs
      .readdirSync(`/proc/${pid}/task`)
      .flatMap((task) => fs.readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').split(' '))
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
}

function alive(pid: number): boolean {
  try {
    // A zombie (state Z) has exited already.
    return !/^State:\s+Z/m.test(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  } catch {
    return false;
  }
}

function commandOf(pid: number): string {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
  } catch {
    return '';
  }
}

describe('npm start (embedded defaults)', () => {
  // Each test has a DATA_DIR of its own, so they hold in any order.
  const dataDirs: string[] = [];
  const newDataDir = (): string => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'npm-start-'));
    dataDirs.push(dir);
    return dir;
  };
  let started: Started | undefined;
  const stop = async (): Promise<void> => {
    if (started && started.child.exitCode === null && started.child.signalCode === null) {
      started.child.kill('SIGTERM');
      await started.exited;
    }
    started = undefined;
  };
  afterEach(stop);
  afterAll(() => {
    for (const dir of dataDirs) fs.rmSync(dir, { recursive: true, force: true });
  });

  it(
    'creates the store and the bundle in child processes that are gone once it serves; its only child is the dev server',
    async () => {
      const dataDir = newDataDir();
      started = await npmStart(dataDir);
      expect((await fetch(`${started.baseUrl}/health`)).status).toBe(200);
      expect(fs.existsSync(path.join(dataDir, 'store', 'PG_VERSION'))).toBe(true);
      expect(started.output()).toMatch(/embedded store created/);
      // A console never built is built in the background while the service starts (a child of its
      // own until it ends): the children are read once that build has ended.
      if (/Building the console/.test(started.output())) {
        await until(
          async () => /\.\.\. console built in/.test(started!.output()),
          'the background console build to end',
          {
            timeoutMs: CONSOLE_BUILD_MS,
            intervalMs: 250,
          },
        );
      }
      if (linux) {
        const children = childPids(started.child.pid!);
        expect(children.map(commandOf).filter((command) => !/node_modules\/@esbuild\//.test(command))).toEqual([
          expect.stringMatching(/temporal server start-dev/),
        ]);
        // The idle memory trimmer (MEMORY_TRIM, on by default) has loaded glibc's malloc_trim through koffi.
        expect(fs.readFileSync(`/proc/${started.child.pid!}/maps`, 'utf8')).toMatch(/koffi[^\n]*\.node\n/);
      }
    },
    PORT_CLASH_ATTEMPTS * START_MS + CONSOLE_BUILD_MS + 60_000,
  );

  (linux ? it : it.skip)(
    `the dev server does not outlive a SIGKILLed service; a second start opens the existing store${linux ? '' : ' (skipped: reads /proc, Linux only)'}`,
    async () => {
      const dataDir = newDataDir();
      started = await npmStart(dataDir);
      expect(started.output()).toMatch(/embedded store created/);
      await stop();
      started = await npmStart(dataDir);
      expect(started.output()).not.toMatch(/embedded store created/);
      expect(started.output()).toMatch(/store ready/);
      expect((await fetch(`${started.baseUrl}/health`)).status).toBe(200);
      const devServer = childPids(started.child.pid!).find((pid) => /temporal server start-dev/.test(commandOf(pid)));
      expect(devServer).toEqual(expect.any(Number));
      started.child.kill('SIGKILL');
      await started.exited;
      const gone = await poll(
        async () => !alive(devServer!),
        (done) => done,
        30_000,
      );
      expect(gone).toBe(true);
    },
    2 * PORT_CLASH_ATTEMPTS * START_MS + 60_000,
  ); // two starts, each possibly retried on a port clash
});
