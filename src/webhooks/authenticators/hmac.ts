/**
 * HMAC authentication of inbound webhooks. The signature is HMAC-SHA256 over
 * `<timestamp>.<event_id>.<raw body>`, keyed with the UTF-8 bytes of the signing secret exactly as
 * it was handed out (never base64-decoded), sent base64url-encoded without padding in
 * `Webhook-Signature`. The trigger configures nothing of its own; the signing secret (256 random
 * bits) is issued when a trigger gets this method and on rotation.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import { randomToken } from '../../ids';
import { rejectWebhook } from '../errors';
import type { Authenticator } from './authenticator';

export { bodySha256 } from '../digest';

/**
 * Computes the `Webhook-Signature` value a sender must send for this request. The key is the
 * secret string itself, which `createHmac` encodes as UTF-8 (the same bytes as
 * `Buffer.from(secret, 'utf8')`): on Node 24 a Buffer key costs about ten times a string's in
 * `createHmac`'s key-type check (docs/performance.md#constants), and this runs for every delivery, rejected
 * or not.
 */
export function signHmac(secret: string, timestamp: string, eventId: string, body: Buffer | string): string {
  return createHmac('sha256', secret)
    .update(`${timestamp}.${eventId}.`, 'utf8')
    .update(typeof body === 'string' ? Buffer.from(body, 'utf8') : body)
    .digest('base64url');
}

/**
 * True when `signature` is exactly the expected base64url (no padding) value. `timestamp` and
 * `eventId` must be the header values as sent, not normalised. Constant time in the signature
 * contents; padded or standard-base64 spellings of the right value do not verify.
 */
export function verifyHmac(
  secret: string,
  timestamp: string,
  eventId: string,
  body: Buffer | string,
  signature: string,
): boolean {
  const expected = Buffer.from(signHmac(secret, timestamp, eventId, body), 'utf8');
  const given = Buffer.from(signature, 'utf8');
  if (given.length !== expected.length) return false;
  return timingSafeEqual(given, expected);
}

/**
 * True when `signature` verifies with any of `secrets` (the current secret and, during a rotation's
 * grace period, the previous one). Every secret is tried, so the time taken does not say which matched.
 */
export function verifyHmacWithAny(
  secrets: readonly string[],
  timestamp: string,
  eventId: string,
  body: Buffer | string,
  signature: string,
): boolean {
  let ok = false;
  for (const secret of secrets) {
    if (verifyHmac(secret, timestamp, eventId, body, signature)) ok = true;
  }
  return ok;
}

/**
 * The one refusal of a wrong signature, made once: it carries only its status, reason and message
 * (no stack, no cause) and nothing changes it, so every refused delivery can answer with it
 * instead of making an error of its own.
 */
const SIGNATURE_MISMATCH = Object.freeze(rejectWebhook('signature_mismatch', 'invalid webhook signature'));

/** A new signing secret: 256 random bits, base64url, no padding (43 characters). */
function newSigningSecret(): string {
  return randomToken(32);
}

export const hmacAuthenticator = {
  summary: 'HMAC-SHA256 over "<timestamp>.<event_id>.<body>" (base64url, no padding) in Webhook-Signature',
  credential: {
    name: 'Webhook-Signature',
    input: 'signature',
    output: 'signature',
    requiredHeader: true,
    description: 'HMAC listeners only: base64url (no padding) HMAC-SHA256 of "<timestamp>.<event_id>.<body>".',
  },
  readCredential: (raw) => raw,
  fields: z.object({}),
  secret: {
    generate: newSigningSecret,
    description:
      'HMAC signing secret: 256 random bits, base64url without padding. Shown only on create, HMAC switch and rotation.',
  },
  createVerifier: () => (request) => {
    const ok =
      request.secrets.length > 0 &&
      request.credential !== undefined &&
      verifyHmacWithAny(
        request.secrets,
        request.timestampHeader,
        request.eventIdHeader,
        request.body,
        request.credential,
      );
    return ok ? undefined : SIGNATURE_MISMATCH;
  },
  sender: {
    selector: 'secret',
    options: {
      secret: {
        value: '<secret>',
        description:
          'HMAC listeners: the signing secret, used exactly as given (not base64-decoded);\n' +
          'sends Webhook-Signature = base64url(HMAC-SHA256("<timestamp>.<event id>.<body>"))',
      },
    },
    synopsis: '--secret <signing secret>',
    hint: '--secret (HMAC listener)',
    signer: async (values) => {
      const secret = values.secret ?? '';
      return async ({ body, eventId, timestamp }) => ({
        'Webhook-Signature': signHmac(secret, timestamp, eventId, body),
      });
    },
  },
} satisfies Authenticator<Record<string, never>, 'signature', 'signature'>;
