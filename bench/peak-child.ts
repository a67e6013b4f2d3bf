/**
 * One peak of `memory.apiWorkerPeakRssMb` or of its floor, in a process of its own (bench/run.ts
 * forks it with its own Node flags and environment): a fresh stack (Temporal dev server, workers,
 * store, the API), the bench automation, then the ingress load on one side alone for the
 * section's warm-up and one round's time (bench/webhooks.ts `peakUnderIngress`), while this
 * process's RSS is sampled every 50 ms. A process of its own, as `npm start`'s node process: the
 * bench's own process keeps what its earlier sections left (their heap, freed memory malloc keeps),
 * which moved the peak by tens of MB from run to run. Answers `{ peakRssMb, perSec }` on IPC.
 */
import { createBenchAutomation } from './automation';
import { LoadGenerator } from './load';
import { installRuntime, startStack, type Stack } from './stack';
import { closeHttpAgent, runToExit } from './util';
import { peakUnderIngress, type Timing } from './webhooks';

export interface PeakJob {
  side: 'api' | 'floor';
  timing: Timing;
}

export interface PeakAnswer {
  peakRssMb: number;
  perSec: number;
}

const log = (line: string): void => void process.stderr.write(`[peak] ${line}\n`);

async function main(): Promise<void> {
  const job = await new Promise<PeakJob>((resolve) =>
    process.once('message', (message) => resolve(message as PeakJob)),
  );
  installRuntime();
  let stack: Stack | undefined;
  let load: LoadGenerator | undefined;
  try {
    stack = await startStack({ log: () => undefined, databaseUrl: undefined, embeddedStore: 'dataDir' });
    load = await LoadGenerator.start();
    const automation = await createBenchAutomation(stack.e2eApi.url, stack.adminToken);
    const answer: PeakAnswer = await peakUnderIngress(stack, load, automation, job.timing, job.side);
    await new Promise<void>((resolve, reject) =>
      process.send!(answer, (err: Error | null) => (err ? reject(err) : resolve())),
    );
  } finally {
    await load?.close().catch(() => undefined);
    await stack?.stop().catch((err: unknown) => log(`stop: ${String(err)}`));
    closeHttpAgent();
  }
}

if (require.main === module) runToExit(main);
