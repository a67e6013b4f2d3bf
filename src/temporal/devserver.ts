/**
 * The embedded Temporal dev server (from the Temporal CLI): SQLite file in DATA_DIR, Web UI on its
 * port. Started by `npm start`, by the test suite and by the benchmark (so the product and the
 * bench's bare baseline run on the same server settings); stopped with the process.
 *
 * Eager activity execution is on: when a workflow task completes with ScheduleActivityTask
 * commands, the server hands the activity back to the same worker in the completion response
 * instead of going through matching, which saves one task-queue dispatch per activity.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { SEARCH_ATTRIBUTE_NAMES } from './search-attributes';

/**
 * Dynamic configuration of the embedded server (for a cluster: docs/performance.md#what-keeps-each-figure-low,
 * "Engine latency").
 */
export const DYNAMIC_CONFIG: Record<string, string> = {
  'system.enableActivityEagerExecution': 'true',
  // How often a history shard's transfer queue may be read (default 20 per second). The embedded
  // server has one shard, so in steady traffic every workflow task that follows an activity waited
  // up to 50 ms to be read and dispatched (docs/performance.md#constants).
  'history.transferProcessorMaxPollRPS': '1000',
};

export interface DevServerOptions {
  cliPath: string;
  /** Directory for the SQLite file; undefined = in memory (tests). */
  dataDir?: string;
  port: number;
  /** Web UI port; undefined = headless. */
  uiPort?: number;
  /** Codec Server URL the Web UI decodes payloads with (`--ui-codec-endpoint`). */
  uiCodecEndpoint?: string;
  namespace: string;
  ip?: string;
  /** Receives the server's own output lines (warnings and errors only). */
  log?: (line: string) => void;
}

export interface DevServer {
  address: string;
  uiUrl: string | undefined;
  stop(): Promise<void>;
}

export async function startDevServer(options: DevServerOptions): Promise<DevServer> {
  const ip = options.ip ?? '127.0.0.1';
  const args = [
    'server',
    'start-dev',
    '--ip',
    ip,
    '--port',
    String(options.port),
    '--namespace',
    options.namespace,
    '--log-level',
    'error',
  ];
  for (const [key, value] of Object.entries(DYNAMIC_CONFIG)) args.push('--dynamic-config-value', `${key}=${value}`);
  if (options.dataDir) {
    fs.mkdirSync(options.dataDir, { recursive: true });
    args.push('--db-filename', path.join(options.dataDir, 'temporal.db'));
    // Write-ahead log, still fsynced at every commit (synchronous=full): as durable as SQLite's
    // default rollback journal, with one fsync per commit instead of several.
    args.push('--sqlite-pragma', 'journal_mode=wal', '--sqlite-pragma', 'synchronous=full');
  }
  if (options.uiPort !== undefined) {
    args.push('--ui-port', String(options.uiPort), '--ui-ip', ip);
    if (options.uiCodecEndpoint) args.push('--ui-codec-endpoint', options.uiCodecEndpoint);
  } else args.push('--headless');
  for (const name of SEARCH_ATTRIBUTE_NAMES) args.push('--search-attribute', `${name}=Keyword`);

  if (await isListening(ip, options.port)) {
    throw new Error(
      `port ${options.port} is already in use: is another Temporal server running? Set TEMPORAL_PORT or TEMPORAL_ADDRESS`,
    );
  }
  const [command, ...commandArgs] = guarded(options.cliPath, args);
  const child = spawn(command!, commandArgs, { stdio: ['ignore', 'pipe', 'pipe'] });
  const output: string[] = [];
  const collect = (chunk: Buffer): void => {
    for (const line of chunk.toString().split('\n')) {
      if (!line.trim()) continue;
      output.push(line);
      if (output.length > 50) output.shift();
      options.log?.(line);
    }
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));

  const deadline = Date.now() + 60_000;
  while (!(await isListening(ip, options.port))) {
    const early = await Promise.race([exited, sleep(200).then(() => 'waiting' as const)]);
    if (early !== 'waiting') {
      throw new Error(`Temporal dev server exited with code ${early}:\n${output.join('\n')}`);
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`Temporal dev server did not listen on ${ip}:${options.port} within 60 s:\n${output.join('\n')}`);
    }
  }
  return {
    address: `${ip}:${options.port}`,
    uiUrl: options.uiPort !== undefined ? `http://${ip === '0.0.0.0' ? 'localhost' : ip}:${options.uiPort}` : undefined,
    stop: () => stopChild(child, exited),
  };
}

/**
 * The server must not outlive this process, even after a SIGKILL. On Linux `setpriv --pdeathsig`
 * asks the kernel to send SIGTERM to the server when this process dies: no extra process. Else a
 * small Node process (scripts/child-guard.js) polls this process and stops the server.
 */
function guarded(command: string, args: string[]): string[] {
  if (process.platform === 'linux' && setprivPath !== null) {
    setprivPath ??= findSetpriv();
    if (setprivPath) return [setprivPath, '--pdeathsig', 'TERM', '--', command, ...args];
  }
  const guard = path.resolve(__dirname, '../../scripts/child-guard.js');
  return [process.execPath, guard, String(process.pid), command, ...args];
}

/** undefined = not looked for yet; null = not found. */
let setprivPath: string | null | undefined;

function findSetpriv(): string | null {
  for (const dir of ['/usr/bin', '/bin', '/usr/sbin', '/sbin']) {
    const candidate = path.join(dir, 'setpriv');
    try {
      fs.accessSync(candidate, fs.constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return null;
}

async function stopChild(child: ChildProcess, exited: Promise<number | null>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  // The grace timer is cleared once the child is gone: a pending timer would keep this process alive.
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), 10_000);
  });
  const result = await Promise.race([exited, timeout]);
  clearTimeout(timer);
  if (result === 'timeout') {
    child.kill('SIGKILL');
    await exited;
  }
}

export function isListening(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** A free TCP port on loopback (for tests). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as net.AddressInfo).port;
      server.close(() => resolve(port));
    });
  });
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
