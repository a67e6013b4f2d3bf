/**
 * Flow control on the production shape (`npm run stack:prod`, on a PostgreSQL of the drill's own):
 * 5 keys × 40 events through an automation with `concurrency {limit: 1, key}` whose steps record
 * their start and end (a `log` step, a short `wait`, a `log` step), sent one at a time per key (the
 * next after the previous one's answer), while a worker, an API and the Temporal history process
 * are SIGKILLed (the stack's supervisor restarts them). Then: every event's run COMPLETED exactly
 * once, per key no two runs overlapped (one's first step after the previous one's last), and per
 * key the completion order equals the acceptance order. Figures go to the console.
 */
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { signHmac } from '../../src/webhooks';
import type { ProdStack } from '../../scripts/stack-prod';
import { postOnce, type PostOutcome } from '../helpers/raw-http';
import { startDrillStack, stopDrillStack, type DrillStackParts } from './drill-stack';
import { callApi } from '../helpers/api-call';
import { sleep } from '../helpers/wait';

const KEYS = 5;
const EVENTS_PER_KEY = 40;
const ATTEMPT_TIMEOUT_MS = 90_000;

const parts: DrillStackParts = {};
let stack: ProdStack;
let entryPort: number;
let token: string;
let temporal: Client;

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = Record<string, any>;
const call = (method: 'GET' | 'POST', pathname: string, body?: unknown): Promise<Json> =>
  callApi(entryPort, token, method, pathname, body);

function send(listener: { path: string; secret: string }, eventId: string, body: string): Promise<PostOutcome> {
  const timestamp = String(Math.floor(Date.now() / 1000));
  const headers = {
    'Content-Type': 'application/json',
    'Webhook-Timestamp': timestamp,
    'Webhook-Event-Id': eventId,
    'Webhook-Signature': signHmac(listener.secret, timestamp, eventId, body),
  };
  return postOnce(entryPort, listener.path, headers, body, ATTEMPT_TIMEOUT_MS);
}

beforeAll(async () => {
  ({ stack, entryPort, token, temporal } = await startDrillStack('flow', parts));
}, 30 * 60_000);

afterAll(() => stopDrillStack(parts), 120_000);

