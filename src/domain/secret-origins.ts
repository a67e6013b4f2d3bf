/**
 * Where a named outbound secret may go: every secret carries `allowedOrigins`, 1 to 20
 * `scheme://host[:port]` (normalised as the WHATWG URL parser does: lower-case host, punycode,
 * default port dropped). A callWebhook request whose headers read a secret is sent only to an
 * origin that every secret it reads allows:
 *
 * - on save and publish, when the step's URL has an origin fixed by the automation (a constant
 *   URL, or one whose leading literal already ends its authority: `'https://crm.example/u/' + …`),
 *   an origin a secret does not allow is a 400 naming the secret and the origin;
 * - in the callWebhook activity, always, after the URL passed the outbound policy and before any
 *   secret is opened or any header that reads one is evaluated: a URL taken from the delivery
 *   (`ctx.trigger.cb`) that points elsewhere fails the step without retry and nothing is sent.
 *
 * A secret from before origins existed is migrated (`backfillSecretOrigins`, run by the store's
 * migrations): it gets the origins of the constant URLs of the automations that read it, or none,
 * and a secret with none is refused everywhere until an administrator sets them with PUT.
 */
import { SCHEMES } from '../cel/static-origin';

export { MAX_ALLOWED_ORIGINS, staticOrigin } from '../cel/static-origin';
export { allowedOriginsOf, backfillSecretOrigins, originList } from '../store/secret-origins';

/** The normalised origin of `text` (`scheme://host[:port]`), or why it is not one. */
export function normaliseOrigin(text: unknown): { origin: string } | { problem: string } {
  if (typeof text !== 'string' || text === '') return { problem: 'must be a string scheme://host[:port]' };
  if (text.length > 300) return { problem: 'must be at most 300 characters' };
  if (/[\s*]/.test(text)) return { problem: 'must be one exact origin scheme://host[:port] (no spaces, no wildcards)' };
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return { problem: 'is not a valid origin scheme://host[:port]' };
  }
  if (!SCHEMES.has(url.protocol))
    return { problem: 'must use https:// (or http:// where plain-HTTP targets are allowed)' };
  if (url.username !== '' || url.password !== '') return { problem: 'must not carry credentials' };
  const rest = text.replace(/^[a-zA-Z][a-zA-Z0-9+.-]*:\/\/[^/?#]*/, '');
  if (rest !== '' && rest !== '/')
    return { problem: 'must be an origin only: scheme://host[:port], no path, query or fragment' };
  if (url.hostname === '') return { problem: 'must name a host' };
  return { origin: url.origin };
}

/** The origin a request to `url` goes to (as `staticOrigin` and `normaliseOrigin` write it); undefined when `url` does not parse. */
export function targetOrigin(url: string): string | undefined {
  try {
    return new URL(url).origin;
  } catch {
    return undefined;
  }
}

/** The first secret (of `names`, in order) that may not be sent to `origin`, or undefined when all may. */
export function refusedSecret(
  origin: string,
  names: readonly string[],
  originsOf: ReadonlyMap<string, readonly string[]>,
): string | undefined {
  return names.find((name) => !(originsOf.get(name) ?? []).includes(origin));
}

/** The message of a refusal: names the secret and the origin, never a value. */
export function originRefusal(secret: string, origin: string, allowed: readonly string[]): string {
  return allowed.length === 0
    ? `secret "${secret}" has no allowedOrigins yet and is sent nowhere: an administrator sets them with PUT /api/v1/secrets/${secret}`
    : `secret "${secret}" may not be sent to ${origin} (its allowedOrigins: ${allowed.join(', ')})`;
}
