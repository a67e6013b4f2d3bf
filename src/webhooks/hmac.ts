/**
 * HMAC authentication of inbound webhooks. The signature is HMAC-SHA256 over
 * `<timestamp>.<event_id>.<raw body>`, keyed with the UTF-8 bytes of the signing secret exactly as
 * it was handed out (never base64-decoded), sent base64url-encoded without padding.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

export { bodySha256 } from './digest';

/** Computes the `Webhook-Signature` value a sender must send for this request. */
export function signHmac(secret: string, timestamp: string, eventId: string, body: Buffer | string): string {
  return createHmac('sha256', Buffer.from(secret, 'utf8'))
    .update(`${timestamp}.${eventId}.`, 'utf8')
    .update(typeof body === 'string' ? Buffer.from(body, 'utf8') : body)
    .digest('base64url');
}

/**
 * True when `signature` is exactly the expected base64url (no padding) value. `timestamp` and
 * `eventId` must be the header values as sent, not normalised. Constant time in the signature
 * contents; padded or standard-base64 spellings of the right value do not verify.
 */
export function verifyHmac(secret: string, timestamp: string, eventId: string, body: Buffer | string, signature: string): boolean {
  const expected = Buffer.from(signHmac(secret, timestamp, eventId, body), 'utf8');
  const given = Buffer.from(signature, 'utf8');
  if (given.length !== expected.length) return false;
  return timingSafeEqual(given, expected);
}

/**
 * True when `signature` verifies with any of `secrets` (the current signing secret and, during a
 * rotation's grace period, the previous one). Every secret is tried, whatever the outcome of the
 * others, so the time taken does not say which one matched.
 */
export function verifyHmacWithAny(secrets: readonly string[], timestamp: string, eventId: string, body: Buffer | string, signature: string): boolean {
  let ok = false;
  for (const secret of secrets) {
    if (verifyHmac(secret, timestamp, eventId, body, signature)) ok = true;
  }
  return ok;
}
