/**
 * Bulk action figure (`npm run bench -- --only=bulk`): webhook ingress while a bulk cancel runs.
 *   park      N runs of an automation whose one step is `waitForApproval`, sent as signed webhooks
 *             to the API whose runs the worker executes (32 senders), until every one of them is
 *             RUNNING in visibility and the last ones sent have reached the approval wait
 *   measure   plain ingress (another automation, runs on the unpolled queue: only the accept path)
 *             for a while; then the bulk cancel of the N runs (POST /api/v1/automation_executions/bulk
 *             on the worker's API, so the worker acts on them) and the same closed loop of webhooks
 *             from its 202 until the action is no longer RUNNING; then plain ingress again
 * Figure: accepted/s during the cancel ÷ the mean of the plain rates before and after. Goal from the
 * issue: ≥ 0.8 with N = 10,000.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Stack } from './stack';
import { randomUUID } from 'node:crypto';
import { hmacEvent } from '../test/helpers/signing';
import { closedLoop, createAutomation, type Target } from './flow';
import { request } from './util';

export interface BulkResult {
  runs: number;
  parkSeconds: number;
  plainBeforePerSec: number;
  plainAfterPerSec: number;
  /** The mean of the two plain rates: the baseline. */
  plainPerSec: number;
  duringCancelPerSec: number;
  ingressRatioDuringCancel: number;
  /** The action's createdAt → finishedAt. */
  cancelSeconds: number;
  cancelRunsPerSec: number;
}

const BULK = '/api/v1/automation_executions/bulk';

/** Polls `fn` every 500 ms until `done`; fails after `timeoutMs` (a bench that cannot park its runs must not hang). */
async function until<T>(what: string, fn: () => Promise<T>, done: (value: T) => boolean, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await fn();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`bulk: timed out waiting for ${what} (last: ${JSON.stringify(value)})`);
    await sleep(500);
  }
}

/**
 * Sends one event until it is accepted: a 503 (the engine did not confirm it, as happens on a loaded
 * machine) is sent again with the same event id, as the contract asks of senders; a 409 then means
 * the first attempt did start the run. The run's id.
 */
async function park(api: string, target: Target, payload: unknown): Promise<string | undefined> {
  const eventId = randomUUID();
  for (let attempt = 1; ; attempt++) {
    const { body, headers } = hmacEvent(target.secret, payload, { eventId });
    const res = await request('POST', `${api}${target.listenerPath}`, { body, headers });
    if (res.status === 200 || (res.status === 409 && attempt > 1)) return res.status === 200 ? String(res.body.executionId) : undefined;
    if (res.status !== 503 || attempt === 10) throw new Error(`bulk: parking event answered ${res.status} ${JSON.stringify(res.body)}`);
    await sleep(1000);
  }
}

