/**
 * Schedules and directory events on the production shape (`npm run stack:prod`, on a PostgreSQL of
 * the drill's own): an interval schedule every 5 s (`overlap: BUFFER_ALL`) and an event automation
 * on `user.created` run for 3 minutes while 100 users are created through the API, and a worker,
 * both APIs in turn and Temporal's frontend are SIGKILLed (the stack's supervisor restarts them).
 * Then: each scheduled time between the publish and the unpublish ran exactly once (every outage
 * is far inside the 300 s catch-up window), and each user's `user.created` event started exactly
 * one run. Figures go to the console.
 */
import type { ProdStack } from '../../scripts/stack-prod';
import {
  persistently as persistentlyAt,
  startDrillStack,
  stopDrillStack,
  type DrillStackParts,
  type Json,
} from './drill-stack';
import { callApi } from '../helpers/api-call';
import { sleep } from '../helpers/wait';

const USERS = 100;
const RUN_FOR_MS = 180_000;
const EVERY_MS = 5_000;
/** When each process is killed, from the publish. */
const KILLS: Array<[number, string]> = [
  [30_000, 'worker-1'],
  [60_000, 'api-1'],
  [90_000, 'api-2'],
  [120_000, 'temporal-frontend'],
];

const parts: DrillStackParts = {};
let stack: ProdStack;
let entryPort: number;
let token: string;

const call = (method: 'GET' | 'POST', pathname: string, body?: unknown): Promise<Json> =>
  callApi(entryPort, token, method, pathname, body);

/** A call retried while the stack is being killed (drill-stack.ts). */
const persistently = (method: 'GET' | 'POST', pathname: string, body?: unknown): Promise<Json> =>
  persistentlyAt(entryPort, token, method, pathname, body);

/** Every run of an automation (all pages). */
async function runsOf(automationId: string): Promise<Json[]> {
  const runs: Json[] = [];
  let pageToken = '';
  do {
    const page = await persistently(
      'GET',
      `/api/v1/automations/${automationId}/executions?page_size=100${pageToken ? `&page_token=${encodeURIComponent(pageToken)}` : ''}`,
    );
    runs.push(...page.list.map((item: Json) => item.execution));
    pageToken = page.nextPageToken;
  } while (pageToken);
  return runs;
}

beforeAll(async () => {
  ({ stack, entryPort, token } = await startDrillStack('schedules', parts, undefined, {
    ACCESS_TOKEN_TTL_SECONDS: '3600',
  }));
}, 30 * 60_000);

afterAll(async () => {
  await stopDrillStack(parts);
}, 120_000);

