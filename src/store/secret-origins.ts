/**
 * Stored `allowedOrigins` of named outbound secrets (src/domain/secret-origins.ts says what they
 * bind): reading them, and the migration of secrets stored before origins existed.
 */
import { secretsSelectedBy } from '../cel';
import { readsSecrets } from '../steps/secret-references';
import { MAX_ALLOWED_ORIGINS, staticOrigin } from '../cel/static-origin';
import type { Queryable } from './queryable';

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
      const signing =
        call.signature !== null && typeof call.signature === 'object'
          ? (call.signature as { secret?: unknown }).secret
          : undefined;
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
    await db.query(
      'UPDATE outbound_secrets SET allowed_origins = $2::jsonb WHERE name = $1 AND allowed_origins IS NULL',
      [name, JSON.stringify((origins.get(name) ?? []).sort())],
    );
  }
  return wanted.size;
}
