/**
 * `npx tsx bench/start-e2e.ts [runs]` (and `npm run bench`, section e2e): end-to-end latency on `npm start` itself (the embedded dev
 * server, the worker and the API in one process, as a user runs it): starts the start script with a
 * fresh DATA_DIR, creates the bench automation through the API, then times POST → workflow result
 * (observed with a long-polling Temporal client) for `runs` runs after 5 warm-up runs; prints p50/p90.
 */
import { Client, Connection } from '@temporalio/client';
import { EncryptionCodec, encryptedDataConverter, loadPayloadKeys } from '../src/temporal/codec';
import { createBenchAutomation, postEvent } from './automation';
import { closeHttpAgent, percentile } from './util';
import { startNpmStart } from './npm-start';

export interface StartE2eResult {
  p50Ms: number;
  p90Ms: number;
  runs: number;
  shape: string;
}

/** Measures POST → result on a fresh `npm start` (see the module comment). */
export async function runStartE2eBench(runs: number, log: (line: string) => void): Promise<StartE2eResult> {
  const service = await startNpmStart('e2e on npm start', {}, log);
  const { api, token, dataDir, temporalPort } = service;
  try {
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
    await service.stop();
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
