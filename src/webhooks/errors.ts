/**
 * The reasons of inbound webhook verification. Every check in `src/webhooks` refuses with a
 * `WebhookRejection` (src/errors.ts) carrying the HTTP status to answer and a short machine
 * `reason` for logs and metrics: thrown by the checks, returned by an authenticator's verifier (its
 * `VerifyResult`). Messages are safe to send back to the caller: they never contain secrets,
 * tokens, signatures, resolved addresses or the payload.
 */
import { WebhookRejection, type WebhookRejectionStatus } from '../errors';

/**
 * Reasons raised by this module. The `reason` field stays a plain string so that callers can add
 * their own (for example 'listener_not_found' or 'duplicate_event').
 */
export type WebhookReason =
  // 400
  | 'missing_header'
  | 'bad_content_type'
  | 'bad_timestamp'
  | 'timestamp_out_of_window'
  | 'bad_event_id'
  | 'invalid_json'
  // 401
  | 'signature_mismatch'
  | 'missing_authorization'
  | 'bad_authorization'
  | 'jwt_malformed'
  | 'jwt_alg_not_allowed'
  | 'jwt_header_forbidden'
  | 'jwt_missing_kid'
  | 'unknown_kid'
  | 'jwt_signature_invalid'
  | 'jwt_key_rejected'
  | 'jwt_expired'
  | 'jwt_claim_invalid'
  | 'jwks_unreachable'
  | 'jwks_invalid'
  | 'jwks_url_refused'
  // 403
  | 'source_not_allowed';

/** Shorthand used by the checks in this folder. */
export function rejectWebhook(
  status: WebhookRejectionStatus,
  reason: WebhookReason,
  message: string,
  cause?: unknown,
): WebhookRejection {
  return new WebhookRejection(status, message, reason, cause === undefined ? undefined : { cause });
}
