/**
 * Named outbound secrets (credentials callWebhook steps send, read as `secrets.<name>`): the value
 * is stored sealed with the secret box and read back only by the worker's callWebhook activity.
 * Listings and metadata never select the value.
 */
import { iso, type Queryable } from './db';
import { originList } from './secret-origins';

export interface OutboundSecretMetadata {
  name: string;
  /** Where a request carrying the secret may go (src/domain/secret-origins.ts); empty: nowhere yet. */
  allowedOrigins: string[];
  createdAt: string;
  updatedAt: string;
}

const METADATA = `name, allowed_origins AS "allowedOrigins", created_at AS "createdAt", updated_at AS "updatedAt"`;
type RawMetadata = { name: string; allowedOrigins: unknown; createdAt: unknown; updatedAt: unknown };

function toMetadata(raw: RawMetadata): OutboundSecretMetadata {
  return {
    name: raw.name,
    allowedOrigins: originList(raw.allowedOrigins),
    createdAt: iso(raw.createdAt)!,
    updatedAt: iso(raw.updatedAt)!,
  };
}

/** Inserts a secret; undefined when one with this name exists. */
export async function insertOutboundSecret(
  db: Queryable,
  name: string,
  sealedValue: string,
  allowedOrigins: readonly string[],
): Promise<OutboundSecretMetadata | undefined> {
  const rows = await db.query<RawMetadata>(
    `INSERT INTO outbound_secrets (name, sealed_value, allowed_origins) VALUES ($1, $2, $3::jsonb) ON CONFLICT (name) DO NOTHING RETURNING ${METADATA}`,
    [name, sealedValue, JSON.stringify(allowedOrigins)],
  );
  return rows[0] && toMetadata(rows[0]);
}

/** Replaces where a secret may be sent; undefined when there is none with this name. */
export async function replaceOutboundSecretOrigins(
  db: Queryable,
  name: string,
  allowedOrigins: readonly string[],
): Promise<OutboundSecretMetadata | undefined> {
  const rows = await db.query<RawMetadata>(
    `UPDATE outbound_secrets SET allowed_origins = $2::jsonb WHERE name = $1 RETURNING ${METADATA}`,
    [name, JSON.stringify(allowedOrigins)],
  );
  return rows[0] && toMetadata(rows[0]);
}

/**
 * Replaces the value of a secret; undefined when there is none with this name. With `graceSeconds`
 * above 0 the replaced value is kept (sealed) until then, for signatures; an older previous value
 * is dropped. 0 drops the replaced value at once.
 */
export async function replaceOutboundSecret(
  db: Queryable,
  name: string,
  sealedValue: string,
  graceSeconds = 0,
): Promise<(OutboundSecretMetadata & { previousValueExpiresAt: string | null }) | undefined> {
  const rows = await db.query<RawMetadata & { previousValueExpiresAt: unknown }>(
    `UPDATE outbound_secrets SET
       previous_sealed_value = CASE WHEN $3::double precision > 0 THEN sealed_value END,
       previous_expires_at = CASE WHEN $3::double precision > 0 THEN now() + make_interval(secs => $3::double precision) END,
       sealed_value = $2, updated_at = now()
     WHERE name = $1 RETURNING ${METADATA}, previous_expires_at AS "previousValueExpiresAt"`,
    [name, sealedValue, graceSeconds],
  );
  return (
    rows[0] && { ...toMetadata(rows[0]), previousValueExpiresAt: iso(rows[0].previousValueExpiresAt ?? null) ?? null }
  );
}

/** The previous value of a secret (sealed) while its rotation's grace period lasts; undefined otherwise. */
export async function previousSealedOutboundSecret(db: Queryable, name: string): Promise<string | undefined> {
  const rows = await db.query<{ previous_sealed_value: string | null }>(
    'SELECT previous_sealed_value FROM outbound_secrets WHERE name = $1 AND previous_expires_at > now()',
    [name],
  );
  return rows[0]?.previous_sealed_value ?? undefined;
}

export async function deleteOutboundSecret(db: Queryable, name: string): Promise<boolean> {
  const rows = await db.query<{ name: string }>('DELETE FROM outbound_secrets WHERE name = $1 RETURNING name', [name]);
  return rows.length > 0;
}

export async function findOutboundSecret(db: Queryable, name: string): Promise<OutboundSecretMetadata | undefined> {
  const rows = await db.query<RawMetadata>(`SELECT ${METADATA} FROM outbound_secrets WHERE name = $1`, [name]);
  return rows[0] && toMetadata(rows[0]);
}

/** Up to `limit` secrets with names after `after`, by name. */
export async function listOutboundSecrets(
  db: Queryable,
  after: string | undefined,
  limit: number,
): Promise<OutboundSecretMetadata[]> {
  const rows =
    after === undefined
      ? await db.query<RawMetadata>(`SELECT ${METADATA} FROM outbound_secrets ORDER BY name LIMIT $1`, [limit])
      : await db.query<RawMetadata>(`SELECT ${METADATA} FROM outbound_secrets WHERE name > $1 ORDER BY name LIMIT $2`, [
          after,
          limit,
        ]);
  return rows.map(toMetadata);
}

/** Which of `names` exist. */
export async function existingOutboundSecrets(db: Queryable, names: readonly string[]): Promise<Set<string>> {
  if (names.length === 0) return new Set();
  const rows = await db.query<{ name: string }>('SELECT name FROM outbound_secrets WHERE name = ANY($1::text[])', [
    [...names],
  ]);
  return new Set(rows.map((row) => row.name));
}

/** The sealed values of `names` that exist (name → sealed value). */
export async function sealedOutboundSecrets(db: Queryable, names: readonly string[]): Promise<Map<string, string>> {
  if (names.length === 0) return new Map();
  const rows = await db.query<{ name: string; sealed_value: string }>(
    'SELECT name, sealed_value FROM outbound_secrets WHERE name = ANY($1::text[])',
    [[...names]],
  );
  return new Map(rows.map((row) => [row.name, row.sealed_value]));
}
