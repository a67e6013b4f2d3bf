/**
 * Memory: RSS of every process of an idle `npm start` (the service, the embedded Temporal dev
 * server and anything else it spawned), in a fresh DATA_DIR on free ports, a few seconds after
 * the API printed its address. Summed from /proc (Linux only).
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../src/temporal/devserver';
import { descendantPids } from './util';
import { sleep } from '../test/helpers/wait';

export interface MemoryResult {
  idleRssMb: number;
  /** RSS per process, by command name. */
  processes: Array<{ pid: number; command: string; rssMb: number }>;
}

function rssMb(pid: number): number | undefined {
  try {
    const match = /^VmRSS:\s+(\d+)\s+kB/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) / 1024 : undefined;
  } catch {
    return undefined;
  }
}

function commandOf(pid: number): string {
  try {
    return path.basename(fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0] ?? '?');
  } catch {
    return '?';
  }
}

export async function runMemoryBench(options: { settleMs: number }, log: (line: string) => void): Promise<MemoryResult> {
  const root = path.resolve(__dirname, '..');
  const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-idle-'));
  const env = {
    ...process.env,
    // as npm run does
    PATH: `${path.join(root, 'node_modules', '.bin')}${path.delimiter}${process.env.PATH ?? ''}`,
    DATA_DIR: dataDir,
    PORT: String(await freePort()),
    TEMPORAL_PORT: String(await freePort()),
    TEMPORAL_UI_PORT: String(await freePort()),
    TEMPORAL_ADDRESS: '',
    DATABASE_URL: '',
    LOG_LEVEL: 'warn',
  };
  // `npm start` without npm's own process: the start script itself, through a shell.
  log(`memory: starting \`${pkg.scripts.start}\` in ${dataDir}`);
  const child = spawn('/bin/sh', ['-c', `exec ${pkg.scripts.start}`], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const ready = new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (/^API:/m.test(output)) resolve();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.once('exit', (code) => reject(new Error(`npm start exited with ${code}:\n${output.slice(-2000)}`)));
  });
  try {
    await ready;
    await sleep(options.settleMs);
    const pids = [child.pid!, ...descendantPids(child.pid!)];
    const processes = pids
      .map((pid) => ({ pid, command: commandOf(pid), rssMb: rssMb(pid) }))
      .filter((p): p is { pid: number; command: string; rssMb: number } => p.rssMb !== undefined);
    const idleRssMb = processes.reduce((sum, p) => sum + p.rssMb, 0);
    log(`memory: idle RSS ${idleRssMb.toFixed(0)} MB: ${processes.map((p) => `${p.command} ${p.rssMb.toFixed(0)}`).join(', ')}`);
    return { idleRssMb, processes };
  } finally {
    child.kill('SIGTERM');
    await new Promise((resolve) => {
      if (child.exitCode !== null) resolve(undefined);
      else child.once('exit', resolve);
    });
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}
