/**
 * The webhook intake without HTTP: its stages (open, decide, start) on a real store and a real Temporal dev server (runs
 * are started there; no worker is needed to accept them). Each outcome of the check order, as the
 * route will translate it, and the authenticator registry driving the header check.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { Client, type Connection } from '@temporalio/client';
import { SecretBox } from '../../src/crypto/secret-box';
import { changeAutomationState, createAutomation, listenerUrl } from '../../src/domain/automations';
import { createLogger } from '../../src/logger';
import type { Db } from '../../src/store/db';
import { createTemporalEngine } from '../../src/temporal/engine';
import type { RunEngine } from '../../src/domain/engine';
import { NO_TEMPORAL } from '../helpers/engine';
import { AUTH_METHODS, authenticatorOf } from '../../src/webhooks/authenticators';
import { signHmac } from '../../src/webhooks/authenticators/hmac';
import { createWebhookIntake, REFUSAL_LOG_LINES_PER_MINUTE, type WebhookIntake } from '../../src/delivery/intake';
import { deliver, type DeliveryAnswer, type TestDelivery } from '../helpers/intake';
import { openTestDb, PGLITE } from '../helpers/databases';
import { testTemporal, uniqueTaskQueue, connectClient } from '../helpers/temporal';
import { WorkflowEngineUnavailableError } from '../../src/errors';

const BASE_URL = 'https://tenant.example.test';
const config = { baseUrl: BASE_URL, allowInsecureJwks: true };

describe('webhook intake', () => {
  let db: Db;
  let connection: Connection;
  let intake: WebhookIntake;
  let listenerId: string;
  let secret: string;
  const secretBox = new SecretBox(randomBytes(32));

  function intakeWith(engine: RunEngine): WebhookIntake {
    return createWebhookIntake({
      db,
      engine,
      secretBox,
      config,
      logger: createLogger('silent'),
      listenerUrl: (id) => listenerUrl(BASE_URL, id),
    });
  }

  beforeAll(async () => {
    db = await openTestDb(PGLITE);
    const temporal = await testTemporal();
    connection = await connectClient(temporal.address);
    intake = intakeWith(
      createTemporalEngine({
        client: new Client({ connection, namespace: temporal.namespace }),
        taskQueue: uniqueTaskQueue('intake'),
        db,
      }),
    );
    const options = { authenticators: config, secretBox, actor: 'test' };
    const created = await createAutomation(
      db,
      {
        displayName: 'Intake',
        trigger: { incomingWebhook: { authMethod: 'HMAC', allowedCidrs: ['10.0.0.0/8'] } },
        steps: [],
      },
      options,
    );
    await changeAutomationState(db, created.record.id, 'publish', 'test');
    listenerId = created.record.listenerId;
    secret = created.signingSecret!;
  });
  afterAll(async () => {
    await connection?.close();
    await db?.close();
  });

  /** A signed delivery from 10.1.2.3; `change` alters any fact. */
  function delivery(
    change: Partial<TestDelivery> & { body?: string } = {},
  ): TestDelivery & { reads: number; header(name: string): string | undefined } {
    const body = Buffer.from(change.body ?? '{"employee":"e-1"}');
    const eventId = randomUUID();
    const timestamp = String(Math.floor(Date.now() / 1000));
    const headers: Record<string, string | undefined> = {
      'content-type': 'application/json',
      'webhook-timestamp': timestamp,
      'webhook-event-id': eventId,
      'webhook-signature': signHmac(secret, timestamp, eventId, body),
      ...change.headers,
    };
    const facts = {
      reads: 0,
      listenerId,
      sourceAddress: '10.1.2.3',
      header: (name: string) => headers[name.toLowerCase()] || undefined,
      readBody: async (maxBytes: number) => {
        facts.reads += 1;
        return body.length > maxBytes ? undefined : body;
      },
      now: new Date(),
      ...change,
      headers,
    };
    return facts;
  }

  function refusal(outcome: DeliveryAnswer): { status: number; reason: string } {
    if (outcome.accepted) throw new Error('expected a refusal');
    return { status: outcome.status, reason: outcome.reason };
  }

  it('accepts a signed delivery once the run is started, then refuses the same event id (409 with the execution id)', async () => {
    const first = delivery();
    const accepted = await deliver(intake, first);
    expect(accepted).toMatchObject({ accepted: true, eventId: first.header('webhook-event-id') });
    const again = await deliver(intake, { ...first });
    expect(again).toMatchObject({
      accepted: false,
      status: 409,
      reason: 'duplicate_event',
      message: 'event id already received by this listener',
    });
    expect(again.details?.[0]?.metadata).toEqual({ executionId: (accepted as { executionId: string }).executionId });
  });

  it('refuses in the contract order, reading the body only after listener and source address', async () => {
    const unknown = delivery({ listenerId: 'no-such-listener' });
    expect(refusal(await deliver(intake, unknown))).toEqual({ status: 404, reason: 'listener_not_found' });
    const outside = delivery({ sourceAddress: '192.0.2.1' });
    expect(refusal(await deliver(intake, outside))).toEqual({ status: 403, reason: 'source_not_allowed' });
    expect([unknown.reads, outside.reads]).toEqual([0, 0]);
    const large = await deliver(intake, delivery({ body: `"${'x'.repeat(70_000)}"` }));
    expect(large).toMatchObject({ accepted: false, status: 413, reason: 'body_too_large', details: [] });
    // a missing signature is a missing header (400) for HMAC: the registry says it is required
    expect(refusal(await deliver(intake, delivery({ headers: { 'webhook-signature': undefined } })))).toEqual({
      status: 400,
      reason: 'missing_header',
    });
    expect(refusal(await deliver(intake, delivery({ headers: { 'webhook-signature': 'x'.repeat(43) } })))).toEqual({
      status: 401,
      reason: 'signature_mismatch',
    });
    // JSON is checked after authentication: a signed non-JSON body is a 400
    expect(refusal(await deliver(intake, delivery({ body: 'not json' })))).toEqual({
      status: 400,
      reason: 'invalid_json',
    });
  });

  it('logs at most REFUSAL_LOG_LINES_PER_MINUTE refusals per listener and minute, then one line counting the rest', async () => {
    const lines: Array<{ msg: string; listenerId?: string; reason?: string; unlogged?: number }> = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        for (const line of chunk.toString('utf8').split('\n').filter(Boolean))
          lines.push(JSON.parse(line) as (typeof lines)[number]);
        done();
      },
    });
    const neverStarts: RunEngine = {
      ...NO_TEMPORAL,
      start: async () => {
        throw new Error('a refused delivery starts no run');
      },
      ping: async () => undefined,
    };
    const logged = createWebhookIntake({
      db,
      engine: neverStarts,
      secretBox,
      config,
      logger: createLogger('info', sink),
      listenerUrl: (id) => listenerUrl(BASE_URL, id),
    });
    const minuteStart = Math.floor(Date.now() / 60_000) * 60_000;
    const bad = (at: number) => delivery({ headers: { 'webhook-signature': 'A'.repeat(43) }, now: new Date(at) });
    for (let i = 0; i < REFUSAL_LOG_LINES_PER_MINUTE + 5; i++) {
      expect(refusal(await deliver(logged, bad(minuteStart + 1000)))).toEqual({
        status: 401,
        reason: 'signature_mismatch',
      });
    }
    const refusedLines = lines.filter((l) => l.msg === 'webhook refused');
    expect(refusedLines).toHaveLength(REFUSAL_LOG_LINES_PER_MINUTE);
    expect(refusedLines[0]).toMatchObject({ listenerId, reason: 'signature_mismatch' });
    // The next minute: one line counts the 5 unlogged refusals, and refusals are logged again.
    lines.length = 0;
    expect(refusal(await deliver(logged, bad(minuteStart + 61_000)))).toEqual({
      status: 401,
      reason: 'signature_mismatch',
    });
    expect(lines.map((l) => [l.msg.startsWith('webhook refusals not logged') ? 'summary' : l.msg, l.unlogged])).toEqual(
      [
        ['summary', 5],
        ['webhook refused', undefined],
      ],
    );
  });

  it('answers 503 (never accepted) when the workflow engine does not confirm the start', async () => {
    const down = intakeWith({
      ...NO_TEMPORAL,
      start: async () => {
        throw new WorkflowEngineUnavailableError('down');
      },
      ping: async () => undefined,
    });
    expect(await deliver(down, delivery())).toMatchObject({
      accepted: false,
      status: 503,
      reason: 'engine_unavailable',
      details: [],
    });
  });
});

describe('authenticator registry', () => {
  it('gives every method a credential header, a trigger schema, a verifier and a sender', () => {
    for (const method of AUTH_METHODS) {
      const authenticator = authenticatorOf(method);
      expect(authenticator.credential.name).toMatch(/^[A-Za-z-]+$/);
      expect(typeof authenticator.fields.safeParse).toBe('function');
      expect(typeof authenticator.createVerifier(config)).toBe('function');
      expect(Object.keys(authenticator.sender.options)).toContain(authenticator.sender.selector);
    }
  });
});
