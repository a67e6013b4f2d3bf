/**
 * The JWKS server of a JWT listener goes down while deliveries keep arriving. Documented behaviour
 * (src/webhooks/jwks.ts, RemoteKeySet): keys fetched once are cached for 10 minutes, so tokens
 * under a known kid keep verifying from the cache (200) while the server is down; a listener
 * with nothing cached cannot fetch and answers 401 `jwks_unreachable`; a kid the cache does not
 * know answers 401 (`unknown_kid` inside the 30 s refetch cool-down, else `jwks_unreachable`).
 * When the server is back, a new listener fetches the keys and accepts tokens again.
 *
 * The JWKS server sits behind a TCP relay that holds its port throughout, so "down" is a refused
 * connection on the very URL the listener has, never another process on a reused port.
 */
import { randomUUID } from 'node:crypto';
import {
  makeSigningKey,
  signWebhookJwt,
  startJwksServer,
  type JwksServer,
  type SigningKey,
} from '../fixtures/jwks-server';
import { startStack, deliver, listenerPath, type AutomationView, type RawResponse, type Stack } from '../helpers/stack';
import { startTcpRelay, type TcpRelay } from '../helpers/tcp-relay';

const PAYLOAD = { employee_id: '12345', status: 'terminated' };
const STEPS = [{ id: 'vars', setVariables: { employee: 'ctx.trigger.employee_id' } }];

describe('JWKS server down while JWT deliveries arrive', () => {
  let stack: Stack;
  let jwks: JwksServer;
  let relay: TcpRelay;
  let key: SigningKey;
  let jwksUrl: string;

  beforeAll(async () => {
    key = await makeSigningKey('ES256', 'kid-outage');
    jwks = await startJwksServer([key.publicJwk]);
    relay = await startTcpRelay({ host: '127.0.0.1', port: Number(new URL(jwks.url).port) });
    jwksUrl = `http://127.0.0.1:${relay.port}/jwks.json`;
    stack = await startStack();
  });
  afterAll(async () => {
    await stack?.close();
    await relay?.close();
    await jwks?.close();
  });

  async function jwtListener(name: string): Promise<AutomationView> {
    return (
      await stack.createAutomation({
        displayName: name,
        trigger: { incomingWebhook: { authMethod: 'JWT', jwksUrl } },
        steps: STEPS,
      })
    ).automation;
  }

  function send(automation: AutomationView, signingKey: SigningKey = key): Promise<RawResponse> {
    const eventId = randomUUID();
    const body = JSON.stringify(PAYLOAD);
    const token = signWebhookJwt({
      key: signingKey,
      baseUrl: stack.service.baseUrl,
      audience: automation.trigger.incomingWebhook.url,
      eventId,
      body,
    });
    return deliver(stack, listenerPath(automation), {
      headers: {
        'Content-Type': 'application/json',
        'Webhook-Timestamp': String(Math.floor(Date.now() / 1000)),
        'Webhook-Event-Id': eventId,
        Authorization: `Bearer ${token}`,
      },
      body,
    });
  }

  const reasonOf = (res: RawResponse): string | undefined =>
    (res.body.details as Array<{ reason?: string }> | undefined)?.find((d) => d.reason)?.reason;

  it('keeps accepting tokens under cached keys, refuses what needs a fetch with 401, and recovers', async () => {
    const cached = await jwtListener('keys cached before the outage');
    expect((await send(cached)).status).toBe(200);
    const fetchesBefore = jwks.fetchCount();
    expect(fetchesBefore).toBeGreaterThan(0);

    // Down: every connection to the JWKS URL is refused from now on.
    relay.setTarget(undefined);
    relay.cut();

    // Deliveries keep arriving, several at once: the cached keys verify them.
    const during = await Promise.all(Array.from({ length: 6 }, () => send(cached)));
    expect(during.map((res) => res.status)).toEqual([200, 200, 200, 200, 200, 200]);
    expect(jwks.fetchCount()).toBe(fetchesBefore);

    // A listener with nothing cached must fetch, and cannot.
    const fresh = await jwtListener('first delivery during the outage');
    const refused = await send(fresh);
    expect([refused.status, reasonOf(refused)]).toEqual([401, 'JWKS_UNREACHABLE']);
    expect(refused.headers['www-authenticate']).toBe('Bearer');
    expect(JSON.stringify(refused.body)).not.toContain(jwksUrl.split('/')[2]);

    // A kid the cache does not know needs a fetch too: 401 either way (see the module comment).
    const stranger = await makeSigningKey('ES256', 'kid-unknown');
    const unknown = await send(cached, stranger);
    expect(unknown.status).toBe(401);
    expect(['UNKNOWN_KID', 'JWKS_UNREACHABLE']).toContain(reasonOf(unknown));
    expect(jwks.fetchCount()).toBe(fetchesBefore);

    // Back up: a listener fetches the keys and accepts again; the cached one never stopped.
    relay.setTarget({ host: '127.0.0.1', port: Number(new URL(jwks.url).port) });
    const after = await jwtListener('first delivery after the outage');
    expect((await send(after)).status).toBe(200);
    expect(jwks.fetchCount()).toBeGreaterThan(fetchesBefore);
    expect((await send(cached)).status).toBe(200);
  });
});
