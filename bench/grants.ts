/**
 * Grant figures (`npm run bench -- --only=grants`), on the shared stack (the automation worker runs
 * grants' workflows; the baseline worker the floors):
 *   ratioToFloor        a grant's time to GRANTED (createdAt → grantedAt, the store's clock) for an
 *                       entitlement provisioned in its workflow (a multiStep of one unconfigured
 *                       step: start, one activity that writes the row), p50 of sequential grants ÷
 *                       a bare workflow that records one row and returns (start → its activity's
 *                       write), same server, same store
 *   expiryLatenessP99Ms 100 standing grants moved to the same expiresAt (the extend signal), p99 of
 *                       revokedAt − expiresAt
 *   expiryRatioToFloor  the same for `expiryGrants` grants (1,000 quick, 10,000 full) ÷ the p99
 *                       lateness of as many bare workflows sleeping until one instant, then
 *                       recording one row (bench/workflows/bare.ts `timerThenRow`)
 *   ingressRatioDuringExpiry  webhook ingress while the `expiryGrants` grants expire ÷ plain, as
 *                       information: both share the worker, the store and the server
 * Goals from the issue: ratioToFloor ≤ 1.3, expiryLatenessP99Ms ≤ 5,000, expiryRatioToFloor ≤ 1.5.
 */
import { randomUUID } from 'node:crypto';
import { createGrant, type GrantEngine } from '../src/domain/grants';
import { createTemporalEngine } from '../src/temporal/engine';
import { newId } from '../src/ids';
import type { timerThenRow, rowNow } from './workflows/bare';
import { AUTOMATION_QUEUE, BARE_QUEUE, type Stack } from './stack';
import { percentile } from './util';

export interface GrantsResult {
  grantedP50Ms: number;
  floorP50Ms: number;
  ratioToFloor: number;
  expiry100P99Ms: number;
  expiryGrants: number;
  expiryManyP99Ms: number;
  floorManyP99Ms: number;
  expiryRatioToFloor: number;
  /** Webhook ingress while the many grants expired ÷ plain (same load), when measured. */
  ingressRatioDuringExpiry: number | null;
}

export interface GrantsTiming {
  samples: number;
  expiryGrants: number;
}

const ACTOR = 'client:bench';

async function inBatches<T>(items: T[], size: number, fn: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: size }, async () => {
      while (next < items.length) await fn(items[next++]!);
    }),
  );
}

/** An app and an entitlement with `provisionerPolicy` in the store (the domain, as the API writes them). */
async function entitlementOf(
  stack: Stack,
  provisionerPolicy: Record<string, unknown> | null,
): Promise<{ appId: string; id: string }> {
  const appId = newId();
  const id = newId();
  await stack.db.query('INSERT INTO apps (id, display_name) VALUES ($1, $2)', [appId, 'Bench grants']);
  await stack.db.query(
    'INSERT INTO app_entitlements (id, app_id, display_name, slug, record) VALUES ($1, $2, $3, $4, $5::jsonb)',
    [id, appId, 'Bench', `bench-${id}`, JSON.stringify(provisionerPolicy ? { provisionerPolicy } : {})],
  );
  return { appId, id };
}

async function usersOf(stack: Stack, n: number): Promise<string[]> {
  const ids = Array.from({ length: n }, () => newId());
  for (let i = 0; i < ids.length; i += 500) {
    const chunk = ids.slice(i, i + 500);
    await stack.db.query(
      `INSERT INTO users (id, display_name, type) SELECT u, 'Bench', 'USER_TYPE_HUMAN' FROM unnest($1::text[]) AS u`,
      [chunk],
    );
  }
  return ids;
}

