/**
 * The origin a callWebhook step's URL fixes whatever the run's input (used to bind named secrets to
 * origins on save, and by the store's migration of secrets stored before origins existed).
 */
import { constantPrefix } from './index';

/** How many origins a secret may allow. */
export const MAX_ALLOWED_ORIGINS = 20;

/** The schemes a secret's origin and a callWebhook target may have. */
export const SCHEMES = new Set(['https:', 'http:']);

/**
 * The origin a callWebhook URL expression fixes whatever the run's input, or undefined: a URL made
 * of literals only, or one whose leading literal holds `scheme://authority` followed by `/`, `?`
 * or `#` (nothing appended can then change scheme, host or port).
 */
export function staticOrigin(urlSource: string): string | undefined {
  const prefix = constantPrefix(urlSource);
  if (!prefix) return undefined;
  let text = prefix.text;
  if (!prefix.complete) {
    const head = /^[a-zA-Z][a-zA-Z0-9+.-]*:\/\/[^/?#\\]*[/?#]/.exec(text);
    if (!head) return undefined;
    text = head[0];
  }
  try {
    const url = new URL(text);
    return SCHEMES.has(url.protocol) && url.hostname !== '' ? url.origin : undefined;
  } catch {
    return undefined;
  }
}
