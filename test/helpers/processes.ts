/**
 * The service's roles as real OS processes, for crash and restart tests: `tsx src/main.ts api` and
 * `tsx src/main.ts worker`, each in a process group of its own (tsx runs the program in a child
 * process, so a SIGKILL must reach the whole group), behind scripts/child-guard.js so that nothing
 * outlives the test process even when jest itself is killed.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { sleep } from './wait';

export const REPO_ROOT = path.resolve(__dirname, '../..');
const TSX_CLI = path.join(REPO_ROOT, 'node_modules/tsx/dist/cli.mjs');
const CHILD_GUARD = path.join(REPO_ROOT, 'scripts/child-guard.js');

export type ServiceRole = 'api' | 'worker';

export interface ServiceProcess {
  role: ServiceRole;
  /** Pid of the process-group leader (the guard). */
  pid: number;
  /** Resolves with the exit code (or signal name) once the group leader has exited. */
  exited: Promise<number | string>;
  /** The last lines the process wrote (stdout and stderr), for failure messages. */
  output(): string;
  /** Sends `signal` to the whole process group and waits until the leader has exited. */
  kill(signal: NodeJS.Signals): Promise<void>;
}

const running = new Set<ServiceProcess>();

/** Starts `tsx src/main.ts <role>` with exactly `env` added to a minimal environment. */
export function spawnService(role: ServiceRole, env: Record<string, string>): ServiceProcess {
  const child: ChildProcess = spawn(
    process.execPath,
    [CHILD_GUARD, String(process.pid), process.execPath, TSX_CLI, 'src/main.ts', role],
    {
      cwd: REPO_ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? REPO_ROOT, ...env },
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  if (child.pid === undefined) throw new Error(`could not start the ${role} process`);
  const pid = child.pid;
  const lines: string[] = [];
  const collect = (chunk: Buffer): void => {
    for (const line of chunk.toString('utf8').split('\n')) {
      if (!line.trim()) continue;
      lines.push(line);
      if (lines.length > 200) lines.shift();
    }
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  const exited = new Promise<number | string>((resolve) => {
    child.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown'));
  });
  const service: ServiceProcess = {
    role,
    pid,
    exited,
    output: () => lines.join('\n'),
    async kill(signal) {
      try {
        process.kill(-pid, signal);
      } catch {
        // the group is already gone
      }
      await exited;
      running.delete(service);
    },
  };
  running.add(service);
  void exited.then(() => running.delete(service));
  return service;
}

/** SIGKILLs every service process this test file started and that is still running. */
export async function killAllServices(): Promise<void> {
  await Promise.all([...running].map((service) => service.kill('SIGKILL')));
}

/** Polls `GET url` until it answers 200; throws after `timeoutMs` or when `alive` has settled. */
export async function waitForHttp(url: string, timeoutMs: number, alive?: ServiceProcess): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let exitedWith: number | string | undefined;
  void alive?.exited.then((code) => (exitedWith = code));
  for (;;) {
    if (exitedWith !== undefined)
      throw new Error(`${alive?.role} process exited (${exitedWith}) before ${url} answered:\n${alive?.output()}`);
    if ((await httpStatus(url)) === 200) return;
    if (Date.now() > deadline)
      throw new Error(`${url} did not answer 200 within ${timeoutMs} ms${alive ? `:\n${alive.output()}` : ''}`);
    await sleep(250);
  }
}

function httpStatus(url: string): Promise<number> {
  return new Promise((resolve) => {
    const req = http.get(url, { agent: false, timeout: 5000 }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', () => resolve(0));
  });
}

/** Identities of the workers polling the workflow task queue `taskQueue` now. */
export async function workflowPollers(client: Client, taskQueue: string): Promise<string[]> {
  const described = await client.workflowService.describeTaskQueue({
    namespace: client.options.namespace,
    taskQueue: { name: taskQueue, kind: temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
    taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
  });
  return (described.pollers ?? []).map((poller) => poller.identity ?? '').filter((identity) => identity !== '');
}

/**
 * Waits until a worker identity not in `known` polls `taskQueue` (a worker process identifies as
 * `<pid>@<host>`, so a restarted worker shows up as a new identity). Returns that identity.
 */
export async function waitForNewPoller(
  client: Client,
  taskQueue: string,
  known: Set<string>,
  timeoutMs: number,
  alive?: ServiceProcess,
): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  let exitedWith: number | string | undefined;
  void alive?.exited.then((code) => (exitedWith = code));
  for (;;) {
    if (exitedWith !== undefined)
      throw new Error(`worker process exited (${exitedWith}) before polling:\n${alive?.output()}`);
    const fresh = (await workflowPollers(client, taskQueue).catch(() => [])).find((identity) => !known.has(identity));
    if (fresh !== undefined) return fresh;
    if (Date.now() > deadline)
      throw new Error(`no new worker polled ${taskQueue} within ${timeoutMs} ms${alive ? `:\n${alive.output()}` : ''}`);
    await sleep(500);
  }
}
