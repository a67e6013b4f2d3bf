/**
 * API clients (OAuth 2.0 client credentials): stored with a hash of the secret, never the secret
 * itself (a keyed hash for generated secrets, scrypt for operator-chosen ones: see ./secrets). The
 * secret is shown once, when the client is made.
 */
import type { Db, Queryable } from '../store/db';
import { iso } from '../store/db';
import { newId, randomToken } from '../ids';
import { hashChosenSecret, hashGeneratedSecret, isSlowHash, looksGenerated, verifySecret, UNGATED, type SlowGate } from './secrets';
import type { SecretBox } from '../crypto/secret-box';
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

/** The key of the keyed hashes of generated client secrets (derived from the sealing key). */
export function clientSecretKey(box: SecretBox): Buffer {
  return box.deriveKey('client-secret-hmac');
}

/** A generated secret gets a keyed hash; an operator-chosen one (`clientSecret` given) scrypt. */
export async function createClient(
  db: Queryable,
  box: SecretBox,
  input: { displayName: string; roles: Role[]; clientId?: string; clientSecret?: string },
): Promise<{ client: ApiClient; clientSecret: string }> {
  const clientSecret = input.clientSecret ?? randomToken(32);
  const hash = input.clientSecret === undefined ? hashGeneratedSecret(clientSecret, clientSecretKey(box)) : await hashChosenSecret(clientSecret);
  const rows = await db.query<ClientRow>(
    `INSERT INTO api_clients (id, client_id, secret_hash, display_name, roles)
     VALUES ($1, $2, $3, $4, $5::jsonb) RETURNING *`,
    [newId(), input.clientId ?? `cli_${randomToken(12)}`, hash, input.displayName, JSON.stringify(input.roles)],
  );
  return { client: toClient(rows[0]!), clientSecret };
}

/**
 * The client when id and secret match, else undefined. An unknown id costs one keyed hash, as a
 * generated secret does; a scrypt verification passes through `gate` (which may refuse it). A
 * legacy scrypt hash of a generated-looking secret is replaced by its keyed hash on success.
 */
export async function authenticateClient(
  db: Queryable,
  box: SecretBox,
  clientId: string,
  clientSecret: string,
  gate: SlowGate = UNGATED,
): Promise<ApiClient | undefined> {
  const rows = await db.query<ClientRow>('SELECT * FROM api_clients WHERE client_id = $1', [clientId]);
  const row = rows[0];
  const key = clientSecretKey(box);
  const ok = await verifySecret(clientSecret, row?.secret_hash ?? DECOY_HASH, key, gate);
  if (!row || !ok) return undefined;
  if (isSlowHash(row.secret_hash) && looksGenerated(clientSecret)) {
    await db.query('UPDATE api_clients SET secret_hash = $2 WHERE id = $1 AND secret_hash = $3', [
      row.id,
      hashGeneratedSecret(clientSecret, key),
      row.secret_hash,
    ]);
  }
  return toClient(row);
}

/** Verified against when a client id is unknown: a keyed hash no secret matches. */
const DECOY_HASH = `hmac-sha256$${randomToken(32)}`;

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
  | { kind: 'existing' }
  /** BOOTSTRAP_CLIENT_ID names a client made here before and deleted through the API since. */
  | { kind: 'deleted'; clientId: string };

/**
 * BOOTSTRAP_CLIENT_ID/SECRET set: a super_admin client with exactly those credentials exists
 * afterwards, unless it was made here once and deleted through the API since (table
 * bootstrap_clients): a deletion is final, whatever the environment still says.
 * Unset and no client at all: one is made, and its secret returned to be shown once.
 */
export async function ensureBootstrapClient(
  db: Db,
  box: SecretBox,
  bootstrap: { clientId: string; clientSecret: string } | undefined,
): Promise<BootstrapResult> {
  if (bootstrap) {
    const rows = await db.query<ClientRow>('SELECT * FROM api_clients WHERE client_id = $1', [bootstrap.clientId]);
    const row = rows[0];
    if (!row) {
      // The record and the client in one transaction: of two processes starting at once, one makes
      // the client; and a client made once and deleted since is not made again.
      const made = await db.transaction(async (tx) => {
        const claimed = await tx.query('INSERT INTO bootstrap_clients (client_id) VALUES ($1) ON CONFLICT (client_id) DO NOTHING RETURNING client_id', [bootstrap.clientId]);
        if (claimed.length === 0) return false;
        await createClient(tx, box, { displayName: 'bootstrap', roles: ['super_admin'], ...bootstrap });
        return true;
      });
      if (!made) return { kind: 'deleted', clientId: bootstrap.clientId };
    } else if (
      !(await verifySecret(bootstrap.clientSecret, row.secret_hash, clientSecretKey(box))) ||
      !toClient(row).roles.includes('super_admin')
    ) {
      await db.query(`UPDATE api_clients SET secret_hash = $2, roles = '["super_admin"]'::jsonb WHERE id = $1`, [
        row.id,
        await hashChosenSecret(bootstrap.clientSecret),
      ]);
    }
    await db.query('INSERT INTO bootstrap_clients (client_id) VALUES ($1) ON CONFLICT (client_id) DO NOTHING', [bootstrap.clientId]);
    return { kind: 'configured', clientId: bootstrap.clientId };
  }
  const any = await db.query('SELECT 1 FROM api_clients LIMIT 1');
  if (any.length > 0) return { kind: 'existing' };
  const { client, clientSecret } = await createClient(db, box, { displayName: 'bootstrap', roles: ['super_admin'] });
  return { kind: 'created', clientId: client.clientId, clientSecret };
}
