/**
 * Soak: sustained signed deliveries through the real API and worker for `--minutes` (default 10),
 * the heap measured after a forced GC at the end of every window. Prints the heap per window, its
 * slope and the last/first ratio (flat means ≤ 1.2), and writes bench-soak-results.json.
 * `npm run bench:soak [-- --minutes 10 --connections 8]`. Never part of `npm test`.
 */
import fs from 'node:fs';
import v8 from 'node:v8';
import vm from 'node:vm';
import { installRuntime, startStack, type Stack } from './stack';
import { LoadGenerator } from './load';
import { createBenchAutomation } from './automation';
import { round, startRssSampler } from './util';

const WINDOW_SEC = 30;
const FLAT_RATIO = 1.2;

function parseArgs(argv: string[]): { minutes: number; connections: number } {
  const value = (name: string, fallback: number): number => {
    const at = argv.indexOf(`--${name}`);
    const parsed = at >= 0 ? Number(argv[at + 1]) : fallback;
    if (!Number.isFinite(parsed) || parsed <= 0) throw new Error(`--${name} must be a positive number`);
    return parsed;
  };
  return { minutes: value('minutes', 10), connections: value('connections', 8) };
}

v8.setFlagsFromString('--expose_gc');
const gc = vm.runInNewContext('gc') as () => void;

function heapAfterGcMb(): number {
  gc();
  gc();
  return process.memoryUsage().heapUsed / 1024 / 1024;
}

/** Least-squares slope of y over x. */
function slope(xs: number[], ys: number[]): number {
  const n = xs.length;
  const mx = xs.reduce((a, b) => a + b, 0) / n;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  let num = 0;
  let den = 0;
  for (let i = 0; i < n; i += 1) {
    num += (xs[i]! - mx) * (ys[i]! - my);
    den += (xs[i]! - mx) ** 2;
  }
  return den === 0 ? 0 : num / den;
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const log = (line: string): void => console.error(`[soak] ${line}`);
  installRuntime();
  let stack: Stack | undefined;
  let load: LoadGenerator | undefined;
  try {
    // The product only: the store as `npm start` has it (files in a data directory, not in memory),
    // and no baseline worker (the soak compares nothing with it).
    stack = await startStack({ log, databaseUrl: undefined, embeddedStore: 'dataDir', baselineWorker: false });
    // Peak RSS under load, from the end of start-up (after a GC: start-up garbage is not load).
    heapAfterGcMb();
    const rssSampler = startRssSampler(200);
    load = await LoadGenerator.start();
    const automation = await createBenchAutomation(stack.e2eApi.url, stack.adminToken);
    const windows = Math.max(2, Math.round((args.minutes * 60) / WINDOW_SEC));
    const samples: Array<{
      minute: number;
      heapMb: number;
      rssMb: number;
      accepted: number;
      perSec: number;
      other: Record<string, number>;
    }> = [];
    log(`${windows} windows of ${WINDOW_SEC}s at ${args.connections} connections: ${automation.shape}`);
    for (let window = 1; window <= windows; window += 1) {
      const result = await load.run({
        url: `${stack.e2eApi.url}${automation.listenerPath}`,
        connections: args.connections,
        durationSec: WINDOW_SEC,
        body: automation.body,
        secret: automation.signingSecret,
        mode: 'valid',
        expectStatus: 200,
      });
      const { '200': _accepted, ...other } = result.statuses;
      const sample = {
        minute: round((window * WINDOW_SEC) / 60, 1),
        heapMb: round(heapAfterGcMb(), 1),
        rssMb: round(process.memoryUsage().rss / 1024 / 1024, 1),
        accepted: result.expected,
        perSec: round(result.perSec, 1),
        other,
      };
      samples.push(sample);
      log(
        `minute ${sample.minute}: heap ${sample.heapMb} MB, rss ${sample.rssMb} MB, ${sample.perSec} accepted/s ${Object.keys(other).length ? JSON.stringify(other) : ''}`,
      );
    }
    // The first window warms caches, compiled code and pools: growth is measured from the second.
    const measured = samples.slice(1);
    const first = measured[0]!;
    const last = measured[measured.length - 1]!;
    const result = {
      minutes: args.minutes,
      connections: args.connections,
      acceptedTotal: samples.reduce((sum, s) => sum + s.accepted, 0),
      heapFirstMb: first.heapMb,
      heapLastMb: last.heapMb,
      heapGrowthRatio: round(last.heapMb / first.heapMb, 3),
      heapSlopeMbPerMin: round(
        slope(
          measured.map((s) => s.minute),
          measured.map((s) => s.heapMb),
        ),
        3,
      ),
      flat: last.heapMb / first.heapMb <= FLAT_RATIO,
      /** Peak RSS of this process (the APIs, the automation worker, the embedded store as npm start has it) under load, sampled every 200 ms. */
      peakRssMb: round(rssSampler.stop(), 1),
      samples,
    };
    fs.writeFileSync('bench-soak-results.json', `${JSON.stringify(result, null, 2)}\n`);
    console.log(
      `soak ${args.minutes} min: ${result.acceptedTotal} accepted; heap after GC ${first.heapMb} → ${last.heapMb} MB ` +
        `(ratio ${result.heapGrowthRatio}, slope ${result.heapSlopeMbPerMin} MB/min): ${result.flat ? 'FLAT' : 'GROWING'}; peak RSS ${result.peakRssMb} MB (goal ≤ 600)`,
    );
  } finally {
    await load?.close();
    await stack?.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