export async function runBulkBench(stack: Stack, options: { runs: number; seconds: number }, log: (line: string) => void): Promise<BulkResult> {
  const api = stack.e2eApi.url;
  const token = stack.adminToken;
  const parked = await createAutomation(api, token, {}, [{ id: 'hold', waitForApproval: { timeout: '86400s' } }], 'Bench: parked runs');
  const plain = await createAutomation(stack.ingressApi.url, token, {}, [{ id: 'v', setVariables: { user: 'ctx.trigger.user' } }], 'Bench: plain ingress');

  log(`bulk: parking ${options.runs} runs in waitForApproval (signed webhooks, 32 senders)`);
  const parkStart = performance.now();
  const ids: Array<string | undefined> = [];
  let claimed = 0;
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (claimed < options.runs) {
        claimed += 1;
        ids.push(await park(api, parked, { n: claimed, padding: 'x'.repeat(900) }));
      }
    }),
  );
  const dryRun = (): Promise<number> =>
    request('POST', `${api}${BULK}`, {
      token,
      body: JSON.stringify({ dryRun: true, reason: 'bench', filter: { automationId: parked.id, status: ['RUNNING'] } }),
    }).then((res) => {
      if (res.status !== 200) throw new Error(`bulk: dry run answered ${res.status} ${JSON.stringify(res.body)}`);
      return Number(res.body.matched);
    });
  await until(`${options.runs} RUNNING runs in visibility`, dryRun, (matched) => matched === options.runs, 600_000);
  // The worker takes the runs roughly in the order they were sent: the last ones waiting means the rest are.
  const lastSent = ids.filter((id): id is string => id !== undefined).slice(-32);
  await until(
    'the last runs sent to reach the approval wait',
    async () => {
      let waiting = 0;
      for (const id of lastSent) {
        const events = (await stack.client.workflow.getHandle(id).fetchHistory()).events ?? [];
        const last = events.at(-1);
        const taskOpen = last?.workflowTaskScheduledEventAttributes || last?.workflowTaskStartedEventAttributes;
        if (events.some((e) => e.workflowTaskCompletedEventAttributes) && !taskOpen) waiting += 1;
      }
      return waiting;
    },
    (waiting) => waiting === lastSent.length,
    600_000,
  );
  const parkSeconds = (performance.now() - parkStart) / 1000;
  log(`bulk: ${options.runs} runs parked in ${parkSeconds.toFixed(0)} s`);

  log('bulk: warm-up');
  await closedLoop(stack.ingressApi.url, plain, 2, 32);
  const before = await closedLoop(stack.ingressApi.url, plain, options.seconds, 32);
  log(`bulk: plain ingress before ${before.perSec.toFixed(0)}/s`);

  const created = await request('POST', `${api}${BULK}`, {
    token,
    body: JSON.stringify({ action: 'cancel', reason: 'bench: bulk cancel', filter: { automationId: parked.id, status: ['RUNNING'] } }),
  });
  if (created.status !== 202) throw new Error(`bulk: cancel answered ${created.status} ${JSON.stringify(created.body)}`);
  const actionId = String(created.body.bulkAction.id);
  if (created.body.bulkAction.matched !== options.runs)
    throw new Error(`bulk: the cancel matched ${created.body.bulkAction.matched} runs, not ${options.runs}`);
  let finished: Record<string, unknown> | undefined;
  let watched = false;
  const watching = (async () => {
    for (;;) {
      const res = await request('GET', `${api}/api/v1/bulk_actions/${actionId}`, { token });
      if (res.status !== 200) throw new Error(`bulk: progress answered ${res.status}`);
      if (res.body.bulkAction.state !== 'RUNNING') {
        finished = res.body.bulkAction as Record<string, unknown>;
        return;
      }
      await sleep(500);
    }
  })().finally(() => {
    // Ended, or failed: the senders stop either way (a failure is thrown below).
    watched = true;
  });
  const during = await closedLoop(stack.ingressApi.url, plain, 0, 32, () => watched);
  await watching;
  const action = finished!;
  if (action.state !== 'COMPLETED' || action.succeeded !== options.runs) throw new Error(`bulk: the cancel ended ${JSON.stringify(action)}`);
  const cancelSeconds = (Date.parse(String(action.finishedAt)) - Date.parse(String(action.createdAt))) / 1000;
  log(`bulk: cancel of ${options.runs} runs in ${cancelSeconds.toFixed(1)} s; ingress meanwhile ${during.perSec.toFixed(0)}/s`);

  const after = await closedLoop(stack.ingressApi.url, plain, options.seconds, 32);
  log(`bulk: plain ingress after ${after.perSec.toFixed(0)}/s`);
  const plainPerSec = (before.perSec + after.perSec) / 2;
  return {
    runs: options.runs,
    parkSeconds,
    plainBeforePerSec: before.perSec,
    plainAfterPerSec: after.perSec,
    plainPerSec,
    duringCancelPerSec: during.perSec,
    ingressRatioDuringCancel: during.perSec / plainPerSec,
    cancelSeconds,
    cancelRunsPerSec: options.runs / cancelSeconds,
  };
}
