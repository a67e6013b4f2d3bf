/**
 * The delivery log: GET /api/v1/automations/{id}/deliveries shows what the receiver answered each
 * delivery and why (newest first, paginated, filters status and reason), never a body, signature
 * or secret; a flood keeps a bounded number of entries per listener per minute and counts the
 * rest; entries older than 7 days are pruned. Real HTTP, real store, real Temporal.
 */
import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { startStack, hmacEvent, deliver, listenerPath, type Stack, type AutomationView } from '../helpers/stack';

import { DeliveryLog } from '../../src/delivery/delivery-log';
import { insertDeliveries, listDeliveryCounts } from '../../src/store/deliveries';
import { poll } from '../helpers/wait';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
const MARKER = 'body-marker-5c1d';
const STEPS = [{ id: 'v', setVariables: { x: 'ctx.trigger.x' } }];

describe('webhook delivery log', () => {
  let stack: Stack;
  let automation: AutomationView;
  let secret: string;
  const list = (query = '', token = stack.adminToken) =>
    request(stack.service.server)
      .get(`/api/v1/automations/${automation.id}/deliveries${query}`)
      .set('Authorization', `Bearer ${token}`);

  beforeAll(async () => {
    stack = await startStack();
    const created = await stack.createAutomation({
      displayName: 'logged',
      trigger: { incomingWebhook: { authMethod: 'HMAC' } },
      steps: STEPS,
    });
    automation = created.automation;
    secret = created.signingSecret!;
  });
  afterAll(async () => stack?.close());

  it('lists accepted, refused and duplicate deliveries newest first with their reason, and nothing secret', async () => {
    const path = listenerPath(automation);
    const good = hmacEvent(secret, { x: MARKER });
    const accepted = await deliver(stack, path, good);
    expect(accepted.status).toBe(200);
    expect((await deliver(stack, path, good)).status).toBe(409);
    const forged = hmacEvent('wrong-secret', { x: MARKER });
    expect((await deliver(stack, path, forged)).status).toBe(401);

    const res = await poll(
      () => list(),
      (r) => r.status === 200 && r.body.list.length === 3,
    );
    expect(res.status).toBe(200);
    expect(res.body.nextPageToken).toBe('');
    const entries = res.body.list.map((item: Json) => item.delivery) as Json[];
    expect(entries.map((e) => [e.status, e.reason])).toEqual([
      [401, 'signature_mismatch'],
      [409, 'duplicate_event'],
      [200, 'accepted'],
    ]);
    expect(entries[2]).toEqual({
      receivedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z$/),
      status: 200,
      reason: 'accepted',
      eventId: good.eventId,
      sourceAddress: '127.0.0.1',
      executionId: accepted.body.executionId,
      latencyMs: expect.any(Number),
      source: 'webhook',
    });
    expect(entries[1]!.executionId).toBe(accepted.body.executionId);
    expect(entries[0]!.eventId).toBe(forged.eventId);
    expect(entries[0]!.executionId).toBeNull();
    const text = JSON.stringify(res.body);
    for (const secretThing of [
      MARKER,
      secret,
      good.headers['Webhook-Signature']!,
      forged.headers['Webhook-Signature']!,
    ])
      expect(text).not.toContain(secretThing);

    // Filters, and pagination that keeps them.
    const refused = await list('?status=401');
    expect(refused.body.list.map((i: Json) => i.delivery.reason)).toEqual(['signature_mismatch']);
    expect((await list('?reason=duplicate_event')).body.list).toHaveLength(1);
    expect((await list(`?status=200&page_token=${encodeURIComponent(await pageToken())}`)).status).toBe(400);
  });

  /** A page token of this automation's unfiltered listing (made by paging over 11 entries). */
  async function pageToken(): Promise<string> {
    const path = listenerPath(automation);
    for (let i = 0; i < 8; i++) expect((await deliver(stack, path, hmacEvent('wrong', { i }))).status).toBe(401);
    const first = await poll(
      () => list('?page_size=10'),
      (r) => r.body.nextPageToken !== '',
    );
    expect(first.body.list).toHaveLength(10);
    const second = await list(`?page_size=10&page_token=${encodeURIComponent(first.body.nextPageToken)}`);
    expect(second.body.list.map((i: Json) => i.delivery.reason)).toEqual(['accepted']);
    expect(second.body.nextPageToken).toBe('');
    return first.body.nextPageToken as string;
  }

  it('refuses bad filters, other roles and unknown automations', async () => {
    expect((await list('?status=abc')).body).toEqual({
      code: 3,
      message: expect.stringContaining('status'),
      details: expect.any(Array),
    });
    expect((await list('?reason=DROP%20TABLE')).status).toBe(400);
    // admin reads deliveries (operating runs: "why does my sender get 401"); read_only does not.
    expect((await list('', await stack.service.tokenFor('admin'))).status).toBe(200);
    expect((await list('', await stack.service.tokenFor('read_only'))).status).toBe(403);
    const unknown = await request(stack.service.server)
      .get('/api/v1/automations/nope/deliveries')
      .set('Authorization', `Bearer ${stack.adminToken}`);
    expect(unknown.status).toBe(404);
  });

  it('a flood keeps a bounded number of entries per listener per minute and counts the rest', async () => {
    const deps = stack.service.deps;
    // A log with a small per-minute bound for this test only: the stack's own log is put back
    // after it, so the other tests (in any order) see every delivery in detail.
    const original = deps.deliveryLog;
    const flood = new DeliveryLog(deps.db, { detailPerMinute: 5, flushIntervalMs: 100 });
    deps.deliveryLog = flood;
    try {
      const created = await stack.createAutomation({
        displayName: 'flooded',
        trigger: { incomingWebhook: { authMethod: 'HMAC' } },
        steps: STEPS,
      });
      const path = listenerPath(created.automation);
      const total = 20;
      for (let i = 0; i < total; i++) {
        expect((await deliver(stack, path, hmacEvent('wrong', { i }, { eventId: randomUUID() }))).status).toBe(401);
      }
      await flood.flush();
      const detail = (
        await request(stack.service.server)
          .get(`/api/v1/automations/${created.automation.id}/deliveries?page_size=100`)
          .set('Authorization', `Bearer ${stack.adminToken}`)
      ).body.list as Json[];
      const counts = await listDeliveryCounts(deps.db, created.automation.id);
      const counted = counts.reduce((sum, c) => sum + c.count, 0);
      // Exactly 5 per minute in detail wherever that minute had more (then counted), all of a
      // minute's deliveries when it had 5 or fewer; every delivery accounted for. 20 deliveries take
      // seconds, not four minutes: at least one minute overflowed.
      const minuteOf = (at: string): string => new Date(Math.floor(Date.parse(at) / 60_000) * 60_000).toISOString();
      const detailByMinute = new Map<string, number>();
      for (const item of detail) {
        const minute = minuteOf(String(item.delivery.receivedAt));
        detailByMinute.set(minute, (detailByMinute.get(minute) ?? 0) + 1);
      }
      const countedByMinute = new Map(counts.map((c) => [c.minute, c.count]));
      expect(countedByMinute.size).toBeGreaterThanOrEqual(1);
      for (const minute of new Set([...detailByMinute.keys(), ...countedByMinute.keys()])) {
        const inDetail = detailByMinute.get(minute) ?? 0;
        if (countedByMinute.has(minute)) expect([minute, inDetail]).toEqual([minute, 5]);
        else expect([minute, inDetail <= 5]).toEqual([minute, true]);
      }
      expect(detail.length + counted).toBe(total);
      expect(counts.every((c) => c.status === 401 && c.reason === 'signature_mismatch')).toBe(true);
      expect(flood.summarized).toBe(counted);
    } finally {
      deps.deliveryLog = original;
      await flood.close();
    }
  });

  it('prunes entries older than 7 days and keeps the others', async () => {
    const db = stack.service.deps.db;
    // An automation of its own, so that the other tests' entries do not depend on this one's order.
    const created = await stack.createAutomation({
      displayName: 'pruned',
      trigger: { incomingWebhook: { authMethod: 'HMAC' } },
      steps: STEPS,
    });
    const listOwn = async (): Promise<Json[]> =>
      (
        await request(stack.service.server)
          .get(`/api/v1/automations/${created.automation.id}/deliveries?page_size=100`)
          .set('Authorization', `Bearer ${stack.adminToken}`)
      ).body.list.map((i: Json) => i.delivery);
    const entry = (ageMs: number, sourceAddress: string, n: number) => ({
      id: `00000000-0000-7000-8000-${(Date.now() + n).toString(16).padStart(12, '0')}`,
      automationId: created.automation.id,
      receivedAt: new Date(Date.now() - ageMs).toISOString(),
      status: 401,
      reason: 'signature_mismatch',
      eventId: null,
      sourceAddress,
      executionId: null,
      latencyMs: 1,
    });
    await insertDeliveries(db, [entry(8 * 86_400_000, '192.0.2.1', 0), entry(6 * 86_400_000, '192.0.2.2', 1)]);
    expect((await listOwn()).map((d) => d.sourceAddress).sort()).toEqual(['192.0.2.1', '192.0.2.2']);
    const pruning = new DeliveryLog(db, { pruneIntervalMs: 0, flushIntervalMs: 60_000 });
    await pruning.close();
    expect((await listOwn()).map((d) => d.sourceAddress)).toEqual(['192.0.2.2']);
  });
});
