/**
 * What makes an outbound callWebhook request safe to retry and verifiable by its receiver.
 *
 * - The call's key (`Idempotency-Key` and `webhook-id`): a UUID (version 5, RFC 9562 name-based,
 *   SHA-1) of the run that makes the call and the step's id. Every attempt of the step in that run
 *   carries the same key: the step's retries, an attempt repeated after a worker crash, a replay.
 *   A rerun is another run, so its calls carry other keys; a retry from the failed step continues
 *   the original run, so its calls carry the original run's keys (the failed call may have reached
 *   the target: the receiver can then recognise the repeat).
 * - Standard Webhooks signatures (https://www.standardwebhooks.com): `webhook-signature:
 *   v1,<base64 HMAC-SHA256 of "{webhook-id}.{webhook-timestamp}.{body}">`; a `whsec_` secret is
 *   base64-decoded first (as the Standard Webhooks libraries do), any other value is used as its
 *   bytes (one byte per character: the `raw` format of those libraries).
 *
 * Pure functions: the activity and the executions view both derive the key here.
 */
import { createHash, createHmac } from 'node:crypto';
import type { CallKeyScope } from '../contract/activities';

export type { CallKeyScope };

/** The namespace UUID of call keys (fixed: changing it changes every key). */
export const CALL_KEY_NAMESPACE = '5b0e8f6c-3c1d-4d8e-9a3f-7f2b6c1e0a94';

/** The key of the call a step makes in a run: UUID v5 of JSON `[workflowId, runId, stepId]`. */
export function callKey(scope: CallKeyScope, stepId: string): string {
  const namespace = Buffer.from(CALL_KEY_NAMESPACE.replace(/-/g, ''), 'hex');
  const name = Buffer.from(JSON.stringify([scope.workflowId, scope.runId, stepId]), 'utf8');
  const hash = createHash('sha1').update(namespace).update(name).digest();
  const bytes = hash.subarray(0, 16);
  bytes[6] = (bytes[6]! & 0x0f) | 0x50; // version 5
  bytes[8] = (bytes[8]! & 0x3f) | 0x80; // RFC 9562 variant
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** Prefix of a base64 secret in the Standard Webhooks format. */
export const WHSEC_PREFIX = 'whsec_';
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** True when `value` is a `whsec_` secret whose rest is not canonical, non-empty base64 (it could not be decoded). */
export function isMalformedWhsec(value: string): boolean {
  if (!value.startsWith(WHSEC_PREFIX)) return false;
  const rest = value.slice(WHSEC_PREFIX.length);
  return rest === '' || !BASE64.test(rest);
}

/** The HMAC key of a secret value: a `whsec_` value base64-decoded, any other its bytes (Latin-1). */
export function signingKey(value: string): Buffer {
  if (value.startsWith(WHSEC_PREFIX)) {
    if (isMalformedWhsec(value)) throw new Error('a whsec_ secret must be base64 after the prefix');
    return Buffer.from(value.slice(WHSEC_PREFIX.length), 'base64');
  }
  return Buffer.from(value, 'latin1');
}

/**
 * The `webhook-signature` value: one `v1,<base64>` per key, space-separated (during a rotation's
 * grace period the current secret's signature first, then the previous one's).
 */
export function standardSignature(keys: readonly Buffer[], id: string, timestamp: string, body: Buffer): string {
  const signed = Buffer.concat([Buffer.from(`${id}.${timestamp}.`, 'utf8'), body]);
  return keys.map((key) => `v1,${createHmac('sha256', key).update(signed).digest('base64')}`).join(' ');
}
