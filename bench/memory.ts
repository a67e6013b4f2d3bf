/**
 * Memory: an idle `npm start` counted as a user's `ps` counts it. `npm start` runs in a process
 * group of its own (a fresh DATA_DIR, free ports), and a few seconds after the API printed its
 * address the RSS of every process in that group is summed: npm itself, the shell npm runs the
 * script with (when there is one), the service, the Temporal dev server. PSS (shared pages counted
 * once across processes, e.g. the node binary's code in npm and in the service) is summed beside it.
 * Its floor (`runMemoryFloorBench`) is counted the same way: `npm run bench:memory-floor`
 * (bench/memory-floor.js: the same dev server, and one Node process with `npm start`'s flags that
 * holds a bare Koa server, PGlite opened as the service opens it, a Temporal client and a worker
 * with one empty workflow), the same wait after it says it is ready.
 * Read from /proc (Linux only).
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../src/temporal/devserver';
import { commandLineOf } from './util';
import { sleep } from '../test/helpers/wait';

/** The goal for `idleRssMb` (issue: idle `npm start` ≤ 400 MB, every process of its group). */
export const IDLE_RSS_GOAL_MB = 400;

export interface IdleProcess {
  pid: number;
  command: string;
  rssMb: number;
  pssMb: number | undefined;
}

export interface MemoryResult {
  /** Sum of the RSS (VmRSS, what `ps -o rss` shows) of every process in `npm start`'s process group. */
  idleRssMb: number;
  /** Sum of their PSS (/proc/<pid>/smaps_rollup); undefined when a process's PSS could not be read. */
  idlePssMb: number | undefined;
  processes: IdleProcess[];
}

function statusKb(pid: number, field: string): number | undefined {
  try {
    const match = new RegExp(`^${field}:\\s+(\\d+)\\s+kB`, 'm').exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) : undefined;
  } catch {
    return undefined;
  }
}

function pssKb(pid: number): number | undefined {
  try {
    const match = /^Pss:\s+(\d+)\s+kB/m.exec(fs.readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'));
    return match ? Number(match[1]) : undefined;
  } catch {
    return undefined;
  }
}

/** Pids whose process group is `pgid`, as `ps -g <pgid>` lists them (from /proc/<pid>/stat). */
export function processGroupPids(pgid: number): number[] {
  const pids: number[] = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${name}/stat`, 'utf8');
      // "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses, so split after the last ')'.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[2]) === pgid) pids.push(Number(name));
    } catch {
      /* gone meanwhile */
    }
  }
  return pids.sort((a, b) => a - b);
}

/** A short name for a process: `npm start`, `sh`, `node scripts/start.js`, `temporal`, … */
function commandOf(pid: number): string {
  const argv = commandLineOf(pid);
  const program = path.basename(argv[0] ?? '?');
  if (program === 'npm' || argv.some((a) => /npm-cli\.js$/.test(a))) return 'npm';
  if (program === 'node') return `node ${argv.slice(1).find((a) => !a.startsWith('-')) ?? ''}`.trim();
  return program;
}

/** How to run `npm <args>`: the npm that runs this bench (npm_execpath) when there is one, else `npm` on PATH. */
function npmCommand(npmArgs: string[]): [string, string[]] {
  const npmCli = process.env.npm_execpath;
  if (npmCli && /\.js$/.test(npmCli)) return [process.execPath, [npmCli, ...npmArgs]];
  return ['npm', npmArgs];
}

/**
 * An idle `npm start`, counted over its process group `settleMs` after the API printed its address;
 * `env` over the bench's environment (the tracing section's OTEL_* variables).
 */
export function runMemoryBench(
  options: { settleMs: number; env?: Record<string, string> },
  log: (line: string) => void,
): Promise<MemoryResult> {
  return measureIdleGroup({ npmArgs: ['start'], ready: /^API:/m, what: '`npm start`', ...options }, log);
}

/** The floor of that figure (bench/memory-floor.js), counted the same way `settleMs` after it is ready. */
export function runMemoryFloorBench(options: { settleMs: number }, log: (line: string) => void): Promise<MemoryResult> {
  return measureIdleGroup(
    { npmArgs: ['run', 'bench:memory-floor'], ready: /^floor ready/m, what: 'the floor', ...options },
    log,
  );
}

async function measureIdleGroup(
  {
    npmArgs,
    ready: readyLine,
    what,
    settleMs,
    env: extraEnv = {},
  }: { npmArgs: string[]; ready: RegExp; what: string; settleMs: number; env?: Record<string, string> },
  log: (line: string) => void,
): Promise<MemoryResult> {
  const root = path.resolve(__dirname, '..');
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-idle-'));
  const env = {
    ...process.env,
    DATA_DIR: dataDir,
    PORT: String(await freePort()),
    TEMPORAL_PORT: String(await freePort()),
    TEMPORAL_UI_PORT: String(await freePort()),
    TEMPORAL_ADDRESS: '',
    DATABASE_URL: '',
    LOG_LEVEL: 'warn',
    ...extraEnv,
  };
  const [command, args] = npmCommand(npmArgs);
  log(`memory: ${what} in its own process group, DATA_DIR ${dataDir}`);
  // detached: a new session and process group led by npm, as a terminal gives `npm start` one.
  const child = spawn(command, args, { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const pgid = child.pid!;
  let output = '';
  const ready = new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (readyLine.test(output)) resolve();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.once('exit', (code) => reject(new Error(`${what} exited with ${code}:\n${output.slice(-2000)}`)));
  });
  try {
    await ready;
    await sleep(settleMs);
    const processes = processGroupPids(pgid)
      .map((pid) => {
        const rssKb = statusKb(pid, 'VmRSS');
        if (rssKb === undefined) return undefined; // gone, or a zombie
        const pss = pssKb(pid);
        return { pid, command: commandOf(pid), rssMb: rssKb / 1024, pssMb: pss === undefined ? undefined : pss / 1024 };
      })
      .filter((p): p is IdleProcess => p !== undefined);
    const idleRssMb = processes.reduce((sum, p) => sum + p.rssMb, 0);
    const idlePssMb = processes.every((p) => p.pssMb !== undefined)
      ? processes.reduce((sum, p) => sum + p.pssMb!, 0)
      : undefined;
    log(
      `memory: ${what} idle RSS ${idleRssMb.toFixed(0)} MB, PSS ${idlePssMb?.toFixed(0) ?? '?'} MB: ` +
        processes.map((p) => `${p.command} ${p.rssMb.toFixed(0)}/${p.pssMb?.toFixed(0) ?? '?'}`).join(', '),
    );
    return { idleRssMb, idlePssMb, processes };
  } finally {
    // The whole group: npm, its shell, the service and the dev server.
    try {
      process.kill(-pgid, 'SIGTERM');
    } catch {
      /* already gone */
    }
    await new Promise((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) resolve(undefined);
      else child.once('exit', resolve);
    });
    // The service stops the dev server on SIGTERM; wait until no process of the group is left.
    for (let i = 0; i < 100 && processGroupPids(pgid).length > 0; i++) await sleep(100);
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}