async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`bench grants: ${what} not within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Standing grants of `n` users moved to one expiresAt: p99 of revokedAt − expiresAt. */
async function expiryLateness(
  stack: Stack,
  engine: GrantEngine,
  n: number,
  log: (line: string) => void,
): Promise<number> {
  const e = await entitlementOf(stack, null);
  const users = await usersOf(stack, n);
  const ids: string[] = [];
  await inBatches(users, 16, async (userId) => {
    const made = await createGrant(stack.db, engine, { userId, appId: e.appId, appEntitlementId: e.id }, ACTOR);
    ids.push(made.grant.id);
  });
  // Every workflow is waiting (no timer: standing); give them all one expiresAt, far enough ahead.
  const at = new Date(Date.now() + 5_000 + n * 3).toISOString();
  await stack.db.query('UPDATE grants SET expires_at = $1::timestamptz WHERE id = ANY($2::text[])', [at, ids]);
  await inBatches(ids, 32, (id) => engine.signalGrant(id, { type: 'extend', expiresAt: at }));
  if (Date.now() > Date.parse(at)) throw new Error('bench grants: the expiresAt passed before every grant was told');
  log(`grants: ${n} grants expire at ${at}`);
  await waitFor(
    `${n} grants REVOKED`,
    async () => {
      const rows = await stack.db.query<{ n: string }>(
        `SELECT count(*)::text AS n FROM grants WHERE app_entitlement_id = $1 AND state = 'REVOKED'`,
        [e.id],
      );
      return Number(rows[0]!.n) === n;
    },
    120_000 + n * 20,
  );
  const rows = await stack.db.query<{ ms: string }>(
    `SELECT (extract(epoch FROM revoked_at - expires_at) * 1000)::text AS ms FROM grants WHERE app_entitlement_id = $1`,
    [e.id],
  );
  return percentile(
    rows.map((r) => Number(r.ms)),
    99,
  );
}

/**
 * `n` bare workflows sleeping until one instant, then recording one row: p99 of the record's time −
 * the instant. Every workflow is started (its timer set) well before the instant, as the grants are.
 */
async function timerFloor(stack: Stack, n: number): Promise<number> {
  const at = Date.now() + 5_000 + n * 10;
  const handles: Array<{ result(): Promise<number> }> = [];
  const ids = Array.from({ length: n }, () => `bench-timer-${randomUUID()}`);
  await inBatches(ids, 32, async (workflowId) => {
    handles.push(
      await stack.client.workflow.start<typeof timerThenRow>('timerThenRow', {
        taskQueue: BARE_QUEUE,
        workflowId,
        args: [{ at }],
      }),
    );
  });
  if (Date.now() > at - 2_000) throw new Error('bench grants: the floor timers were not all started in time');
  const stamps = await Promise.all(handles.map((h) => h.result()));
  return percentile(
    stamps.map((t) => t - at),
    99,
  );
}

export async function runGrantsBench(
  stack: Stack,
  timing: GrantsTiming,
  log: (line: string) => void,
  ingressWhile?: (during: Promise<unknown>) => Promise<number | null>,
): Promise<GrantsResult> {
  const engine = createTemporalEngine({ client: stack.workerClient, taskQueue: AUTOMATION_QUEUE, db: stack.db });

  // Time to GRANTED through the workflow, sequentially, against the floor's one-row workflow.
  const e = await entitlementOf(stack, { multiStep: { provisionSteps: [{ unconfigured: {} }] } });
  const users = await usersOf(stack, timing.samples);
  const granted: number[] = [];
  for (const userId of users) {
    const made = await createGrant(stack.db, engine, { userId, appId: e.appId, appEntitlementId: e.id }, ACTOR);
    let row: { ms: string | null } | undefined;
    await waitFor(
      'a grant GRANTED',
      async () => {
        row = (
          await stack.db.query<{ ms: string | null }>(
            `SELECT (extract(epoch FROM granted_at - created_at) * 1000)::text AS ms FROM grants WHERE id = $1 AND state = 'GRANTED'`,
            [made.grant.id],
          )
        )[0];
        return row !== undefined;
      },
      30_000,
    );
    granted.push(Number(row!.ms));
  }
  const floor: number[] = [];
  for (let i = 0; i < timing.samples; i++) {
    const started = Date.now();
    const recorded = await stack.client.workflow.execute<typeof rowNow>('rowNow', {
      taskQueue: BARE_QUEUE,
      workflowId: `bench-row-${randomUUID()}`,
      args: [],
    });
    floor.push(recorded - started);
  }
  const grantedP50Ms = percentile(granted, 50);
  const floorP50Ms = percentile(floor, 50);
  log(`grants: granted p50 ${grantedP50Ms.toFixed(1)} ms, floor p50 ${floorP50Ms.toFixed(1)} ms`);

  const expiry100P99Ms = await expiryLateness(stack, engine, 100, log);
  const many = expiryLateness(stack, engine, timing.expiryGrants, log);
  const ingressRatioDuringExpiry = ingressWhile ? await ingressWhile(many) : null;
  const expiryManyP99Ms = await many;
  const floorManyP99Ms = await timerFloor(stack, timing.expiryGrants);
  log(
    `grants: ${timing.expiryGrants} expiries p99 ${expiryManyP99Ms.toFixed(0)} ms late, ${timing.expiryGrants} bare timers p99 ${floorManyP99Ms.toFixed(0)} ms`,
  );
  return {
    grantedP50Ms,
    floorP50Ms,
    ratioToFloor: grantedP50Ms / floorP50Ms,
    expiry100P99Ms,
    expiryGrants: timing.expiryGrants,
    expiryManyP99Ms,
    floorManyP99Ms,
    expiryRatioToFloor: expiryManyP99Ms / Math.max(1, floorManyP99Ms),
    ingressRatioDuringExpiry,
  };
}
