/**
 * `npx tsx bench/start-e2e.ts [runs]` (and `npm run bench`, section e2e): end-to-end latency on `npm start` itself (the embedded dev
 * server, the worker and the API in one process, as a user runs it): starts the start script with a
 * fresh DATA_DIR, creates the bench automation through the API, then times POST → workflow result
 * (observed with a long-polling Temporal client) for `runs` runs after 5 warm-up runs; prints p50/p90.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { freePort } from '../src/temporal/devserver';
import { EncryptionCodec, encryptedDataConverter, loadPayloadKeys } from '../src/temporal/codec';
import { createBenchAutomation, postEvent } from './automation';
import { closeHttpAgent, percentile } from './util';
import { sleep } from '../test/helpers/wait';

export interface StartE2eResult {
  p50Ms: number;
  p90Ms: number;
  runs: number;
  shape: string;
}

/** Measures POST → result on a fresh `npm start` (see the module comment). */
export async function runStartE2eBench(runs: number, log: (line: string) => void): Promise<StartE2eResult> {
  const root = path.resolve(__dirname, '..');
  const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as {
    scripts: Record<string, string>;
  };
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-start-e2e-'));
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
  log(`e2e on npm start: starting \`${pkg.scripts.start}\` in ${dataDir}`);
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
    const automation = await createBenchAutomation(api, token);
    const codec = new EncryptionCodec(loadPayloadKeys(undefined, dataDir).keys);
    const connection = await Connection.connect({ address: `127.0.0.1:${temporalPort}` });
    const client = new Client({ connection, namespace: 'default', dataConverter: encryptedDataConverter(codec) });
    log(`e2e on npm start: 5 warm-up runs, then ${runs}`);
    const times: number[] = [];
    for (let i = 0; i < runs + 5; i++) {
      const t0 = performance.now();
      const response = await postEvent(api, automation);
      if (response.status !== 200)
        throw new Error(`webhook answered ${response.status}: ${JSON.stringify(response.body)}`);
      await client.workflow.getHandle(String(response.body.executionId)).result();
      if (i >= 5) times.push(performance.now() - t0);
    }
    await connection.close();
    return { p50Ms: percentile(times, 50), p90Ms: percentile(times, 90), runs, shape: automation.shape };
  } finally {
    if (child.exitCode === null) {
      process.kill(-child.pid!, 'SIGTERM');
      await new Promise((resolve) => child.once('exit', resolve));
    }
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

if (require.main === module) {
  const runs = Number(process.argv[2] ?? 20);
  runStartE2eBench(runs, (line) => void process.stderr.write(`[start-e2e] ${line}\n`))
    .then((r) =>
      console.log(
        `npm start, ${r.shape}: e2e p50 ${r.p50Ms.toFixed(1)} ms, p90 ${r.p90Ms.toFixed(1)} ms (${r.runs} runs)`,
      ),
    )
    .finally(() => closeHttpAgent())
    .then(
      () => process.exit(0),
      (err: unknown) => {
        process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
        process.exit(1);
      },
    );
}
