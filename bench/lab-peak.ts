/**
 * `MALLOC_ARENA_MAX=2 node --max-semi-space-size=8 -r ./scripts/swc-register.js bench/lab-peak.ts [--no-flow] [--cache=N]`:
 * what the bench process holds at its peak RSS (`memory.apiWorkerPeakRssMb`), phase by phase: after
 * start, during the flow section (skipped with `--no-flow`) and during the ingress section, each at
 * the quick bench's settings, as `npm run bench` runs them on one process. Every 50 ms it samples
 * `process.memoryUsage()` and /proc/self/status, and keeps the sample of each phase's highest RSS;
 * with `--expose-gc`, also what a full collection leaves after the flow section and at the end;
 * `--cache=N` sets the automation worker's sticky cache (default the service's).
 * Not part of `npm run bench`; a lab for docs/performance.md#labs.
 */
import fs from 'node:fs';
import v8 from 'node:v8';
import { createBenchAutomation } from './automation';
import { runFlowBench } from './flow';
import { LoadGenerator } from './load';
import { installRuntime, startStack, type Stack } from './stack';
import { closeHttpAgent, runToExit } from './util';
import { runIngressBench } from './webhooks';

const MB = 1024 * 1024;
const log = (line: string): void => void process.stderr.write(`[lab] ${line}\n`);

interface Sample {
  rss: number;
  rssAnon: number;
  rssFile: number;
  heapTotal: number;
  heapUsed: number;
  oldSpace: number;
  largeObjects: number;
  external: number;
  arrayBuffers: number;
}

function statusKb(status: string, field: string): number {
  const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status);
  return match ? Number(match[1]) / 1024 : Number.NaN;
}

function sample(): Sample {
  const usage = process.memoryUsage();
  const status = fs.readFileSync('/proc/self/status', 'utf8');
  const spaces = new Map(v8.getHeapSpaceStatistics().map((space) => [space.space_name, space.space_used_size / MB]));
  return {
    rss: usage.rss / MB,
    rssAnon: statusKb(status, 'RssAnon'),
    rssFile: statusKb(status, 'RssFile'),
    heapTotal: usage.heapTotal / MB,
    heapUsed: usage.heapUsed / MB,
    oldSpace: spaces.get('old_space') ?? Number.NaN,
    largeObjects: spaces.get('large_object_space') ?? Number.NaN,
    external: usage.external / MB,
    arrayBuffers: usage.arrayBuffers / MB,
  };
}

/** Runs `fn` while sampling; answers the sample taken at the highest RSS. */
async function peakDuring(fn: () => Promise<unknown>): Promise<Sample> {
  let peak = sample();
  const timer = setInterval(() => {
    const now = sample();
    if (now.rss > peak.rss) peak = now;
  }, 50);
  try {
    await fn();
  } finally {
    clearInterval(timer);
  }
  const last = sample();
  return last.rss > peak.rss ? last : peak;
}

const round = (s: Sample): Record<string, number> =>
  Object.fromEntries(Object.entries(s).map(([key, value]) => [key, Math.round(value)]));

async function main(): Promise<void> {
  const withFlow = !process.argv.includes('--no-flow');
  log(`MALLOC_ARENA_MAX=${process.env.MALLOC_ARENA_MAX ?? '(unset)'}; flow section ${withFlow ? 'first' : 'skipped'}`);
  installRuntime();
  let stack: Stack | undefined;
  let load: LoadGenerator | undefined;
  try {
    const cache = /^--cache=(\d+)$/.exec(process.argv.find((arg) => arg.startsWith('--cache=')) ?? '');
    stack = await startStack({
      log,
      databaseUrl: undefined,
      embeddedStore: 'dataDir',
      ...(cache ? { maxCachedWorkflows: Number(cache[1]) } : {}),
    });
    load = await LoadGenerator.start();
    const automation = await createBenchAutomation(stack.e2eApi.url, stack.adminToken);
    const phases: Record<string, Record<string, number>> = { started: round(sample()) };
    const running = stack;
    if (withFlow) phases.flow = round(await peakDuring(() => runFlowBench(running, { seconds: 4, chain: 15 }, log)));
    // With --expose-gc: what a full collection leaves (held) of what the phase peaked at (held and garbage).
    const collect = (globalThis as { gc?: () => void }).gc;
    if (collect) {
      collect();
      phases.collected = round(sample());
    }
    const generator = load;
    let accepted = Number.NaN;
    phases.ingress = round(
      await peakDuring(async () => {
        accepted = (
          await runIngressBench(
            running,
            generator,
            automation,
            { warmupSec: 2, durationSec: 5, rounds: 1, concurrency: 32 },
            log,
          )
        ).acceptedPerSec;
      }),
    );
    phases.after = round(sample());
    if (collect) {
      collect();
      phases.afterCollected = round(sample());
    }
    console.log(
      JSON.stringify(
        { arenas: process.env.MALLOC_ARENA_MAX ?? null, withFlow, acceptedPerSec: Math.round(accepted), phases },
        null,
        2,
      ),
    );
  } finally {
    await load?.close().catch(() => undefined);
    await stack?.stop().catch(() => undefined);
    closeHttpAgent();
  }
}

runToExit(main);
