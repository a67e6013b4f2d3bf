/**
 * A fresh `npm start` for the bench sections that measure the service as a user runs it (the
 * embedded dev server, the worker and the API in one process): the start script in a process group
 * of its own with a fresh DATA_DIR and free ports, `extraEnv` over the bench's environment. Ready
 * once the API printed its address and the first client's secret; `token` is that client's.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../src/temporal/devserver';
import { sleep } from '../test/helpers/wait';

export interface NpmStart {
  /** `http://127.0.0.1:<port>`; the console's sign-in wants `BASE_URL`'s origin, `http://localhost:<port>`. */
  api: string;
  port: number;
  /** The start script's process (the leader of its group). */
  pid: number;
  /** The first client's (printed once by the banner) and a token of it. */
  clientId: string;
  clientSecret: string;
  token: string;
  /** What the service printed so far. */
  output(): string;
  dataDir: string;
  temporalPort: number;
  /** SIGTERM to the process group, then the data directory removed. */
  stop(): Promise<void>;
}

export async function startNpmStart(
  what: string,
  extraEnv: Record<string, string>,
  log: (line: string) => void,
): Promise<NpmStart> {
  const root = path.resolve(__dirname, '..');
  const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as {
    scripts: Record<string, string>;
  };
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-npm-start-'));
  const [port, temporalPort] = [await freePort(), await freePort()];
  const env = {
    ...process.env,
    PATH: `${path.join(root, 'node_modules', '.bin')}${path.delimiter}${process.env.PATH ?? ''}`,
    DATA_DIR: dataDir,
    PORT: String(port),
    TEMPORAL_PORT: String(temporalPort),
    TEMPORAL_UI_PORT: String(await freePort()),
    TEMPORAL_ADDRESS: '',
    DATABASE_URL: '',
    LOG_LEVEL: 'warn',
    ...extraEnv,
  };
  const child = spawn('/bin/sh', ['-c', pkg.scripts.start!], {
    cwd: root,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => void (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => void (output += chunk.toString()));
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      process.kill(-child.pid!, 'SIGTERM');
      await exited;
    }
    fs.rmSync(dataDir, { recursive: true, force: true });
  };
  log(`${what}: starting \`${pkg.scripts.start}\` in ${dataDir}`);
  try {
    const started = Date.now();
    while (!/^API:/m.test(output) || !/client_secret:/.test(output)) {
      if (child.exitCode !== null) throw new Error(`npm start exited:\n${output.slice(-2000)}`);
      if (Date.now() - started > 180_000) throw new Error(`npm start did not come up:\n${output.slice(-2000)}`);
      await sleep(200);
    }
    const clientId = /client_id:\s+(\S+)/.exec(output)![1]!;
    const clientSecret = /client_secret:\s+(\S+)/.exec(output)![1]!;
    const api = `http://127.0.0.1:${port}`;
    const tokenResponse = await fetch(`${api}/auth/v1/token`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret }),
    });
    const token = String(((await tokenResponse.json()) as { access_token?: string }).access_token);
    return {
      api,
      port,
      pid: child.pid!,
      clientId,
      clientSecret,
      token,
      output: () => output,
      dataDir,
      temporalPort,
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