describe('a 5 s schedule and a user.created automation for 3 minutes while processes are killed', () => {
  it('each scheduled time ran exactly once, each user event started exactly one run', async () => {
    const steps = [{ id: 'seen', setVariables: { kind: "has(ctx.trigger.kind) ? ctx.trigger.kind : 'event'" } }];
    const scheduled = (
      await call('POST', '/api/v1/automations', {
        displayName: 'Every 5 s',
        trigger: { schedule: { interval: '5s', overlap: 'BUFFER_ALL' } },
        steps,
      })
    ).automation;
    const onUsers = (
      await call('POST', '/api/v1/automations', {
        displayName: 'On user.created',
        trigger: { event: { types: ['user.created'] } },
        steps,
      })
    ).automation;
    await call('POST', `/api/v1/automations/${onUsers.id}/publish`);
    await call('POST', `/api/v1/automations/${scheduled.id}/publish`);
    const publishedAt = Date.now();

    const faults: string[] = [];
    const killing = (async () => {
      for (const [at, victim] of KILLS) {
        await sleep(Math.max(0, publishedAt + at - Date.now()));
        await stack.processes.get(victim)!.kill('SIGKILL', false);
        faults.push(`${victim} at ${Math.round((Date.now() - publishedAt) / 1000)} s`);
        // The supervisor starts it again a second later.
        const proc = stack.processes.get(victim)!;
        while (!proc.running) await sleep(100);
        await stack.waitReady(victim);
      }
    })();
    const userIds: string[] = [];
    for (let i = 0; i < USERS; i++) {
      await sleep(Math.max(0, publishedAt + ((i + 1) * (RUN_FOR_MS - 20_000)) / USERS - Date.now()));
      // An answer lost to a kill is asked again: the directory may then hold the user twice (counted below).
      const made = await persistently('POST', '/api/v1/users', {
        displayName: `Drill ${i}`,
        email: `drill-${i}@acme.example`,
        type: 'USER_TYPE_HUMAN',
      });
      userIds.push(made.user.id as string);
    }
    await killing;
    await sleep(Math.max(0, publishedAt + RUN_FOR_MS - Date.now()));
    await persistently('POST', `/api/v1/automations/${scheduled.id}/unpublish`);
    const unpublishedAt = Date.now();

    // Every run closes (BUFFER_ALL works off what the outages held back, in order).
    const deadline = Date.now() + 4 * 60_000;
    let scheduleRuns: Json[] = [];
    let eventRuns: Json[] = [];
    for (;;) {
      [scheduleRuns, eventRuns] = await Promise.all([runsOf(scheduled.id), runsOf(onUsers.id)]);
      const open = [...scheduleRuns, ...eventRuns].filter((run) => run.status === 'RUNNING').length;
      if (open === 0 && eventRuns.length >= userIds.length) break;
      if (Date.now() > deadline)
        throw new Error(`runs still open: ${open}; event runs ${eventRuns.length} of ${USERS}`);
      await sleep(2000);
    }

    // The times that were due while the schedule was published, on the epoch's 5 s grid.
    const expected: string[] = [];
    for (let t = Math.ceil((publishedAt + 1000) / EVERY_MS) * EVERY_MS; t <= unpublishedAt - 2000; t += EVERY_MS)
      expected.push(new Date(t).toISOString());
    const byTime = new Map<string, number>();
    for (const run of scheduleRuns) byTime.set(run.eventId, (byTime.get(run.eventId) ?? 0) + 1);
    const missing = expected.filter((time) => !byTime.has(time));
    const twice = [...byTime].filter(([, n]) => n > 1).map(([time]) => time);
    const lateness = await Promise.all(
      scheduleRuns.slice(0, 20).map(async (run) => Date.parse(run.startedAt) - Date.parse(run.eventId)),
    );
    const userEvents = new Map<string, number>();
    for (const run of eventRuns) userEvents.set(run.eventId, (userEvents.get(run.eventId) ?? 0) + 1);
    // Every user the directory holds was one committed user.created event.
    const users: Json[] = [];
    let usersToken = '';
    do {
      const page = await persistently(
        'GET',
        `/api/v1/users?page_size=100${usersToken ? `&page_token=${encodeURIComponent(usersToken)}` : ''}`,
      );
      users.push(...page.list.map((item: Json) => item.user));
      usersToken = page.nextPageToken;
    } while (usersToken);
    const committed = users.filter((user) => String(user.email).startsWith('drill-')).length;
    const eventLog = await persistently('GET', `/api/v1/automations/${onUsers.id}/deliveries?page_size=200`);
    const started = eventLog.list.filter((item: Json) => item.delivery.reason === 'started').length;
    console.log(
      `schedules drill: ${scheduleRuns.length} scheduled runs for ${expected.length} times due ` +
        `(missing ${missing.length}, twice ${twice.length}); ${eventRuns.length} event runs for ${committed} users committed ` +
        `(${[...userEvents.values()].filter((n) => n > 1).length} events twice; delivery log started ${started}); ` +
        `start after scheduled time p50 ${[...lateness].sort((a, b) => a - b)[Math.floor(lateness.length / 2)]} ms ` +
        `(the 20 newest); faults: ${faults.join(', ')}`,
    );
    expect(faults).toHaveLength(KILLS.length);
    expect(missing).toEqual([]);
    expect(twice).toEqual([]);
    expect(scheduleRuns.every((run) => run.status === 'COMPLETED')).toBe(true);
    expect(committed).toBeGreaterThanOrEqual(USERS);
    expect(eventRuns).toHaveLength(committed);
    expect(userEvents.size).toBe(committed);
    expect(eventRuns.every((run) => run.status === 'COMPLETED')).toBe(true);
    expect(userIds).toHaveLength(USERS);
  });
});
