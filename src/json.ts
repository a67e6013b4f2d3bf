/**
 * JSON values as the service takes them in. A ground-floor module: it imports nothing, and the
 * workflow bundle loads it (through src/steps).
 *
 * One bound on JSON nesting for every body the service accepts (API requests, webhook payloads,
 * entitlement configurations). Serialisers and walkers are recursive (JSON.stringify fails past
 * about 4,000 levels, CEL conversion and the store's jsonb have their own limits): a deeper value
 * would fail later, as a 5xx, so it is refused on entry as a 400.
 */

/** Deepest nesting of arrays and objects accepted in any JSON value. */
export const MAX_JSON_DEPTH = 64;

/** Nesting depth of arrays and objects in a valid JSON text (0 for a scalar). */
export function jsonDepth(text: string): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) max = Math.max(max, ++depth);
    else if (c === 0x5d || c === 0x7d) depth--;
  }
  return max;
}

/** A JSON object: not null, not an array. */
export function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
