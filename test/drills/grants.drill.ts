/**
 * Grants on the production shape (`npm run stack:prod`, on a PostgreSQL of the drill's own): 300
 * grants of an entitlement provisioned and deprovisioned by a webhook receiver (which answers 500
 * to its first 50 calls, then 202-and-a-callback to a third of the grants and 200 to the rest),
 * each for 60 s, while a worker, an API and the Temporal history process are SIGKILLed (the
 * stack's supervisor restarts them). Then every grant expires: each was provisioned and
 * deprovisioned exactly once (one distinct Idempotency-Key per grant and phase at the receiver,
 * however often it was called), all 300 end REVOKED by `system:expiry` with reason `expired`,
 * each `revokedAt` at most 5 s after the later of its `expiresAt` and the last killed process's
 * return, and the entitlement's grantCount is 0. Figures go to the console.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
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

const GRANTS = 300;
const FAILING_CALLS = 50;
const DURATION_S = 60;
/** How late a grant may end after the later of its expiresAt and the stack's last return. */
const LATENESS_BOUND_MS = 5_000;

const parts: DrillStackParts = {};
let stack: ProdStack;
let entryPort: number;
let token: string;
let receiver: http.Server;
let receiverOrigin: string;

const call = (method: 'GET' | 'POST', pathname: string, body?: unknown): Promise<Json> =>
  callApi(entryPort, token, method, pathname, body);

/** A call retried while the stack is being killed (drill-stack.ts). */
const persistently = (method: 'GET' | 'POST', pathname: string, body?: unknown): Promise<Json> =>
  persistentlyAt(entryPort, token, method, pathname, body);

/** When a killed process answers again: the supervisor starts it a second after it died. */
async function backAgain(name: string): Promise<number> {
  const proc = stack.processes.get(name)!;
  while (!proc.running) await sleep(100);
  await stack.waitReady(name);
  return Date.now();
}

/** What the receiver saw: every call, in order. */
const calls: Array<{ type: string; grantId: string; key: string; answered: number }> = [];
let callbacksSent = 0;

/** A third of the grants are answered 202 and called back (by the id's last hex digit). */
const accepts = (grantId: string): boolean => parseInt(grantId.slice(-1), 16) % 3 === 0;

async function callBack(url: string): Promise<void> {
  await sleep(500);
  for (let attempt = 0; attempt < 120; attempt++) {
    try {
      const res = await fetch(url, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ status: 'done' }),
      });
      // 404: used already (the service called again with the same key, and an earlier callback got through).
      if (res.status === 200 || res.status === 404) {
        callbacksSent += 1;
        return;
      }
    } catch {
      /* the entry or an API is down for a moment */
    }
    await sleep(500);
  }
}

beforeAll(async () => {
  receiver = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
        type: string;
        grant: { id: string };
        callbackUrl: string | null;
      };
      const status = calls.length < FAILING_CALLS ? 500 : accepts(body.grant.id) && body.callbackUrl ? 202 : 200;
      calls.push({
        type: body.type,
        grantId: body.grant.id,
        key: String(req.headers['idempotency-key']),
        answered: status,
      });
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end('{}');
      if (status === 202) void callBack(body.callbackUrl!);
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  receiverOrigin = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  ({ stack, entryPort, token } = await startDrillStack('grants', parts, undefined, {
    ALLOW_PRIVATE_OUTBOUND: 'true',
    ACCESS_TOKEN_TTL_SECONDS: '3600',
  }));
}, 30 * 60_000);

afterAll(async () => {
  await stopDrillStack(parts);
  await new Promise<void>((resolve) => receiver?.close(() => resolve()));
}, 120_000);

