/**
 * Circuit breaker figure (`npm run bench -- --only=breaker`): accepted/s on an automation with a
 * CLOSED circuit breaker (a limit the measure never reaches, so every delivery pays the count and
 * none is paused) ÷ accepted/s on the same automation without one; same closed loop (concurrency
 * 32), same API (runs started on the unpolled queue, so only the accept path is measured: the start
 * plus the breaker's statement), rounds alternating as in bench/flow.ts. Goal from the issue: ≥ 0.9.
 */
import type { Stack } from './stack';
import { closedLoop, createAutomation } from './flow';
import { request } from './util';

export interface BreakerResult {
  breakerPerSec: number;
  plainPerSec: number;
  ingressRatio: number;
  /** The breaker's own count at the end (`breaker.runsInPeriod`): every accepted run was counted. */
  runsInPeriod: number;
}

/** Far above anything the measure sends: the breaker stays closed. */
const MAX_RUNS = 1_000_000;

export async function runBreakerBench(
  stack: Stack,
  options: { seconds: number; rounds: number },
  log: (line: string) => void,
): Promise<BreakerResult> {
  const steps = [{ id: 'v', setVariables: { user: 'ctx.trigger.user' } }];
  const plain = await createAutomation(stack.ingressApi.url, stack.adminToken, {}, steps, 'Bench: no breaker');
  const guarded = await createAutomation(stack.ingressApi.url, stack.adminToken, {}, steps, 'Bench: closed breaker');
  const set = await request('PUT', `${stack.ingressApi.url}/api/v1/automations/${guarded.id}/circuit-breaker`, {
    token: stack.adminToken,
    body: JSON.stringify({ maxRuns: MAX_RUNS, period: '3600s' }),
  });
  if (set.status !== 200) throw new Error(`circuit breaker: ${set.status} ${JSON.stringify(set.body)}`);
  // The warm-up lasts longer than the listener cache's bound (1 s): the breaker applies to every measured delivery.
  log('breaker: warm-up');
  let guardedAccepted = (await closedLoop(stack.ingressApi.url, guarded, 2, 32)).accepted;
  await closedLoop(stack.ingressApi.url, plain, 2, 32);
  let breakerPerSec = 0;
  let plainPerSec = 0;
  for (let round = 1; round <= options.rounds; round++) {
    const a = await closedLoop(stack.ingressApi.url, guarded, options.seconds, 32);
    const b = await closedLoop(stack.ingressApi.url, plain, options.seconds, 32);
    guardedAccepted += a.accepted;
    log(`breaker round ${round}: closed breaker ${a.perSec.toFixed(0)}/s, plain ${b.perSec.toFixed(0)}/s`);
    breakerPerSec = Math.max(breakerPerSec, a.perSec);
    plainPerSec = Math.max(plainPerSec, b.perSec);
  }
  // The breaker was on the path and stayed closed: it counted every accepted run and paused none.
  const shown = await request('GET', `${stack.ingressApi.url}/api/v1/automations/${guarded.id}`, {
    token: stack.adminToken,
  });
  const breaker = shown.body.automation?.breaker as { state?: string; runsInPeriod?: number } | undefined;
  if (breaker?.state !== 'CLOSED' || breaker.runsInPeriod !== guardedAccepted) {
    throw new Error(
      `breaker: expected CLOSED with ${guardedAccepted} runs in the period, got ${JSON.stringify(breaker)}`,
    );
  }
  return { breakerPerSec, plainPerSec, ingressRatio: breakerPerSec / plainPerSec, runsInPeriod: breaker.runsInPeriod };
}
