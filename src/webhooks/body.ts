/**
 * The webhook body as automation context: parsed only after authentication succeeded (step 6 of
 * the check order), and only as strict UTF-8 JSON.
 */
import { rejectWebhook } from './errors';

/** Largest accepted webhook body, in bytes (enforced while reading, by the HTTP layer). */
export const MAX_WEBHOOK_BODY_BYTES = 65_536;

/**
 * Deepest nesting of arrays and objects accepted in a JSON body. Serialisers are recursive
 * (JSON.stringify fails past about 4,000 levels): a deeper payload would fail later, as a 5xx.
 */
export const MAX_JSON_DEPTH = 100;

/** Nesting depth of arrays and objects in a valid JSON text (0 for a scalar). */
export function jsonDepth(text: string): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) max = Math.max(max, ++depth);
    else if (c === 0x5d || c === 0x7d) depth--;
  }
  return max;
}

/** Parses the raw body as JSON (any JSON value); 400 'invalid_json' when it is not UTF-8 JSON. */
export function parseWebhookJson(body: Buffer): unknown {
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(body);
  } catch {
    throw rejectWebhook(400, 'invalid_json', 'request body is not valid UTF-8');
  }
  let value: unknown;
  try {
    value = JSON.parse(text) as unknown;
  } catch {
    throw rejectWebhook(400, 'invalid_json', 'request body is not valid JSON');
  }
  if (jsonDepth(text) > MAX_JSON_DEPTH) {
    throw rejectWebhook(400, 'invalid_json', `request body nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels`);
  }
  return value;
}
