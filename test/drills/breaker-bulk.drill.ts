/**
 * "A sender went wrong" on the production shape (`npm run stack:prod`, on a PostgreSQL of the
 * drill's own; docs/operations.md#a-sender-went-wrong-the-circuit-breaker, the runbook):
 *   1. The circuit breaker: an automation with a breaker of 50 runs per hour and a concurrency lane
 *      (limit 1, per key); 8 senders (one key each) post 400 signed events, each key's next after
 *      the previous answer, while a worker, an API and the Temporal history process are SIGKILLed
 *      (the stack's supervisor restarts them); a sender retries a 5xx or a refused connection with
 *      the same event id (a 409 then means it was accepted). Before the resume, 350 runs are PAUSED
 *      and none ran a step; then a person resumes them. Judged from Temporal (visibility and each
 *      run's history), not from the senders: every event ran exactly once and COMPLETED; exactly 50
 *      runs were never paused, and per key they are the first ones accepted; no paused run ran a
 *      step before the resume; per key, steps started in acceptance order.
 *   2. Bulk rerun after an outage: 300 runs FAILED (a CEL error in their step); the step is fixed
 *      and published; a bulk rerun of the FAILED runs while a worker and Temporal's frontend are
 *      SIGKILLed: exactly 300 new runs, each `<run>:rerun-bulk-<id>`, COMPLETED, naming the run it
 *      reruns and the bulk action; the action's counters add up.
 * Figures (counts, times) go to the console and to test-artifacts/breaker-bulk-drill.json.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import type { Client } from '@temporalio/client';
import type { EncryptionCodec } from '../../src/temporal/codec';
import { decodePayloadsInPlace } from '../../src/temporal/payloads';
import { BREAKER_RESUME_SIGNAL, RUN_GRANT_SIGNAL } from '../../src/contract/run';
import { signHmac } from '../../src/webhooks';
import type { ProdStack } from '../../scripts/stack-prod';
import { postOnce, type PostOutcome } from '../helpers/raw-http';
import { startDrillStack, stopDrillStack, type DrillStackParts } from './drill-stack';
import { poll, sleep } from '../helpers/wait';

const SENDERS = 8;
const EVENTS_PER_SENDER = 50;
const MAX_RUNS = 50;
const FAILED_RUNS = 300;
const ATTEMPT_TIMEOUT_MS = 90_000;

const parts: DrillStackParts = {};
let stack: ProdStack;
let entryPort: number;
let token: string;
let temporal: Client;
let codec: EncryptionCodec;
const figures: Record<string, unknown> = {};

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = Record<string, any>;

/** A JSON call through the entry; the status it must answer (else a thrown error naming the answer). */
async function api(method: 'GET' | 'POST' | 'PUT', pathname: string, body?: unknown, status = 200): Promise<Json> {
  const res = await fetch(`${stack.entryUrl}${pathname}`, {
    method,
    headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${token}` },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const json = (await res.json()) as Json;
  if (res.status !== status) throw new Error(`${method} ${pathname}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

/** An operator's call that may meet a restarting process: repeated (it is idempotent) until it answers `status`. */
async function patiently(
  method: 'GET' | 'POST' | 'PUT',
  pathname: string,
  body?: unknown,
  status = 200,
): Promise<Json> {
  return (
    await poll(
      () =>
        api(method, pathname, body, status).then(
          (json) => ({ json }),
          (err: Error) => ({ json: undefined, err: err.message }),
        ),
      (r) => r.json !== undefined,
      { what: `${method} ${pathname} to answer ${status}`, timeoutMs: 5 * 60_000, intervalMs: 1000 },
    )
  ).json!;
}

interface Listener {
  id: string;
  listenerId: string;
  path: string;
  secret: string;
}

async function createAutomation(fields: Json): Promise<Listener> {
  const created = await api('POST', '/api/v1/automations', {
    trigger: { incomingWebhook: { authMethod: 'HMAC' } },
    ...fields,
  });
  await api('POST', `/api/v1/automations/${created.automation.id}/publish`, {});
  return {
    id: created.automation.id,
    listenerId: created.automation.trigger.incomingWebhook.listenerId,
    path: new URL(created.automation.trigger.incomingWebhook.url).pathname,
    secret: created.signingSecret,
  };
}

function send(listener: Listener, eventId: string, body: string): Promise<PostOutcome> {
  const timestamp = String(Math.floor(Date.now() / 1000));
  const headers = {
    'Content-Type': 'application/json',
    'Webhook-Timestamp': timestamp,
    'Webhook-Event-Id': eventId,
    'Webhook-Signature': signHmac(listener.secret, timestamp, eventId, body),
  };
  return postOnce(entryPort, listener.path, headers, body, ATTEMPT_TIMEOUT_MS);
}

/** Sends until 200 or 409 (a 409 after a retry: the earlier attempt was accepted), retrying a 5xx or a lost answer with the same id. */
async function deliver(
  listener: Listener,
  eventId: string,
  body: string,
  answers: Array<number | string>,
): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    const outcome = await send(listener, eventId, body);
    const status = outcome.kind === 'response' ? outcome.status : outcome.code;
    answers.push(status);
    if (status === 200 || status === 409) return;
    if (typeof status === 'number' && status < 500)
      throw new Error(`event ${eventId}: ${status} ${JSON.stringify(outcome.kind === 'response' ? outcome.body : '')}`);
    if (attempt > 300) throw new Error(`event ${eventId} never accepted`);
    await sleep(500);
  }
}

const runId = (listener: Listener, eventId: string): string => `webhook:${listener.listenerId}:${eventId}`;

/** Every workflow of a visibility query: id → statuses (one entry per run of that id). */
async function listed(query: string): Promise<Map<string, string[]>> {
  const runs = new Map<string, string[]>();
  for await (const run of temporal.workflow.list({ query }))
    runs.set(run.workflowId, [...(runs.get(run.workflowId) ?? []), run.status.name]);
  return runs;
}

/** Waits until every id has exactly one run and it COMPLETED (or `status`), at most 15 minutes. */
async function settled(query: string, ids: readonly string[], status = 'COMPLETED'): Promise<Map<string, string[]>> {
  return poll(
    () => listed(query),
    (runs) => ids.every((id) => runs.get(id)?.length === 1 && runs.get(id)![0] === status),
    { what: `${ids.length} runs ${status}`, timeoutMs: 15 * 60_000, intervalMs: 3000 },
  );
}

const tally = (list: Array<number | string>): Record<string, number> => {
  const out: Record<string, number> = {};
  for (const s of list) out[String(s)] = (out[String(s)] ?? 0) + 1;
  return out;
};

beforeAll(async () => {
  let startSeconds: number;
  ({ stack, entryPort, token, temporal, codec, startSeconds } = await startDrillStack('breaker', parts));
  figures.stackStartSeconds = startSeconds;
}, 30 * 60_000);

afterAll(async () => {
  fs.mkdirSync('test-artifacts', { recursive: true });
  fs.writeFileSync('test-artifacts/breaker-bulk-drill.json', `${JSON.stringify(figures, null, 2)}\n`);
  console.log(`breaker and bulk drill figures: ${JSON.stringify(figures)}`);
  await stopDrillStack(parts);
}, 120_000);

describe(`a breaker of ${MAX_RUNS} per hour: ${SENDERS} senders × ${EVENTS_PER_SENDER} events while processes are killed, then resume`, () => {
  it('every event ran once; the first 50 without pause, the rest PAUSED until the resume; per key in acceptance order', async () => {
    const began = Date.now();
    const listener = await createAutomation({
      displayName: 'breaker drill',
      concurrency: { limit: 1, key: 'ctx.trigger.user' },
      steps: [
        { id: 'begin', log: { message: '"begin " + ctx.trigger.user + " " + string(ctx.trigger.n)' } },
        { id: 'end', log: { message: '"end " + ctx.trigger.user + " " + string(ctx.trigger.n)' } },
      ],
    });
    await api('PUT', `/api/v1/automations/${listener.id}/circuit-breaker`, { maxRuns: MAX_RUNS, period: '3600s' });

    const accepted: Record<string, string[]> = {};
    const answers: Array<number | string> = [];
    const faults: string[] = [];
    let answered = 0;
    const killAt = new Map<number, [string, () => Promise<void>]>([
      [100, ['worker-1', () => stack.processes.get('worker-1')!.kill('SIGKILL', false)]],
      [200, ['api-1', () => stack.processes.get('api-1')!.kill('SIGKILL', false)]],
      [300, ['temporal-history', () => stack.processes.get('temporal-history')!.kill('SIGKILL', false)]],
    ]);
    await Promise.all(
      Array.from({ length: SENDERS }, async (_, k) => {
        const user = `user-${k}`;
        accepted[user] = [];
        for (let n = 0; n < EVENTS_PER_SENDER; n++) {
          const eventId = randomUUID();
          await deliver(listener, eventId, JSON.stringify({ user, n }), answers);
          accepted[user]!.push(runId(listener, eventId));
          answered += 1;
          const fault = killAt.get(answered);
          if (fault) {
            killAt.delete(answered);
            await fault[1]();
            faults.push(`${fault[0]} SIGKILLed after ${answered} accepted events`);
          }
        }
      }),
    );
    for (const name of ['worker-1', 'api-1', 'temporal-history']) await stack.waitReady(name);
    const ids = Object.values(accepted).flat();
    const query = `ListenerId = "${listener.listenerId}"`;

    // Before the resume: the breaker is open over 350 paused runs, and visibility lists them PAUSED.
    const before = await patiently('GET', `/api/v1/automations/${listener.id}`);
    expect(before.automation.breaker).toEqual({
      state: 'OPEN',
      trippedAt: expect.any(String),
      pausedRuns: ids.length - MAX_RUNS,
    });
    const pausedListed = await poll(
      () => listed(`${query} AND FlowQueue = "PAUSED"`),
      (runs) => runs.size === ids.length - MAX_RUNS,
      { what: `${ids.length - MAX_RUNS} runs PAUSED in visibility`, timeoutMs: 5 * 60_000, intervalMs: 2000 },
    );
    // The resume, as a person would send it: repeated after an answer that did not come (the proxy
    // gives up after 60 s while the API goes on resuming); a repeat resumes what is still paused.
    const resumedAt = Date.now();
    const resumeAnswers: Array<{ status: number | string; resumed?: number }> = [];
    for (;;) {
      const res = await fetch(`${stack.entryUrl}/api/v1/automations/${listener.id}/breaker/resume`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${token}` },
        body: JSON.stringify({ reason: 'the sync was checked' }),
      }).then(
        async (r) => ({ status: r.status, body: (await r.json().catch(() => ({}))) as Json }),
        (err: Error) => ({ status: err.message, body: {} as Json }),
      );
      resumeAnswers.push({
        status: res.status,
        ...(res.status === 200 ? { resumed: res.body.resumed as number } : {}),
      });
      if (res.status === 200) break;
      if (resumeAnswers.length > 30) throw new Error(`resume never answered 200: ${JSON.stringify(resumeAnswers)}`);
      await sleep(1000);
    }
    const resumeAnsweredSeconds = Math.round((Date.now() - resumedAt) / 1000);
    const runs = await settled(query, ids);

    // Judged from each run's history: paused or not, whether a step ran before the resume, when its steps started.
    const violations: string[] = [];
    const notPaused: Record<string, boolean[]> = {};
    let neverPaused = 0;
    for (const [user, keyRuns] of Object.entries(accepted)) {
      notPaused[user] = [];
      let previousFirst = 0;
      for (const id of keyRuns) {
        const history = await temporal.workflow.getHandle(id).fetchHistory();
        await decodePayloadsInPlace(history, [codec]); // a log step's line is the (encrypted) summary of its event
        const events = history.events ?? [];
        const at = (e: (typeof events)[number]): number =>
          Number(String(e.eventTime?.seconds ?? 0)) * 1000 + (e.eventTime?.nanos ?? 0) / 1e6;
        const signal = (name: string): number =>
          events.findIndex((e) => e.workflowExecutionSignaledEventAttributes?.signalName === name);
        const line = (e: (typeof events)[number]): string =>
          e.userMetadata?.summary?.data
            ? String(JSON.parse(Buffer.from(e.userMetadata.summary.data).toString('utf8')))
            : '';
        const resume = signal(BREAKER_RESUME_SIGNAL);
        const grant = signal(RUN_GRANT_SIGNAL);
        const begins = events.map((e, i) => ({ e, i })).filter(({ e }) => line(e).startsWith('begin: '));
        if (resume < 0) neverPaused += 1;
        notPaused[user]!.push(resume < 0);
        if (begins.length !== 1) {
          violations.push(`${id}: its first step ran ${begins.length} times`);
          continue;
        }
        const begin = begins[0]!;
        if (resume >= 0 && begin.i < resume) violations.push(`${id}: a step ran before the resume`);
        if (grant < 0 || begin.i < grant) violations.push(`${id}: a step ran without its lane's grant`);
        if (at(begin.e) < previousFirst) violations.push(`${id}: started before a run of ${user} accepted earlier`);
        previousFirst = at(begin.e);
      }
      // Per key, the runs that were never paused are the first ones accepted.
      const firstPaused = notPaused[user]!.indexOf(false);
      if (firstPaused >= 0 && notPaused[user]!.slice(firstPaused).includes(true))
        violations.push(`${user}: a run accepted after a paused one was not paused`);
    }
    for (const id of ids) if (runs.get(id)?.length !== 1) violations.push(`${id}: ${runs.get(id)?.length ?? 0} runs`);
    for (const id of runs.keys()) if (!ids.includes(id)) violations.push(`${id}: a run for an event never accepted`);
    const after = await patiently('GET', `/api/v1/automations/${listener.id}`);

    figures.breakerDrill = {
      events: ids.length,
      answers: tally(answers),
      pausedBeforeResume: pausedListed.size,
      resumeAnswers,
      resumeAnsweredSeconds,
      neverPaused,
      completedRuns: [...runs.values()].filter((s) => s.length === 1 && s[0] === 'COMPLETED').length,
      faults,
      resumeToAllCompletedSeconds: Math.round((Date.now() - resumedAt) / 1000),
      seconds: Math.round((Date.now() - began) / 1000),
      violations: violations.length,
    };
    console.log(`breaker drill: ${JSON.stringify(figures.breakerDrill)}`);
    expect(violations.slice(0, 20)).toEqual([]);
    expect(faults).toHaveLength(3);
    expect(runs.size).toBe(SENDERS * EVENTS_PER_SENDER);
    expect(neverPaused).toBe(MAX_RUNS);
    expect(after.automation.breaker).toMatchObject({ state: 'CLOSED' });
  });
});

describe(`bulk rerun of ${FAILED_RUNS} failed runs while a worker and Temporal's frontend are killed`, () => {
  it('exactly one new run per failed run, each naming the run and the bulk action; the counters add up', async () => {
    const began = Date.now();
    // The outage: every run fails at its step (a CEL error: the field is not in the payload).
    const listener = await createAutomation({
      displayName: 'bulk drill',
      steps: [{ id: 'grant', setVariables: { who: 'ctx.trigger.missing' } }],
    });
    const originals: string[] = [];
    const answers: Array<number | string> = [];
    let next = 0;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        for (let n = next++; n < FAILED_RUNS; n = next++) {
          const eventId = randomUUID();
          await deliver(listener, eventId, JSON.stringify({ n, employee: `e-${n}` }), answers);
          originals.push(runId(listener, eventId));
        }
      }),
    );
    const query = `ListenerId = "${listener.listenerId}"`;
    await settled(query, originals, 'FAILED');
    // The outage is over: the step is fixed and published; the failed runs are rerun on that version.
    await api('POST', `/api/v1/automations/${listener.id}`, {
      automation: { steps: [{ id: 'grant', setVariables: { who: 'ctx.trigger.employee' } }] },
      updateMask: 'steps',
    });
    await api('POST', `/api/v1/automations/${listener.id}/publish`, {});

    const preview = await api('POST', '/api/v1/automation_executions/bulk', {
      dryRun: true,
      reason: 'after the outage',
      filter: { automationId: listener.id, status: ['FAILED'] },
    });
    expect(preview.matched).toBe(FAILED_RUNS);
    const actionStarted = Date.now();
    const created = (
      await api(
        'POST',
        '/api/v1/automation_executions/bulk',
        { previewId: preview.previewId, action: 'rerun', reason: 'after the outage' },
        202,
      )
    ).bulkAction;
    const bulkId = created.id as string;
    const progress = (): Promise<Json> =>
      patiently('GET', `/api/v1/bulk_actions/${bulkId}`).then((json) => json.bulkAction);
    const faults: string[] = [];
    await stack.processes.get('worker-1')!.kill('SIGKILL', false);
    faults.push(`worker-1 SIGKILLed at ${(await progress()).succeeded} succeeded`);
    const midway = await poll(progress, (a) => a.succeeded >= FAILED_RUNS / 3 || a.state !== 'RUNNING', {
      what: 'a third of the reruns',
      timeoutMs: 10 * 60_000,
      intervalMs: 500,
    });
    await stack.processes.get('temporal-frontend')!.kill('SIGKILL', false);
    faults.push(`temporal-frontend SIGKILLed at ${midway.succeeded} succeeded (${midway.state})`);
    const done = await poll(progress, (a) => a.state !== 'RUNNING', {
      what: 'the bulk action to end',
      timeoutMs: 15 * 60_000,
      intervalMs: 1000,
    });
    const actionSeconds = Math.round((Date.now() - actionStarted) / 1000);
    for (const name of ['worker-1', 'temporal-frontend']) await stack.waitReady(name);

    expect(done).toMatchObject({
      state: 'COMPLETED',
      matched: FAILED_RUNS,
      succeeded: FAILED_RUNS,
      skipped: 0,
      failed: 0,
    });
    const rerunIds = originals.map((id) => `${id}:rerun-bulk-${bulkId}`);
    // Whatever their ids: every new run the action started, once visibility lists them all closed.
    const runs = await poll(
      () => listed(query),
      (found) =>
        found.size >= 2 * FAILED_RUNS && [...found.values()].every((statuses) => !statuses.includes('RUNNING')),
      { what: `${FAILED_RUNS} new runs closed`, timeoutMs: 15 * 60_000, intervalMs: 3000 },
    );
    const violations: string[] = [];
    for (const id of originals)
      if (JSON.stringify(runs.get(id)) !== '["FAILED"]') violations.push(`${id}: ${JSON.stringify(runs.get(id))}`);
    for (const id of rerunIds)
      if (JSON.stringify(runs.get(id)) !== '["COMPLETED"]')
        violations.push(`${id}: ${JSON.stringify(runs.get(id) ?? [])}`);
    const reruns = [...runs.keys()].filter((id) => id.includes(':rerun-'));
    for (const id of reruns)
      if (!rerunIds.includes(id)) violations.push(`${id}: a rerun not derived from this action and a matched run`);
    for (const [i, id] of rerunIds.entries()) {
      if (!runs.has(id)) continue;
      const execution = (await patiently('GET', `/api/v1/automation_executions/${encodeURIComponent(id)}`)).execution;
      if (execution.rerunOf !== originals[i] || execution.bulkActionId !== bulkId || execution.status !== 'COMPLETED') {
        violations.push(
          `${id}: ${JSON.stringify({ rerunOf: execution.rerunOf, bulkActionId: execution.bulkActionId, status: execution.status })}`,
        );
      }
    }
    figures.bulkDrill = {
      failedRuns: originals.length,
      answers: tally(answers),
      matched: done.matched,
      succeeded: done.succeeded,
      skipped: done.skipped,
      failed: done.failed,
      newRuns: reruns.length,
      faults,
      actionSeconds,
      seconds: Math.round((Date.now() - began) / 1000),
      violations: violations.length,
    };
    console.log(`bulk drill: ${JSON.stringify(figures.bulkDrill)}`);
    expect(violations.slice(0, 20)).toEqual([]);
    expect(reruns).toHaveLength(FAILED_RUNS);
    expect(done.succeeded + done.skipped + done.failed).toBe(done.matched);
  });
});
