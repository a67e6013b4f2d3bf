/**
 * Event-trigger figures (`npm run bench -- --only=events`), on the shared stack's Temporal server,
 * for each store (PGlite in a data directory as `npm start` keeps it; PostgreSQL when DATABASE_URL
 * is set), each a fresh store with one API of its own (bench/stack.ts `startApi`, composed as
 * src/main.ts composes it: one event dispatcher, woken by the commit's NOTIFY):
 *   dispatchP50Ms  a published automation with `trigger: {event: {types: ["user.created"]}}`; a
 *                  user made by `createUser` (src/domain/users.ts) on the API's store, one at a
 *                  time: the transaction's commit (its promise resolved) → the run's start (the
 *                  engine's start time of the run, from describe, to the µs), p50
 *   floorP50Ms     a store commit (a one-row insert, same store) → the bench's bare
 *                  `client.workflow.start` of a trivial workflow (its start time, from describe), p50
 *   ratioToFloor   dispatchP50Ms ÷ floorP50Ms
 * Runs start on the task queue nobody polls (only the dispatch is measured); the two sides take
 * turns, one sample each, a pause between.
 * Goal from the issue: dispatchP50Ms ≤ 250.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { AccessTokens } from '../src/auth/tokens';
import { createClient } from '../src/auth/clients';
import { SecretBox } from '../src/crypto/secret-box';
import { createUser } from '../src/domain/users';
import { runWorkflowId } from '../src/contract/run';
import type { Db } from '../src/store/db';
import { openDataDirStore, openStore, startApi, UNPOLLED_QUEUE, type Stack } from './stack';
import { percentile, request } from './util';

export interface EventsResult {
  store: 'pglite' | 'postgres';
  dispatchP50Ms: number;
  dispatchP90Ms: number;
  floorP50Ms: number;
  floorP90Ms: number;
  ratioToFloor: number;
  samples: number;
  /** Commit → the run's event marked dispatched (the store's clock, after the start), p50. */
  markedP50Ms: number;
}

export interface EventsTiming {
  samples: number;
}

const WARMUP = 3;
const PAUSE_MS = 300;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The run's start time on the engine, to the microsecond (describe's `startTime` is a Date: whole ms). */
async function startedAtMs(stack: Stack, workflowId: string): Promise<number> {
  const described = await stack.client.workflow.getHandle(workflowId).describe();
  const t = described.raw.workflowExecutionInfo?.startTime;
  if (!t) return described.startTime.getTime();
  return Number(t.seconds ?? 0) * 1000 + (t.nanos ?? 0) / 1e6;
}

export async function runEventsBench(
  stack: Stack,
  target: { name: 'pglite' | 'postgres'; databaseUrl: string | undefined },
  timing: EventsTiming,
  log: (line: string) => void,
): Promise<EventsResult> {
  const db: Db = target.databaseUrl ? await openStore(target.databaseUrl) : await openDataDirStore();
  const stops: Array<() => Promise<void>> = [];
  try {
    const secretBox = new SecretBox(randomBytes(32));
    const tokens = await AccessTokens.load(db, secretBox, 3600);
    const api = await startApi(
      {
        db,
        tokens,
        pageTokenKey: randomBytes(32),
        secretBox,
        temporalAddress: stack.temporalAddress,
        taskQueue: UNPOLLED_QUEUE,
      },
      stops,
    );
    const { client } = await createClient(db, secretBox, { displayName: 'bench', roles: ['super_admin'] });
    const token = await tokens.issue(client.clientId, ['super_admin']);
    const created = await request('POST', `${api.url}/api/v1/automations`, {
      token,
      body: JSON.stringify({
        displayName: 'Bench: on user.created',
        trigger: { event: { types: ['user.created'] } },
        steps: [{ id: 'seen', setVariables: { who: 'ctx.trigger.user.displayName' } }],
      }),
    });
    if (created.status !== 200)
      throw new Error(`bench events: create ${created.status} ${JSON.stringify(created.body)}`);
    const automationId = String(created.body.automation.id);
    const published = await request('POST', `${api.url}/api/v1/automations/${automationId}/publish`, { token });
    if (published.status !== 200) throw new Error(`bench events: publish ${published.status}`);
    const listenerId = (
      await db.query<{ listener_id: string }>('SELECT listener_id FROM automations WHERE id = $1', [automationId])
    )[0]!.listener_id;
    await db.query('CREATE TABLE bench_event_floor (id bigserial PRIMARY KEY, at timestamptz DEFAULT now())');

    log(`events (${target.name}): ${WARMUP + timing.samples} users made, each beside a bare start after a commit`);
    const users: Array<{ userId: string; committedAt: number }> = [];
    const floors: Array<{ workflowId: string; committedAt: number }> = [];
    for (let i = 0; i < WARMUP + timing.samples; i++) {
      const user = await createUser(
        db,
        { displayName: `Bench ${i}`, email: `bench-${i}-${randomUUID()}@acme.example`, type: 'USER_TYPE_HUMAN' },
        'client:bench',
      );
      if (i >= WARMUP) users.push({ userId: user.id, committedAt: Date.now() });
      await sleep(PAUSE_MS);
      await db.transaction((tx) => tx.query('INSERT INTO bench_event_floor DEFAULT VALUES'));
      const committedAt = Date.now();
      const workflowId = `bench-event-floor-${randomUUID()}`;
      await stack.client.workflow.start('empty', { taskQueue: UNPOLLED_QUEUE, workflowId, args: [] });
      if (i >= WARMUP) floors.push({ workflowId, committedAt });
      await sleep(PAUSE_MS);
    }

    const dispatch: number[] = [];
    const marked: number[] = [];
    for (const { userId, committedAt } of users) {
      let row: { id: string; marked: string | null } | undefined;
      for (let tries = 0; tries < 100; tries++) {
        row = (
          await db.query<{ id: string; marked: string | null }>(
            `SELECT id, (extract(epoch FROM dispatched_at) * 1000)::text AS marked FROM directory_events WHERE payload->'user'->>'id' = $1`,
            [userId],
          )
        )[0];
        if (row?.marked) break;
        await sleep(100);
      }
      if (!row?.marked)
        throw new Error(`bench events (${target.name}): the event of user ${userId} was not dispatched`);
      dispatch.push((await startedAtMs(stack, runWorkflowId(listenerId, row.id))) - committedAt);
      marked.push(Number(row.marked) - committedAt);
    }
    const floor: number[] = [];
    for (const { workflowId, committedAt } of floors) {
      floor.push((await startedAtMs(stack, workflowId)) - committedAt);
    }
    const dispatchP50Ms = percentile(dispatch, 50);
    const floorP50Ms = percentile(floor, 50);
    log(
      `events (${target.name}): commit → run started p50 ${dispatchP50Ms.toFixed(1)} ms, commit → bare start p50 ${floorP50Ms.toFixed(1)} ms`,
    );
    return {
      store: target.name,
      dispatchP50Ms,
      dispatchP90Ms: percentile(dispatch, 90),
      floorP50Ms,
      floorP90Ms: percentile(floor, 90),
      ratioToFloor: dispatchP50Ms / Math.max(0.5, floorP50Ms),
      samples: dispatch.length,
      markedP50Ms: percentile(marked, 50),
    };
  } finally {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    await db.close().catch(() => undefined);
  }
}
