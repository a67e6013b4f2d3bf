/**
 * A delivery whose body is still arriving is judged again before its run starts (issue 23, lower
 * finding 1): the listener's state read at the headers does not carry the delivery through a
 * change made while the body arrived. On the real intake, store and listener cache, starting runs
 * on the real Temporal dev server; the delivery's body is held back until the change committed.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { Client, type Connection } from '@temporalio/client';
import { SecretBox } from '../../src/crypto/secret-box';
import {
  changeAutomationState,
  createAutomation,
  listenerUrl,
  rotateSigningSecret,
  updateAutomation,
} from '../../src/domain/automations';
import { createLogger } from '../../src/logger';
import type { Db } from '../../src/store/db';
import { createTemporalEngine } from '../../src/temporal/engine';
import { signHmac } from '../../src/webhooks/authenticators/hmac';
import { createWebhookIntake, type WebhookIntake } from '../../src/delivery/intake';
import { deliver, type DeliveryAnswer, type TestDelivery } from '../helpers/intake';
import { openTestDb, PGLITE } from '../helpers/databases';
import { connectClient, testTemporal, uniqueTaskQueue } from '../helpers/temporal';

const BASE_URL = 'https://tenant.example.test';
const config = { baseUrl: BASE_URL, allowInsecureJwks: true };

describe('a delivery is judged again after its body', () => {
  let db: Db;
  let connection: Connection;
  let intake: WebhookIntake;
  const secretBox = new SecretBox(randomBytes(32));
  const options = { authenticators: config, secretBox, actor: 'test' };

  beforeAll(async () => {
    db = await openTestDb(PGLITE);
    const temporal = await testTemporal();
    connection = await connectClient(temporal.address);
    const engine = createTemporalEngine({
      client: new Client({ connection, namespace: temporal.namespace }),
      taskQueue: uniqueTaskQueue('recheck'),
      db,
    });
    intake = createWebhookIntake({
      db,
      engine,
      secretBox,
      config,
      logger: createLogger('silent'),
      listenerUrl: (id) => listenerUrl(BASE_URL, id),
    });
  });
  afterAll(async () => {
    await connection?.close();
    await db?.close();
  });

  async function published(): Promise<{ id: string; listenerId: string; secret: string }> {
    const created = await createAutomation(
      db,
      {
        displayName: 'slow body',
        trigger: { incomingWebhook: { authMethod: 'HMAC', allowedCidrs: ['10.0.0.0/8'] } },
        steps: [],
      },
      options,
    );
    await changeAutomationState(db, created.record.id, 'publish', 'test');
    return { id: created.record.id, listenerId: created.record.listenerId, secret: created.signingSecret! };
  }

  /**
   * Delivers a signed event from 10.1.2.3 whose body arrives only after `meanwhile` ran (the
   * intake has then judged the listener and the headers and is waiting for the body).
   */
  async function slowDelivery(
    target: { listenerId: string; secret: string },
    meanwhile: () => Promise<unknown>,
  ): Promise<DeliveryAnswer> {
    const body = Buffer.from('{"employee":"e-1"}');
    const eventId = randomUUID();
    const timestamp = String(Math.floor(Date.now() / 1000));
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'webhook-timestamp': timestamp,
      'webhook-event-id': eventId,
      'webhook-signature': signHmac(target.secret, timestamp, eventId, body),
    };
    let bodyWanted!: () => void;
    const wanted = new Promise<void>((resolve) => (bodyWanted = resolve));
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const delivery: TestDelivery = {
      listenerId: target.listenerId,
      sourceAddress: '10.1.2.3',
      headers,
      readBody: async () => {
        bodyWanted();
        await released;
        return body;
      },
      now: new Date(),
    };
    const outcome = deliver(intake, delivery);
    await wanted;
    await meanwhile();
    release();
    return outcome;
  }

  const refusal = (outcome: DeliveryAnswer) =>
    outcome.accepted ? { accepted: true } : { status: outcome.status, reason: outcome.reason };

  it('accepts when nothing changed while the body arrived', async () => {
    const target = await published();
    expect(await slowDelivery(target, async () => undefined)).toMatchObject({ accepted: true });
  });

  it('refuses after an unpublish (404)', async () => {
    const target = await published();
    expect(
      refusal(await slowDelivery(target, () => changeAutomationState(db, target.id, 'unpublish', 'test'))),
    ).toEqual({
      status: 404,
      reason: 'listener_not_found',
    });
  });

  it('refuses after the trigger was disabled (404)', async () => {
    const target = await published();
    const disable = () =>
      updateAutomation(
        db,
        target.id,
        {
          automation: {
            trigger: { incomingWebhook: { authMethod: 'HMAC', allowedCidrs: ['10.0.0.0/8'], enabled: false } },
          },
          updateMask: 'trigger',
        },
        options,
      );
    expect(refusal(await slowDelivery(target, disable))).toEqual({ status: 404, reason: 'listener_not_found' });
  });

  it('refuses after a CIDR change that excludes the sender (403)', async () => {
    const target = await published();
    const narrow = () =>
      updateAutomation(
        db,
        target.id,
        {
          automation: { trigger: { incomingWebhook: { authMethod: 'HMAC', allowedCidrs: ['192.0.2.0/24'] } } },
          updateMask: 'trigger',
        },
        options,
      );
    expect(refusal(await slowDelivery(target, narrow))).toEqual({ status: 403, reason: 'source_not_allowed' });
  });

  it('refuses after a "0s" rotation (the old secret is revoked at once: 401); a rotation with a grace period still accepts', async () => {
    const target = await published();
    expect(refusal(await slowDelivery(target, () => rotateSigningSecret(db, target.id, 0, options)))).toEqual({
      status: 401,
      reason: 'signature_mismatch',
    });
    const graced = await published();
    expect(await slowDelivery(graced, () => rotateSigningSecret(db, graced.id, 3600, options))).toMatchObject({
      accepted: true,
    });
  });
});
