/**
 * Idempotency under contention: many simultaneous deliveries of one event (the sender retried
 * aggressively, or several senders relay the same event) are accepted exactly once — one 200, the
 * rest 409 with the original execution id — and the automation runs once.
 */
import { randomUUID } from 'node:crypto';
import type { RunState } from '../../src/contract/run';
import { hmacEvent, deliver, listenerPath, type Stack, type AutomationView, type RawResponse } from '../helpers/stack';
import { startPatientStack } from '../helpers/patient-stack';
import {
  startJwksServer,
  makeSigningKey,
  signWebhookJwt,
  type JwksServer,
  type SigningKey,
} from '../fixtures/jwks-server';

const SIMULTANEOUS = 40;
const PAYLOAD = { employee_id: '12345', status: 'terminated' };
const STEPS = [{ id: 'vars', setVariables: { employee: 'ctx.trigger.employee_id' } }];

describe('simultaneous deliveries of one event', () => {
  let stack: Stack;
  let jwks: JwksServer;
  let key: SigningKey;
  let hmac: { automation: AutomationView; secret: string };
  let jwt: AutomationView;

  beforeAll(async () => {
    key = await makeSigningKey('ES256', 'kid-concurrency');
    jwks = await startJwksServer([key.publicJwk]);
    // Contention on one workflow id is the point here, not latency: allow starts 30 s (the
    // production bound is 5 s) so that a loaded machine does not turn them into 503s.
    // 100 deliveries from one address at once (below): admission's per-source cap (64 by default)
    // is not what this file is about, so it is raised above them.
    stack = await startPatientStack(30_000, { env: { WEBHOOK_MAX_IN_FLIGHT_PER_SOURCE: '1000' } });
    const created = await stack.createAutomation({
      displayName: 'concurrency (HMAC)',
      trigger: { incomingWebhook: { authMethod: 'HMAC' } },
      steps: STEPS,
    });
    hmac = { automation: created.automation, secret: created.signingSecret! };
    jwt = (
      await stack.createAutomation({
        displayName: 'concurrency (JWT)',
        trigger: { incomingWebhook: { authMethod: 'JWT', jwksUrl: jwks.url } },
        steps: STEPS,
      })
    ).automation;
  });
  afterAll(async () => {
    await stack?.close();
    await jwks?.close();
  });

  /** Exactly one 200; every other answer a 409 naming the same execution; one run, completed. */
  async function expectAcceptedOnce(responses: RawResponse[], listenerId: string, eventId: string): Promise<void> {
    const executionId = `webhook:${listenerId}:${eventId.toLowerCase()}`;
    const statuses = responses.map((r) => r.status);
    const others = responses.filter((r) => r.status !== 200 && r.status !== 409).map((r) => [r.status, r.body.message]);
    expect({
      ok: statuses.filter((s) => s === 200).length,
      duplicate: statuses.filter((s) => s === 409).length,
      others,
    }).toEqual({
      ok: 1,
      duplicate: responses.length - 1,
      others: [],
    });
    expect(responses.find((r) => r.status === 200)!.body.executionId).toBe(executionId);
    for (const r of responses.filter((res) => res.status === 409)) {
      expect(r.body.code).toBe(6);
      expect(JSON.stringify(r.body.details)).toContain(executionId);
    }
    const state: RunState = await stack.client.workflow.getHandle(executionId).result();
    expect(state.status).toBe('COMPLETED');
    let runs = 0;
    for await (const _ of stack.client.workflow.list({ query: `WorkflowId = "${executionId}"` })) runs += 1;
    expect(runs).toBe(1);
  }

  it(`${SIMULTANEOUS} identical HMAC deliveries: one 200, ${SIMULTANEOUS - 1} × 409, one run`, async () => {
    const event = hmacEvent(hmac.secret, PAYLOAD);
    const path = listenerPath(hmac.automation);
    const responses = await Promise.all(Array.from({ length: SIMULTANEOUS }, () => deliver(stack, path, event)));
    await expectAcceptedOnce(responses, hmac.automation.trigger.incomingWebhook.listenerId, event.eventId);
  });

  it(`${SIMULTANEOUS} deliveries of one event id spelled in mixed case, each validly signed: still one run`, async () => {
    const eventId = randomUUID();
    const body = JSON.stringify(PAYLOAD);
    const spell = (i: number) =>
      i % 3 === 0
        ? eventId
        : i % 3 === 1
          ? eventId.toUpperCase()
          : eventId.replace(/[a-f]/g, (c, at: number) => (at % 2 ? c.toUpperCase() : c));
    const path = listenerPath(hmac.automation);
    const responses = await Promise.all(
      Array.from({ length: SIMULTANEOUS }, (_, i) =>
        deliver(stack, path, hmacEvent(hmac.secret, null, { eventId: spell(i), body })),
      ),
    );
    await expectAcceptedOnce(responses, hmac.automation.trigger.incomingWebhook.listenerId, eventId);
  });

  it(`${SIMULTANEOUS} simultaneous JWT deliveries of one event: one 200, one run`, async () => {
    const eventId = randomUUID();
    const body = JSON.stringify(PAYLOAD);
    const token = signWebhookJwt({
      key,
      baseUrl: stack.service.baseUrl,
      audience: jwt.trigger.incomingWebhook.url,
      eventId,
      body,
    });
    const headers = {
      'Content-Type': 'application/json',
      'Webhook-Timestamp': String(Math.floor(Date.now() / 1000)),
      'Webhook-Event-Id': eventId,
      Authorization: `Bearer ${token}`,
    };
    const path = listenerPath(jwt);
    const responses = await Promise.all(
      Array.from({ length: SIMULTANEOUS }, () => deliver(stack, path, { headers, body })),
    );
    await expectAcceptedOnce(responses, jwt.trigger.incomingWebhook.listenerId, eventId);
  });

  it('20 events × 5 simultaneous copies each, interleaved: exactly one 200 per event', async () => {
    const path = listenerPath(hmac.automation);
    const events = Array.from({ length: 20 }, () => hmacEvent(hmac.secret, PAYLOAD));
    const copies = events.flatMap((event) => Array.from({ length: 5 }, () => event));
    for (let i = copies.length - 1; i > 0; i -= 1) {
      const j = Math.floor(Math.random() * (i + 1));
      [copies[i], copies[j]] = [copies[j]!, copies[i]!];
    }
    const responses = await Promise.all(
      copies.map(async (event) => ({ eventId: event.eventId, res: await deliver(stack, path, event) })),
    );
    for (const event of events) {
      const mine = responses.filter((r) => r.eventId === event.eventId).map((r) => r.res);
      await expectAcceptedOnce(mine, hmac.automation.trigger.incomingWebhook.listenerId, event.eventId);
    }
  });
});
