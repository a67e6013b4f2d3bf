/**
 * A PostgreSQL server of the drill's own (initdb in a temporary folder, its own port), so that the
 * drills can stop and start it without touching any cluster someone else uses.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freeLowPort } from '../../scripts/stack-prod';

export class OwnPostgres {
  private constructor(
    readonly dir: string,
    readonly port: number,
    private readonly bin: string,
  ) {}

  get adminUrl(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  static async create(): Promise<OwnPostgres> {
    const versions = fs.readdirSync('/usr/lib/postgresql').sort((a, b) => Number(a) - Number(b));
    const bin = path.join('/usr/lib/postgresql', versions.at(-1)!, 'bin');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'drill-pg-'));
    fs.chmodSync(dir, 0o755);
    const pg = new OwnPostgres(dir, await freeLowPort(), bin);
    if (process.getuid?.() === 0) execFileSync('chown', ['postgres', dir]);
    pg.run('initdb', ['-D', path.join(dir, 'data'), '-U', 'postgres', '--auth=trust', '-E', 'UTF8']);
    pg.start();
    return pg;
  }

  private run(tool: string, args: string[]): void {
    const command = [path.join(this.bin, tool), ...args];
    if (process.getuid?.() === 0) {
      execFileSync('su', ['postgres', '-c', command.map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ')], {
        stdio: 'ignore',
      });
    } else {
      execFileSync(command[0]!, command.slice(1), { stdio: 'ignore' });
    }
  }

  start(): void {
    const options = `-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1 -c max_connections=400 -c fsync=off`;
    this.run('pg_ctl', [
      '-D',
      path.join(this.dir, 'data'),
      '-o',
      options,
      '-l',
      path.join(this.dir, 'log'),
      '-w',
      'start',
    ]);
  }

  /** Fast shutdown: open connections are cut, as in a crash of the database host's service. */
  stop(): void {
    this.run('pg_ctl', ['-D', path.join(this.dir, 'data'), '-m', 'fast', '-w', 'stop']);
  }

  destroy(): void {
    try {
      this.stop();
    } catch {
      // already stopped
    }
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}