describe(`${KEYS} keys × ${EVENTS_PER_KEY} events through a limit-1 automation while processes are killed`, () => {
  it('every run COMPLETED exactly once; per key no overlap, start order = acceptance order', async () => {
    const created = await call('POST', '/api/v1/automations', {
      displayName: 'flow drill',
      trigger: { incomingWebhook: { authMethod: 'HMAC' } },
      concurrency: { limit: 1, key: 'ctx.trigger.user' },
      steps: [
        { id: 'begin', log: { message: '"begin " + ctx.trigger.user + " " + string(ctx.trigger.n)' } },
        { id: 'pause', wait: { duration: '0.2s' } },
        { id: 'end', log: { message: '"end " + ctx.trigger.user + " " + string(ctx.trigger.n)' } },
      ],
    });
    await call('POST', `/api/v1/automations/${created.automation.id}/publish`, {});
    const listener = {
      path: new URL(created.automation.trigger.incomingWebhook.url).pathname,
      secret: created.signingSecret as string,
    };

    // Each key's events in order, one at a time (the next after the previous answer); a refused
    // or lost answer is retried with the same event id until 200 or 409.
    const accepted: Record<string, string[]> = {};
    let answered = 0;
    const faults: string[] = [];
    const killAt = new Map<number, () => Promise<void>>([
      [40, async () => void (await stack.processes.get('worker-1')!.kill('SIGKILL', false))],
      [90, async () => void (await stack.processes.get('api-1')!.kill('SIGKILL', false))],
      [140, async () => void (await stack.processes.get('temporal-history')!.kill('SIGKILL', false))],
    ]);
    await Promise.all(
      Array.from({ length: KEYS }, async (_, k) => {
        const user = `user-${k}`;
        accepted[user] = [];
        for (let n = 0; n < EVENTS_PER_KEY; n++) {
          const eventId = randomUUID();
          const body = JSON.stringify({ user, n });
          for (let attempt = 0; ; attempt++) {
            const outcome = await send(listener, eventId, body);
            if (outcome.kind === 'response' && (outcome.status === 200 || outcome.status === 409)) break;
            if (attempt > 200) throw new Error(`event ${user}/${n} never accepted`);
            await sleep(500);
          }
          accepted[user]!.push(`webhook:${created.automation.trigger.incomingWebhook.listenerId}:${eventId}`);
          answered += 1;
          const fault = killAt.get(answered);
          if (fault) {
            killAt.delete(answered);
            await fault();
            faults.push(`fault after ${answered} accepted events`);
          }
        }
      }),
    );
    expect(faults).toHaveLength(3);

    // Every run completes; then its history says when its first step started and its last one ended.
    const timeline: Record<string, Array<{ id: string; first: number; last: number }>> = {};
    const deadline = Date.now() + 20 * 60_000;
    for (const [user, runIds] of Object.entries(accepted)) {
      timeline[user] = [];
      for (const runId of runIds) {
        let description = await temporal.workflow.getHandle(runId).describe();
        while (description.status.name === 'RUNNING' && Date.now() < deadline) {
          await sleep(1000);
          description = await temporal.workflow.getHandle(runId).describe();
        }
        expect(description.status.name).toBe('COMPLETED');
        const events = (await temporal.workflow.getHandle(runId).fetchHistory()).events ?? [];
        const at = (e: (typeof events)[number]) =>
          Number(String(e.eventTime?.seconds ?? 0)) * 1000 + (e.eventTime?.nanos ?? 0) / 1e6;
        const grant = events.findIndex((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'grant');
        expect(grant).toBeGreaterThan(0);
        // The steps' markers: a queued run's last local activity, releaseLanePlace, comes after it gave
        // its lane permit back (the next run of the key may have started by then), so it is not a step.
        const placeRelease = (e: (typeof events)[number]): boolean => {
          const data = e.markerRecordedEventAttributes?.details?.['data']?.payloads?.[0]?.data;
          return data ? Buffer.from(data).toString('utf8').includes('"activity_type":"releaseLanePlace"') : false;
        };
        const markers = events.slice(grant).filter((e) => e.markerRecordedEventAttributes && !placeRelease(e));
        timeline[user].push({ id: runId, first: at(markers[0]!), last: at(markers.at(-1)!) });
      }
    }
    // Exactly one run per event: the executions list holds each accepted id once and nothing else.
    // (Visibility is eventually consistent: read it again until it has caught up, at most a minute.)
    const expected = Object.values(accepted).flat().sort();
    let ids: string[] = [];
    for (let tries = 0; tries < 60; tries++) {
      ids = [];
      let pageToken = '';
      do {
        const page = await call(
          'GET',
          `/api/v1/automations/${created.automation.id}/executions?pageSize=100${pageToken ? `&pageToken=${encodeURIComponent(pageToken)}` : ''}`,
        );
        for (const item of page.list) if (item.execution.status === 'COMPLETED') ids.push(item.execution.id);
        pageToken = page.nextPageToken;
      } while (pageToken);
      if (ids.length >= expected.length) break;
      await sleep(1000);
    }
    expect(ids.sort()).toEqual(expected);

    let overlaps = 0;
    let outOfOrder = 0;
    for (const runs of Object.values(timeline)) {
      for (let i = 1; i < runs.length; i++) {
        if (runs[i]!.first < runs[i - 1]!.last) overlaps += 1;
        // Start order, not close order: a run gives its permit back (an awaited signal to the lane)
        // before its own completion is recorded, so the next run of the key may close first when
        // the history service is slow or was just killed; its steps still start after the permit.
        if (runs[i]!.first < runs[i - 1]!.first) outOfOrder += 1;
      }
    }
    console.log(
      `flow drill: ${KEYS * EVENTS_PER_KEY} runs COMPLETED once each; overlaps ${overlaps}; out of order ${outOfOrder}; faults: ${faults.join(', ')}`,
    );
    expect(overlaps).toBe(0);
    expect(outOfOrder).toBe(0);
  });
});
