/**
 * The api_clients table (and bootstrap_clients, the clients BOOTSTRAP_CLIENT_ID made): rows with
 * the client secret's hash, never the secret. What a hash is and how it is checked is src/auth.
 */
import { iso, type Queryable } from './db';

export interface ApiClientRecord {
  id: string;
  clientId: string;
  /** `hmac-sha256$…` or `scrypt$…` (src/auth/client-secret-hashes.ts). */
  secretHash: string;
  displayName: string;
  /** As stored (a JSON array of role names); src/auth keeps the known ones. */
  roles: unknown;
  createdAt: string;
}

interface ClientRow {
  id: string;
  client_id: string;
  secret_hash: string;
  display_name: string;
  roles: unknown;
  created_at: Date;
}

function toRecord(row: ClientRow): ApiClientRecord {
  return {
    id: row.id,
    clientId: row.client_id,
    secretHash: row.secret_hash,
    displayName: row.display_name,
    roles: row.roles,
    createdAt: iso(row.created_at) ?? '',
  };
}

export async function insertApiClient(
  db: Queryable,
  input: { id: string; clientId: string; secretHash: string; displayName: string; roles: string[] },
): Promise<ApiClientRecord> {
  const rows = await db.query<ClientRow>(
    `INSERT INTO api_clients (id, client_id, secret_hash, display_name, roles)
     VALUES ($1, $2, $3, $4, $5::jsonb) RETURNING *`,
    [input.id, input.clientId, input.secretHash, input.displayName, JSON.stringify(input.roles)],
  );
  return toRecord(rows[0]!);
}

export async function apiClientByClientId(db: Queryable, clientId: string): Promise<ApiClientRecord | undefined> {
  const rows = await db.query<ClientRow>('SELECT * FROM api_clients WHERE client_id = $1', [clientId]);
  return rows[0] ? toRecord(rows[0]) : undefined;
}

/** True when a client with this client id exists (a deleted client's tokens are refused). */
export async function apiClientExists(db: Queryable, clientId: string): Promise<boolean> {
  const rows = await db.query('SELECT 1 FROM api_clients WHERE client_id = $1', [clientId]);
  return rows.length > 0;
}

/** Replaces the hash only when it is still `expected` (a concurrent change wins). */
export async function replaceSecretHash(
  db: Queryable,
  id: string,
  secretHash: string,
  expected: string,
): Promise<void> {
  await db.query('UPDATE api_clients SET secret_hash = $2 WHERE id = $1 AND secret_hash = $3', [
    id,
    secretHash,
    expected,
  ]);
}

/** The bootstrap client's credentials and role, as the environment says. */
export async function resetToSuperAdmin(db: Queryable, id: string, secretHash: string): Promise<void> {
  await db.query(`UPDATE api_clients SET secret_hash = $2, roles = '["super_admin"]'::jsonb WHERE id = $1`, [
    id,
    secretHash,
  ]);
}

export async function listApiClients(
  db: Queryable,
  afterId: string | undefined,
  limit: number,
): Promise<ApiClientRecord[]> {
  const rows = await db.query<ClientRow>(
    'SELECT * FROM api_clients WHERE ($1::text IS NULL OR id > $1) ORDER BY id LIMIT $2',
    [afterId ?? null, limit],
  );
  return rows.map(toRecord);
}

export async function getApiClient(db: Queryable, id: string): Promise<ApiClientRecord | undefined> {
  const rows = await db.query<ClientRow>('SELECT * FROM api_clients WHERE id = $1', [id]);
  return rows[0] ? toRecord(rows[0]) : undefined;
}

export async function deleteApiClient(db: Queryable, id: string): Promise<boolean> {
  const rows = await db.query('DELETE FROM api_clients WHERE id = $1 RETURNING id', [id]);
  return rows.length > 0;
}

export async function anyApiClient(db: Queryable): Promise<boolean> {
  const rows = await db.query('SELECT 1 FROM api_clients LIMIT 1');
  return rows.length > 0;
}

/** Records that BOOTSTRAP_CLIENT_ID made this client; false when it was recorded before. */
export async function claimBootstrapClient(db: Queryable, clientId: string): Promise<boolean> {
  const claimed = await db.query(
    'INSERT INTO bootstrap_clients (client_id) VALUES ($1) ON CONFLICT (client_id) DO NOTHING RETURNING client_id',
    [clientId],
  );
  return claimed.length > 0;
}
