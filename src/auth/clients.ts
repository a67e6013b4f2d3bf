/**
 * API clients (OAuth 2.0 client credentials): stored with a scrypt hash of the secret, never the
 * secret itself. The secret is shown once, when the client is made.
 */
import type { Queryable } from '../store/db';
import { iso } from '../store/db';
import { newId, randomToken } from '../ids';
import { hashSecret, verifySecret, DECOY_HASH_PROMISE } from './secrets';
import { isRole, type Role } from './roles';

export interface ApiClient {
  id: string;
  clientId: string;
  displayName: string;
  roles: Role[];
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

function toClient(row: ClientRow): ApiClient {
  const roles = Array.isArray(row.roles) ? row.roles.filter(isRole) : [];
  return { id: row.id, clientId: row.client_id, displayName: row.display_name, roles, createdAt: iso(row.created_at) ?? '' };
}

export async function createClient(
  db: Queryable,
  input: { displayName: string; roles: Role[]; clientId?: string; clientSecret?: string },
): Promise<{ client: ApiClient; clientSecret: string }> {
  const clientSecret = input.clientSecret ?? randomToken(32);
  const rows = await db.query<ClientRow>(
    `INSERT INTO api_clients (id, client_id, secret_hash, display_name, roles)
     VALUES ($1, $2, $3, $4, $5::jsonb) RETURNING *`,
    [newId(), input.clientId ?? `cli_${randomToken(12)}`, await hashSecret(clientSecret), input.displayName, JSON.stringify(input.roles)],
  );
  return { client: toClient(rows[0]!), clientSecret };
}

/** The client when id and secret match, else undefined; takes the same time for unknown ids. */
export async function authenticateClient(db: Queryable, clientId: string, clientSecret: string): Promise<ApiClient | undefined> {
  const rows = await db.query<ClientRow>('SELECT * FROM api_clients WHERE client_id = $1', [clientId]);
  const row = rows[0];
  const ok = await verifySecret(clientSecret, row?.secret_hash ?? (await DECOY_HASH_PROMISE));
  return row && ok ? toClient(row) : undefined;
}

export async function listClients(db: Queryable, afterId: string | undefined, limit: number): Promise<ApiClient[]> {
  const rows = await db.query<ClientRow>(
    'SELECT * FROM api_clients WHERE ($1::text IS NULL OR id > $1) ORDER BY id LIMIT $2',
    [afterId ?? null, limit],
  );
  return rows.map(toClient);
}

export async function getClient(db: Queryable, id: string): Promise<ApiClient | undefined> {
  const rows = await db.query<ClientRow>('SELECT * FROM api_clients WHERE id = $1', [id]);
  return rows[0] ? toClient(rows[0]) : undefined;
}

export async function deleteClient(db: Queryable, id: string): Promise<boolean> {
  const rows = await db.query('DELETE FROM api_clients WHERE id = $1 RETURNING id', [id]);
  return rows.length > 0;
}

export type BootstrapResult =
  | { kind: 'configured'; clientId: string }
  | { kind: 'created'; clientId: string; clientSecret: string }
  | { kind: 'existing' };

/**
 * BOOTSTRAP_CLIENT_ID/SECRET set: a super_admin client with exactly those credentials exists
 * afterwards. Unset and no client at all: one is made, and its secret returned to be shown once.
 */
export async function ensureBootstrapClient(
  db: Queryable,
  bootstrap: { clientId: string; clientSecret: string } | undefined,
): Promise<BootstrapResult> {
  if (bootstrap) {
    const rows = await db.query<ClientRow>('SELECT * FROM api_clients WHERE client_id = $1', [bootstrap.clientId]);
    const row = rows[0];
    if (!row) {
      await createClient(db, { displayName: 'bootstrap', roles: ['super_admin'], ...bootstrap });
    } else if (!(await verifySecret(bootstrap.clientSecret, row.secret_hash)) || !toClient(row).roles.includes('super_admin')) {
      await db.query(`UPDATE api_clients SET secret_hash = $2, roles = '["super_admin"]'::jsonb WHERE id = $1`, [
        row.id,
        await hashSecret(bootstrap.clientSecret),
      ]);
    }
    return { kind: 'configured', clientId: bootstrap.clientId };
  }
  const any = await db.query('SELECT 1 FROM api_clients LIMIT 1');
  if (any.length > 0) return { kind: 'existing' };
  const { client, clientSecret } = await createClient(db, { displayName: 'bootstrap', roles: ['super_admin'] });
  return { kind: 'created', clientId: client.clientId, clientSecret };
}
