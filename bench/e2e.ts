/**
 * End to end, one run at a time: from sending a signed POST until the automation's workflow result
 * is known, against the baseline of starting bench/workflows/bare.ts (three no-op activities) and
 * awaiting its result. Runs alternate between the two so that background noise hits both alike.
 */
import { randomUUID } from 'node:crypto';
import { postEvent, type BenchAutomation } from './automation';
import { BARE_QUEUE, type Stack } from './stack';
import { percentile } from './util';

export interface E2eResult {
  p50Ms: number;
  bareP50Ms: number;
  ratioToBare: number;
  p90Ms: number;
  bareP90Ms: number;
  runs: number;
}

async function automationRun(stack: Stack, automation: BenchAutomation): Promise<number> {
  const started = performance.now();
  const response = await postEvent(stack.e2eApi.url, automation);
  if (response.status !== 200) throw new Error(`webhook answered ${response.status}: ${JSON.stringify(response.body)}`);
  const state = (await stack.client.workflow.getHandle(String(response.body.executionId)).result()) as { status?: string };
  const elapsed = performance.now() - started;
  if (state.status !== 'COMPLETED') throw new Error(`automation run ended ${JSON.stringify(state)}`);
  return elapsed;
}

async function bareRun(stack: Stack, trigger: unknown): Promise<number> {
  const started = performance.now();
  // Started as the API starts runs: on the workers' connection, with eager workflow start.
  const handle = await stack.workerClient.workflow.start('bare', { taskQueue: BARE_QUEUE, workflowId: `bare:${randomUUID()}`, args: [{ trigger }], requestEagerStart: true });
  await handle.result();
  return performance.now() - started;
}

export async function runE2eBench(
  stack: Stack,
  automation: BenchAutomation,
  options: { warmup: number; runs: number },
  log: (line: string) => void,
): Promise<E2eResult> {
  const trigger = JSON.parse(automation.body) as unknown;
  log(`end to end: ${options.warmup} warm-up runs, then ${options.runs} of each, alternating`);
  for (let i = 0; i < options.warmup; i++) {
    await automationRun(stack, automation);
    await bareRun(stack, trigger);
  }
  const measured: number[] = [];
  const bare: number[] = [];
  for (let i = 0; i < options.runs; i++) {
    if (i % 2 === 0) {
      measured.push(await automationRun(stack, automation));
      bare.push(await bareRun(stack, trigger));
    } else {
      bare.push(await bareRun(stack, trigger));
      measured.push(await automationRun(stack, automation));
    }
  }
  const p50Ms = percentile(measured, 50);
  const bareP50Ms = percentile(bare, 50);
  return {
    p50Ms,
    bareP50Ms,
    ratioToBare: p50Ms / bareP50Ms,
    p90Ms: percentile(measured, 90),
    bareP90Ms: percentile(bare, 90),
    runs: options.runs,
  };
}
