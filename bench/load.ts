/**
 * Drives the load-generator child process (bench/loadgen.ts): one child for the whole benchmark,
 * one autocannon job at a time, killed by `close()`.
 */
import { fork, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import type { LoadJob, LoadResult } from './loadgen';

export class LoadGenerator {
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (r: LoadResult) => void; reject: (e: Error) => void }>();

  private constructor(private readonly child: ChildProcess) {
    child.on('message', (message: { id?: number; result?: LoadResult; error?: string }) => {
      if (message.id === undefined) return;
      const waiter = this.pending.get(message.id);
      this.pending.delete(message.id);
      if (message.error !== undefined) waiter?.reject(new Error(`load generator: ${message.error}`));
      else if (message.result) waiter?.resolve(message.result);
    });
    child.on('exit', (code) => {
      for (const waiter of this.pending.values()) waiter.reject(new Error(`load generator exited with code ${code}`));
      this.pending.clear();
    });
  }

  /** Forks the child with this process's loader flags (tsx), and waits until it is ready. */
  static async start(): Promise<LoadGenerator> {
    const child = fork(path.join(__dirname, 'loadgen.ts'), [], {
      execArgv: process.execArgv,
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    await new Promise<void>((resolve, reject) => {
      child.once('message', () => resolve());
      child.once('exit', (code) => reject(new Error(`load generator exited with code ${code} before it was ready`)));
    });
    return new LoadGenerator(child);
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  run(job: LoadJob): Promise<LoadResult> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.child.send({ id, job });
    });
  }

  async close(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
    this.child.disconnect();
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(timer);
  }
}
