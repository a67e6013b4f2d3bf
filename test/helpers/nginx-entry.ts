/**
 * The real nginx of the production shape (deploy/nginx/api.conf.template, set up by
 * scripts/stack-prod.ts's `nginxSetup`) in front of an API of the test, as the entry people and
 * senders reach. Answers once the entry proxies /health; a nginx that exits first fails with its
 * error log.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { freePort, nginxSetup } from '../../scripts/stack-prod';
import { until } from './wait';

export interface NginxEntry {
  /** http://127.0.0.1:<port> */
  url: string;
  /** Stops nginx and removes its temporary files (the caller's `dir` stays the caller's). */
  stop(): Promise<void>;
}

/** Starts nginx in front of the API listening on `apiPort`; its configuration and logs go in `dir`. */
export async function startNginxEntry(apiPort: number, dir: string): Promise<NginxEntry> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const setup = nginxSetup({
    dir: path.join(dir, 'nginx'),
    logDir: dir,
    apiPorts: [apiPort],
    listen: `127.0.0.1:${port}`,
  });
  const child = spawn(setup.bin, setup.args, { stdio: 'ignore' });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null) child.kill('SIGTERM');
    await exited;
    fs.rmSync(setup.tempDir, { recursive: true, force: true });
  };
  try {
    await until(async () => {
      if (child.exitCode !== null)
        throw new Error(
          `nginx exited (${child.exitCode}): ${fs.readFileSync(path.join(dir, 'nginx-error.log'), 'utf8')}`,
        );
      return (await fetch(`${url}/health`).catch(() => undefined))?.status === 200;
    }, 'nginx in front of the test API');
  } catch (err) {
    await stop();
    throw err;
  }
  return { url, stop };
}
