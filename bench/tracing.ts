/**
 * Tracing's cost on `npm start` (section tracing): signed-webhook ingress, accepted/s, on three
 * services started the same way (bench/npm-start.ts), measured in interleaved rounds so that the
 * machine's drift falls on each alike:
 *   on       OTEL_EXPORTER_OTLP_ENDPOINT → a real Jaeger (the binary `npm run stack:prod` runs):
 *            the SDK, the client, workflow and activity interceptors, every span exported;
 *   unset    no OTEL_* variable: the service as shipped with tracing off;
 *   no SDK   the same, with a workflow bundle built without Temporal's OpenTelemetry workflow
 *            interceptors (WORKFLOW_BUNDLE): off, the SDK and the client and activity interceptors
 *            are never loaded already (src/main.ts, src/temporal/tracing.ts), so these interceptors
 *            and the API's no-op calls are all the tracing code an unset service still runs.
 * `ingressRatio` = on ÷ unset (goal ≥ 0.9), `offIngressRatio` = unset ÷ no SDK (goal ≥ 0.95), each
 * the ratio of the medians over the rounds. Then the idle memory of `npm start` with tracing on,
 * beside the same without, counted as the memory section counts it (bench/memory.ts).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import { automationBundleOptions } from '../src/temporal/worker';
import { startJaeger } from '../test/helpers/jaeger';
import { createBenchAutomation, type BenchAutomation } from './automation';
import type { LoadGenerator } from './load';
import { runMemoryBench, type MemoryResult } from './memory';
import { startNpmStart, type NpmStart } from './npm-start';
import { percentile } from './util';

export interface TracingTiming {
  rounds: number;
  warmupSec: number;
  durationSec: number;
  concurrency: number;
  settleMs: number;
}

type Side = 'on' | 'unset' | 'noSdk';
const SIDES: readonly Side[] = ['on', 'unset', 'noSdk'];

export interface TracingResult {
  /** Accepted/s of every round, by side. */
  perSec: Record<Side, number[]>;
  /** The medians of `perSec`. */
  medianPerSec: Record<Side, number>;
  ingressRatio: number;
  offIngressRatio: number;
  /** Spans Jaeger stored for the service while it was measured (that it exported at all). */
  exportedTraces: number;
  idleOn: MemoryResult;
  idleOff: MemoryResult;
}

const OFF: Record<string, string> = { OTEL_EXPORTER_OTLP_ENDPOINT: '', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: '' };

export async function runTracingBench(
  load: LoadGenerator,
  timing: TracingTiming,
  log: (line: string) => void,
): Promise<TracingResult> {
  const jaeger = await startJaeger();
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-tracing-'));
  const services: Partial<Record<Side, { service: NpmStart; automation: BenchAutomation }>> = {};
  try {
    const serviceName = 'bench-tracing';
    const on = { OTEL_EXPORTER_OTLP_ENDPOINT: jaeger.otlpEndpoint, OTEL_SERVICE_NAME: serviceName };
    log('tracing: a workflow bundle without the OpenTelemetry workflow interceptors (the "no SDK" side)');
    const { code } = await bundleWorkflowCode({ ...automationBundleOptions(), workflowInterceptorModules: [] });
    const bareBundle = path.join(scratch, 'workflow-bundle-without-interceptors.js');
    fs.writeFileSync(bareBundle, code);
    const envs: Record<Side, Record<string, string>> = {
      on,
      unset: OFF,
      noSdk: { ...OFF, WORKFLOW_BUNDLE: bareBundle },
    };
    for (const side of SIDES) {
      const service = await startNpmStart(`tracing (${side})`, envs[side], log);
      services[side] = { service, automation: await createBenchAutomation(service.api, service.token) };
    }
    const perSec: Record<Side, number[]> = { on: [], unset: [], noSdk: [] };
    const measure = async (side: Side, seconds: number): Promise<number> => {
      const { service, automation } = services[side]!;
      const result = await load.run({
        url: `${service.api}${automation.listenerPath}`,
        connections: timing.concurrency,
        durationSec: seconds,
        body: automation.body,
        secret: automation.signingSecret,
        mode: 'valid',
        expectStatus: 200,
      });
      return result.perSec;
    };
    for (const side of SIDES) await measure(side, timing.warmupSec);
    for (let round = 1; round <= timing.rounds; round++) {
      // The order turns each round, so that no side is always the one after a given other.
      const order = SIDES.map((_, i) => SIDES[(i + round - 1) % SIDES.length]!);
      for (const side of order) {
        const value = await measure(side, timing.durationSec);
        perSec[side].push(value);
        log(`tracing: round ${round} ${side} ${value.toFixed(1)}/s`);
      }
    }
    const medianPerSec = {
      on: percentile(perSec.on, 50),
      unset: percentile(perSec.unset, 50),
      noSdk: percentile(perSec.noSdk, 50),
    };
    const exportedTraces = await tracesOf(jaeger.queryUrl, serviceName);
    for (const side of SIDES) await services[side]!.service.stop();
    log('tracing: idle memory of npm start with tracing on, then without');
    const idleOn = await runMemoryBench({ settleMs: timing.settleMs, env: on }, log);
    const idleOff = await runMemoryBench({ settleMs: timing.settleMs, env: OFF }, log);
    return {
      perSec,
      medianPerSec,
      ingressRatio: medianPerSec.on / medianPerSec.unset,
      offIngressRatio: medianPerSec.unset / medianPerSec.noSdk,
      exportedTraces,
      idleOn,
      idleOff,
    };
  } finally {
    for (const side of SIDES) await services[side]?.service.stop();
    await jaeger.close();
    fs.rmSync(scratch, { recursive: true, force: true });
  }
}

/** How many traces Jaeger's query API holds for the service (its search caps the count it answers). */
async function tracesOf(queryUrl: string, service: string): Promise<number> {
  const response = await fetch(`${queryUrl}/api/traces?service=${encodeURIComponent(service)}&limit=1000&lookback=1h`);
  if (!response.ok) return 0;
  const body = (await response.json()) as { data?: unknown[] };
  return body.data?.length ?? 0;
}
