/**
 * Request-header checks of inbound webhooks (step 4 of the check order): presence, `Content-Type`,
 * the `Webhook-Timestamp` window and the `Webhook-Event-Id` format, all 400; then the credential
 * header of the listener's authentication method (./authenticators), whose absence is either one
 * of the missing headers (400, e.g. `Webhook-Signature`) or the first authentication check (401,
 * e.g. `Authorization: Bearer`).
 */
import { authenticatorOf, type AuthMethod, type CredentialInput, type CredentialOutput } from './authenticators';
import { rejectWebhook } from './errors';

/** Largest distance, in seconds and in either direction, between `Webhook-Timestamp` and now. */
export const TIMESTAMP_TOLERANCE_SECONDS = 300;

export type WebhookHeaderInput = {
  contentType: string | undefined;
  timestamp: string | undefined;
  eventId: string | undefined;
  authMethod: AuthMethod;
  /** Current Unix time in seconds (fractions are dropped). */
  nowSeconds: number;
} & {
  /** The raw credential header of each method (`signature`, `authorization`); only the listener's is read. */
  [field in CredentialInput]?: string | undefined;
};

export type CheckedWebhookHeaders = {
  /** `Webhook-Timestamp` as a number. */
  timestamp: number;
  /** `Webhook-Event-Id`, lower-cased: the idempotency key. */
  eventId: string;
  /** `Webhook-Timestamp` exactly as sent: part of the HMAC input. */
  timestampHeader: string;
  /** `Webhook-Event-Id` exactly as sent: part of the HMAC input. */
  eventIdHeader: string;
} & {
  /** The credential of the listener's method (`signature` for HMAC, `token` for JWT). */
  [field in CredentialOutput]?: string;
};

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;
const DECIMAL_SECONDS = /^[0-9]{1,12}$/;

/** True for a hyphenated UUID of version 4 and RFC 4122 variant, in either case. */
export function isUuidV4(s: string): boolean {
  return UUID_V4.test(s);
}

/**
 * Validates the webhook headers in a fixed order and returns them parsed. Throws a 400
 * `WebhookRejection` for a missing header (the method's credential header included when it is
 * required), a wrong content type, a bad or stale timestamp or an event id that is not a UUID v4;
 * then whatever the method's `readCredential` throws (a 401, e.g. for a missing or non-Bearer
 * `Authorization` header). `nowSeconds` is the time judged at (default: the input's).
 */
export function checkWebhookHeaders(input: WebhookHeaderInput, nowSeconds = input.nowSeconds): CheckedWebhookHeaders {
  const contentType = present(input.contentType);
  const timestampHeader = present(input.timestamp);
  const eventIdHeader = present(input.eventId);
  const { credential: header, readCredential } = authenticatorOf(input.authMethod);
  const credential = present(input[header.input as CredentialInput]);

  const missing: string[] = [];
  if (contentType === undefined) missing.push('Content-Type');
  if (timestampHeader === undefined) missing.push('Webhook-Timestamp');
  if (eventIdHeader === undefined) missing.push('Webhook-Event-Id');
  if (header.requiredHeader && credential === undefined) missing.push(header.name);
  if (missing.length > 0 || contentType === undefined || timestampHeader === undefined || eventIdHeader === undefined) {
    // (the undefined tests only narrow the types: `missing` is non-empty whenever one holds)
    throw rejectWebhook(
      'missing_header',
      `missing required header${missing.length > 1 ? 's' : ''}: ${missing.join(', ')}`,
    );
  }

  if (!isJsonContentType(contentType)) {
    throw rejectWebhook('bad_content_type', 'Content-Type must be application/json');
  }

  const timestamp = checkTimestamp(timestampHeader, nowSeconds);

  if (!isUuidV4(eventIdHeader)) {
    throw rejectWebhook('bad_event_id', 'Webhook-Event-Id must be a UUID v4');
  }

  const checked: CheckedWebhookHeaders = {
    timestamp,
    eventId: eventIdHeader.toLowerCase(),
    timestampHeader,
    eventIdHeader,
  };
  const value = readCredential(credential);
  if (value !== undefined) checked[header.output as CredentialOutput] = value;
  return checked;
}

/** True for `application/json`, any case, with optional parameters; a charset must be UTF-8. */
export function isJsonContentType(value: string): boolean {
  const [mediaType, ...params] = value.split(';');
  if (mediaType === undefined || mediaType.trim().toLowerCase() !== 'application/json') return false;
  for (const param of params) {
    const eq = param.indexOf('=');
    if (eq < 0) continue;
    const name = param.slice(0, eq).trim().toLowerCase();
    const raw = param
      .slice(eq + 1)
      .trim()
      .replace(/^"(.*)"$/, '$1')
      .toLowerCase();
    if (name === 'charset' && raw !== 'utf-8' && raw !== 'utf8') return false;
  }
  return true;
}

function checkTimestamp(value: string, nowSeconds: number): number {
  if (!DECIMAL_SECONDS.test(value)) {
    throw rejectWebhook('bad_timestamp', 'Webhook-Timestamp must be Unix time in whole seconds');
  }
  const timestamp = Number(value);
  if (Math.abs(timestamp - Math.floor(nowSeconds)) > TIMESTAMP_TOLERANCE_SECONDS) {
    throw rejectWebhook(
      'timestamp_out_of_window',
      `Webhook-Timestamp is more than ${TIMESTAMP_TOLERANCE_SECONDS} seconds away from the current time`,
    );
  }
  return timestamp;
}

function present(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const trimmed = value.trim();
  return trimmed === '' ? undefined : trimmed;
}
