/**
 * The one failure type of inbound webhook verification. Every check in `src/webhooks` throws a
 * `WebhookRejection` carrying the HTTP status to answer and a short machine `reason` for logs and
 * metrics. Messages are safe to send back to the caller: they never contain secrets, tokens,
 * signatures, resolved addresses or the payload.
 */

/** Statuses a webhook check may answer with (see the check order in docs/api.md). */
export type WebhookRejectionStatus = 400 | 401 | 403 | 404 | 409 | 413;

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

/**
 * Thrown by every webhook check; `status` is the answer, `reason` a short machine code. A refusal is
 * an expected answer, not a fault: it is made without a stack trace (capturing one was the largest
 * single cost of refusing a request), so `stack` holds only the name and message.
 */
export class WebhookRejection extends Error {
  readonly status: WebhookRejectionStatus;
  readonly reason: string;

  constructor(status: WebhookRejectionStatus, message: string, reason: string, options?: { cause?: unknown }) {
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(message, options);
    Error.stackTraceLimit = limit;
    this.status = status;
    this.reason = reason;
  }
}
WebhookRejection.prototype.name = 'WebhookRejection';

/** Shorthand used by the checks in this folder. */
export function rejectWebhook(status: WebhookRejectionStatus, reason: WebhookReason, message: string, cause?: unknown): WebhookRejection {
  return new WebhookRejection(status, message, reason, cause === undefined ? undefined : { cause });
}