describe(`${GRANTS} webhook-provisioned grants of ${DURATION_S} s while processes are killed`, () => {
  it('each provisioned and deprovisioned exactly once, all REVOKED by expiry on time, grantCount 0', async () => {
    const hook = await call('POST', '/api/v1/provisioning_webhooks', {
      displayName: 'drill receiver',
      url: `${receiverOrigin}/provision`,
    });
    const webhookId = hook.provisioningWebhook.id as string;
    const app = (await call('POST', '/api/v1/apps', { displayName: 'Drill app' })).app;
    const entitlement = (
      await call('POST', `/api/v1/apps/${app.id}/entitlements`, {
        displayName: 'Drill access',
        provisionerPolicy: { webhook: { webhookId } },
        deprovisionerPolicy: { webhook: { webhookId } },
      })
    ).appEntitlement;
    const userIds: string[] = [];
    for (let i = 0; i < GRANTS; i += 20) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(20, GRANTS - i) }, (_, j) =>
          call('POST', '/api/v1/users', {
            displayName: `Drill ${i + j}`,
            email: `drill-${i + j}@acme.example`,
            type: 'USER_TYPE_HUMAN',
          }),
        ),
      );
      userIds.push(...batch.map((b) => b.user.id as string));
    }

    // The grants, 10 at a time; asking again after a lost answer returns the live grant (created: false).
    const grantIds = new Set<string>();
    const returns: Promise<number>[] = [];
    const faults: string[] = [];
    const killAt = new Map<number, string>([
      [100, 'worker-1'],
      [200, 'api-1'],
      [250, 'temporal-history'],
    ]);
    let made = 0;
    let next = 0;
    await Promise.all(
      Array.from({ length: 10 }, async () => {
        while (next < userIds.length) {
          const userId = userIds[next++]!;
          const answer = await persistently('POST', '/api/v1/grants', {
            userId,
            appId: app.id,
            appEntitlementId: entitlement.id,
            duration: `${DURATION_S}s`,
          });
          grantIds.add(answer.grant.id as string);
          made += 1;
          const victim = killAt.get(made);
          if (victim) {
            killAt.delete(made);
            await stack.processes.get(victim)!.kill('SIGKILL', false);
            faults.push(`${victim} after ${made} grants`);
            // The supervisor starts it again a second later: when it answers is "its return".
            returns.push(backAgain(victim));
          }
        }
      }),
    );
    expect(faults).toHaveLength(3);
    expect(grantIds.size).toBe(GRANTS);
    const lastReturn = Math.max(...(await Promise.all(returns)));

    // Every grant expires and is deprovisioned.
    const deadline = Date.now() + 6 * 60_000;
    let grants: Json[] = [];
    let lastReport = 0;
    for (;;) {
      grants = [];
      let pageToken = '';
      do {
        const page = await persistently(
          'GET',
          `/api/v1/grants?appEntitlementId=${entitlement.id}&page_size=100${pageToken ? `&page_token=${encodeURIComponent(pageToken)}` : ''}`,
        );
        grants.push(...page.list.map((item: Json) => item.grant));
        pageToken = page.nextPageToken;
      } while (pageToken);
      if (grants.length === GRANTS && grants.every((g) => g.state === 'REVOKED')) break;
      const states: Record<string, number> = {};
      for (const g of grants) states[g.state] = (states[g.state] ?? 0) + 1;
      if (Date.now() > deadline) {
        const stuck = grants.filter((g) => g.state !== 'REVOKED').slice(0, 3);
        throw new Error(`not every grant REVOKED in time: ${JSON.stringify(states)}; e.g. ${JSON.stringify(stuck)}`);
      }
      if (Date.now() - lastReport > 30_000) {
        lastReport = Date.now();
        console.log(`grants drill: ${JSON.stringify(states)}; receiver calls ${calls.length}`);
      }
      await sleep(2000);
    }

    expect(grants.map((g) => g.id).sort()).toEqual([...grantIds].sort());
    const lateness = grants.map((g) => Date.parse(g.revokedAt) - Math.max(Date.parse(g.expiresAt), lastReturn));
    const tooLate = grants.filter((_, i) => lateness[i]! > LATENESS_BOUND_MS);
    for (const g of grants) expect([g.revokedBy, g.revokeReason]).toEqual(['system:expiry', 'expired']);

    // The receiver: one distinct key per grant and phase, whatever the number of calls.
    const keys = new Map<string, Set<string>>();
    for (const c of calls) {
      const id = `${c.grantId} ${c.type}`;
      keys.set(id, (keys.get(id) ?? new Set()).add(c.key));
    }
    const provisioned = grants.filter((g) => keys.get(`${g.id} grant.provision`)?.size === 1).length;
    const deprovisioned = grants.filter((g) => keys.get(`${g.id} grant.deprovision`)?.size === 1).length;
    const count = (await call('GET', `/api/v1/apps/${app.id}/entitlements/${entitlement.id}`)).appEntitlement
      .grantCount as string;
    const sorted = [...lateness].sort((a, b) => a - b);
    // Where the time goes: expiresAt → the deprovision call's start (the expiry), that → revokedAt.
    const p50 = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
    const deprovisionStart = (g: Json) =>
      Date.parse(g.provisioning.find((e: Json) => e.phase === 'deprovision')?.startedAt ?? g.revokedAt);
    console.log(
      `grants drill: expiresAt → deprovision call p50 ${p50(grants.map((g) => deprovisionStart(g) - Date.parse(g.expiresAt)))} ms; ` +
        `deprovision call → revokedAt p50 ${p50(grants.map((g) => Date.parse(g.revokedAt) - deprovisionStart(g)))} ms; ` +
        `expiresAt spread ${Math.max(...grants.map((g) => Date.parse(g.expiresAt))) - Math.min(...grants.map((g) => Date.parse(g.expiresAt)))} ms`,
    );
    console.log(
      `grants drill: ${GRANTS} grants; provisioned once ${provisioned}, deprovisioned once ${deprovisioned}; ` +
        `receiver calls ${calls.length} (${calls.filter((c) => c.answered === 500).length} answered 500, ` +
        `${calls.filter((c) => c.answered === 202).length} answered 202, ${callbacksSent} callbacks); ` +
        `lateness after max(expiresAt, last return) p50 ${sorted[Math.floor(sorted.length / 2)]} ms, ` +
        `max ${sorted.at(-1)} ms; grantCount ${count}; faults: ${faults.join(', ')}`,
    );
    expect(provisioned).toBe(GRANTS);
    expect(deprovisioned).toBe(GRANTS);
    expect(keys.size).toBe(2 * GRANTS);
    expect(tooLate.map((g) => g.id)).toEqual([]);
    expect(count).toBe('0');
  });
});
