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
import { constantPrefix, secretsSelectedBy } from '../cel';
import { readsSecrets } from '../steps/secret-references';
import type { Queryable } from '../store/db';
import type { FieldViolation } from './errors';

/** How many origins a secret may allow. */
export const MAX_ALLOWED_ORIGINS = 20;

const SCHEMES = new Set(['https:', 'http:']);

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
  if (!SCHEMES.has(url.protocol)) return { problem: 'must use https:// (or http:// where plain-HTTP targets are allowed)' };
  if (url.username !== '' || url.password !== '') return { problem: 'must not carry credentials' };
  const rest = text.replace(/^[a-zA-Z][a-zA-Z0-9+.-]*:\/\/[^/?#]*/, '');
  if (rest !== '' && rest !== '/') return { problem: 'must be an origin only: scheme://host[:port], no path, query or fragment' };
  if (url.hostname === '') return { problem: 'must name a host' };
  return { origin: url.origin };
}

/** Validates `allowedOrigins` (1..20 origins, normalised, duplicates folded); pushes violations. */
export function validateAllowedOrigins(value: unknown, field: string, violations: FieldViolation[]): string[] {
  if (!Array.isArray(value) || value.length === 0 || value.length > MAX_ALLOWED_ORIGINS) {
    violations.push({ field, description: `is required: a list of 1 to ${MAX_ALLOWED_ORIGINS} origins scheme://host[:port] the secret may be sent to` });
    return [];
  }
  const origins: string[] = [];
  value.forEach((item, index) => {
    const result = normaliseOrigin(item);
    if ('problem' in result) violations.push({ field: `${field}[${index}]`, description: result.problem });
    else if (!origins.includes(result.origin)) origins.push(result.origin);
  });
  return origins;
}

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

/** The origin a request to `url` goes to (as `staticOrigin` and `normaliseOrigin` write it); undefined when `url` does not parse. */
export function targetOrigin(url: string): string | undefined {
  try {
    return new URL(url).origin;
  } catch {
    return undefined;
  }
}

/** The first secret (of `names`, in order) that may not be sent to `origin`, or undefined when all may. */
export function refusedSecret(origin: string, names: readonly string[], originsOf: ReadonlyMap<string, readonly string[]>): string | undefined {
  return names.find((name) => !(originsOf.get(name) ?? []).includes(origin));
}

/** The message of a refusal: names the secret and the origin, never a value. */
export function originRefusal(secret: string, origin: string, allowed: readonly string[]): string {
  return allowed.length === 0
    ? `secret "${secret}" has no allowedOrigins yet and is sent nowhere: an administrator sets them with PUT /api/v1/secrets/${secret}`
    : `secret "${secret}" may not be sent to ${origin} (its allowedOrigins: ${allowed.join(', ')})`;
}

/** name → allowedOrigins of the secrets of `names` that exist. */
export async function allowedOriginsOf(db: Queryable, names: readonly string[]): Promise<Map<string, string[]>> {
  if (names.length === 0) return new Map();
  const rows = await db.query<{ name: string; allowed_origins: unknown }>(
    'SELECT name, allowed_origins FROM outbound_secrets WHERE name = ANY($1::text[])',
    [[...names]],
  );
  return new Map(rows.map((row) => [row.name, originList(row.allowed_origins)]));
}

/** A stored `allowed_origins` (jsonb; NULL before the migration ran) as a list. */
export function originList(stored: unknown): string[] {
  const value = typeof stored === 'string' ? (JSON.parse(stored) as unknown) : stored;
  return Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : [];
}

interface StoredStep {
  callWebhook?: { url?: unknown; headers?: unknown; signature?: unknown };
}

/**
 * Migration of secrets stored before `allowedOrigins`: each gets the origins of the constant
 * (static-origin) URLs of the callWebhook steps that read it (in a header or as `signature.secret`), in drafts and published versions,
 * at most 20; a secret read only by expression URLs, or by nothing, gets none (refused until an
 * administrator sets them). Runs inside the migration transaction; touches only rows still NULL.
 */
export async function backfillSecretOrigins(db: Queryable): Promise<number> {
  const pending = await db.query<{ name: string }>('SELECT name FROM outbound_secrets WHERE allowed_origins IS NULL');
  if (pending.length === 0) return 0;
  const wanted = new Set(pending.map((row) => row.name));
  const origins = new Map<string, string[]>();
  const sources = await db.query<{ steps: unknown }>(
    `SELECT steps FROM automations UNION ALL SELECT snapshot->'steps' AS steps FROM automation_versions`,
  );
  for (const { steps: stored } of sources) {
    const steps = typeof stored === 'string' ? (JSON.parse(stored) as unknown) : stored;
    if (!Array.isArray(steps)) continue;
    for (const step of steps as StoredStep[]) {
      const call = step?.callWebhook;
      if (!call || typeof call.url !== 'string') continue;
      const origin = staticOrigin(call.url);
      if (origin === undefined) continue;
      const read: string[] = [];
      if (call.headers !== null && typeof call.headers === 'object') {
        for (const source of Object.values(call.headers as Record<string, unknown>)) {
          if (typeof source === 'string' && readsSecrets(source)) read.push(...secretsSelectedBy(source));
        }
      }
      // The secret that signs the step's calls (`signature.secret`) is sent there too, in effect.
      const signing = call.signature !== null && typeof call.signature === 'object' ? (call.signature as { secret?: unknown }).secret : undefined;
      if (typeof signing === 'string') read.push(signing);
      for (const name of read) {
        if (!wanted.has(name)) continue;
        const list = origins.get(name) ?? [];
        if (!list.includes(origin) && list.length < MAX_ALLOWED_ORIGINS) list.push(origin);
        origins.set(name, list);
      }
    }
  }
  for (const name of wanted) {
    await db.query('UPDATE outbound_secrets SET allowed_origins = $2::jsonb WHERE name = $1 AND allowed_origins IS NULL', [
      name,
      JSON.stringify((origins.get(name) ?? []).sort()),
    ]);
  }
  return wanted.size;
}
