/**
 * The webhook body as automation context: parsed only after authentication succeeded (step 6 of
 * the check order), and only as strict UTF-8 JSON.
 */
import { jsonDepth, MAX_JSON_DEPTH } from '../json';
import { rejectWebhook } from './errors';

/** Largest accepted webhook body, in bytes (enforced while reading, by the HTTP layer). */
export const MAX_WEBHOOK_BODY_BYTES = 65_536;

/** Strict UTF-8 (a malformed sequence throws); stateless between calls, so one serves every request. */
const UTF8 = new TextDecoder('utf-8', { fatal: true });

/** Parses the raw body as JSON (any JSON value); 400 'invalid_json' when it is not UTF-8 JSON. */
export function parseWebhookJson(body: Buffer): unknown {
  let text: string;
  try {
    text = UTF8.decode(body);
  } catch {
    throw rejectWebhook('invalid_json', 'request body is not valid UTF-8');
  }
  let value: unknown;
  try {
    value = JSON.parse(text) as unknown;
  } catch {
    throw rejectWebhook('invalid_json', 'request body is not valid JSON');
  }
  if (jsonDepth(text) > MAX_JSON_DEPTH) {
    throw rejectWebhook('invalid_json', `request body nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels`);
  }
  return value;
}
