/**
 * The embedded Temporal dev server (from the Temporal CLI): SQLite file in DATA_DIR, Web UI on its
 * port. Started by `npm start` and by the test suite; stopped with the process.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { SEARCH_ATTRIBUTE_NAMES } from './search-attributes';

export interface DevServerOptions {
  cliPath: string;
  /** Directory for the SQLite file; undefined = in memory (tests). */
  dataDir?: string;
  port: number;
  /** Web UI port; undefined = headless. */
  uiPort?: number;
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
  const args = ['server', 'start-dev', '--ip', ip, '--port', String(options.port), '--namespace', options.namespace, '--log-level', 'error'];
  if (options.dataDir) {
    fs.mkdirSync(options.dataDir, { recursive: true });
    args.push('--db-filename', path.join(options.dataDir, 'temporal.db'));
  }
  if (options.uiPort !== undefined) args.push('--ui-port', String(options.uiPort), '--ui-ip', ip);
  else args.push('--headless');
  for (const name of SEARCH_ATTRIBUTE_NAMES) args.push('--search-attribute', `${name}=Keyword`);

  if (await isListening(ip, options.port)) {
    throw new Error(`port ${options.port} is already in use: is another Temporal server running? Set TEMPORAL_PORT or TEMPORAL_ADDRESS`);
  }
  // The guard stops the server when this process is gone, even after a SIGKILL.
  const guard = path.resolve(__dirname, '../../scripts/child-guard.js');
  const child = spawn(process.execPath, [guard, String(process.pid), options.cliPath, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
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

async function stopChild(child: ChildProcess, exited: Promise<number | null>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  const result = await Promise.race([exited, sleep(10_000).then(() => 'timeout' as const)]);
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
