/**
 * The reasons of inbound webhook verification. Every check of a delivery refuses with a
 * `WebhookRejection` (src/errors.ts) carrying a short machine `reason` for logs, metrics and the
 * answer's details: thrown by the checks, returned by an authenticator's verifier (its
 * `VerifyResult`). What a reason answers over HTTP is the HTTP layer's (src/http/errors.ts
 * `webhookStatus`), as jose's error codes are its callers'. Messages are safe to send back: they
 * never contain secrets, tokens, signatures, resolved addresses or the payload.
 */
import { WebhookRejection } from '../errors';

/** Every reason a delivery's checks refuse with, grouped by the status the API answers them with. */
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
  | 'source_not_allowed'
  // 404
  | 'listener_not_found'
  // 413
  | 'body_too_large';

/** Shorthand used by the checks in this folder. */
export function rejectWebhook(reason: WebhookReason, message: string, cause?: unknown): WebhookRejection {
  return new WebhookRejection(message, reason, cause === undefined ? undefined : { cause });
}
