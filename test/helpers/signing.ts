/** Signed webhook deliveries for tests and drills: the one HMAC signer (over the service's own `signHmac`). */
import { randomUUID } from 'node:crypto';
import { signHmac } from '../../src/webhooks';

export interface SignedEvent {
  eventId: string;
  timestamp: string;
  body: string;
  headers: Record<string, string>;
}

/** Headers and body of one HMAC-signed delivery, exactly as docs/api.md#hmac describes. */
export function hmacEvent(
  secret: string,
  payload: unknown,
  overrides: Partial<{ eventId: string; timestamp: string; body: string }> = {},
): SignedEvent {
  const eventId = overrides.eventId ?? randomUUID();
  const timestamp = overrides.timestamp ?? String(Math.floor(Date.now() / 1000));
  const body = overrides.body ?? JSON.stringify(payload);
  return {
    eventId,
    timestamp,
    body,
    headers: {
      'Content-Type': 'application/json',
      'Webhook-Timestamp': timestamp,
      'Webhook-Event-Id': eventId,
      'Webhook-Signature': signHmac(secret, timestamp, eventId, body),
    },
  };
}
