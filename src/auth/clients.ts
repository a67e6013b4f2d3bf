/**
 * API clients (OAuth 2.0 client credentials): stored with a hash of the secret, never the secret
 * itself (a keyed hash for generated secrets, scrypt for operator-chosen ones: see ./client-secret-hashes). The
 * secret is shown once, when the client is made.
 */
import type { Db, Queryable } from '../store/db';
import * as apiClients from '../store/api-clients';
import { newId, randomToken } from '../ids';
import {
  decoyScryptHash,
  hashChosenSecret,
  hashGeneratedSecret,
  isSlowHash,
  looksGenerated,
  verifySecret,
  UNGATED,
  type SlowGate,
} from './client-secret-hashes';
import type { SecretBox } from '../crypto/secret-box';
import { isRole, type Role } from './roles';

export interface ApiClient {
  id: string;
  clientId: string;
  displayName: string;
  roles: Role[];
  createdAt: string;
}

function toClient(record: apiClients.ApiClientRecord): ApiClient {
  const roles = Array.isArray(record.roles) ? record.roles.filter(isRole) : [];
  return {
    id: record.id,
    clientId: record.clientId,
    displayName: record.displayName,
    roles,
    createdAt: record.createdAt,
  };
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
  const hash =
    input.clientSecret === undefined
      ? hashGeneratedSecret(clientSecret, clientSecretKey(box))
      : await hashChosenSecret(clientSecret);
  const record = await apiClients.insertApiClient(db, {
    id: newId(),
    clientId: input.clientId ?? `cli_${randomToken(12)}`,
    secretHash: hash,
    displayName: input.displayName,
    roles: input.roles,
  });
  return { client: toClient(record), clientSecret };
}

/**
 * The client when id and secret match, else undefined. Every refusal costs one scrypt verification
 * of the parameters operator-chosen secrets are hashed with, through `gate` (which may refuse it):
 * a wrong secret of a client whose secret was chosen (scrypt), of one whose secret was generated
 * (a keyed hash, then the decoy) and an unknown id (the decoy) alike, so that neither the answer's
 * time nor the gate's 503 tells which client ids exist. Only a success with a generated secret is
 * fast, and its caller knew the secret. A legacy scrypt hash of a generated-looking secret is
 * replaced by its keyed hash on success.
 */
export async function authenticateClient(
  db: Queryable,
  box: SecretBox,
  clientId: string,
  clientSecret: string,
  gate: SlowGate = UNGATED,
): Promise<ApiClient | undefined> {
  const row = await apiClients.apiClientByClientId(db, clientId);
  const key = clientSecretKey(box);
  const ok = row !== undefined && (await verifySecret(clientSecret, row.secretHash, key, gate));
  if (!row || !ok) {
    if (!row || !isSlowHash(row.secretHash)) await verifySecret(clientSecret, DECOY_HASH, key, gate);
    return undefined;
  }
  if (isSlowHash(row.secretHash) && looksGenerated(clientSecret)) {
    await apiClients.replaceSecretHash(db, row.id, hashGeneratedSecret(clientSecret, key), row.secretHash);
  }
  return toClient(row);
}

/** Verified against by a refusal that ran no scrypt otherwise: a scrypt hash no secret matches. */
const DECOY_HASH = decoyScryptHash();

export async function listClients(db: Queryable, afterId: string | undefined, limit: number): Promise<ApiClient[]> {
  return (await apiClients.listApiClients(db, afterId, limit)).map(toClient);
}

export async function getClient(db: Queryable, id: string): Promise<ApiClient | undefined> {
  const record = await apiClients.getApiClient(db, id);
  return record ? toClient(record) : undefined;
}

export async function deleteClient(db: Queryable, id: string): Promise<boolean> {
  return apiClients.deleteApiClient(db, id);
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
    const row = await apiClients.apiClientByClientId(db, bootstrap.clientId);
    if (!row) {
      // The record and the client in one transaction: of two processes starting at once, one makes
      // the client; and a client made once and deleted since is not made again.
      const made = await db.transaction(async (tx) => {
        if (!(await apiClients.claimBootstrapClient(tx, bootstrap.clientId))) return false;
        await createClient(tx, box, { displayName: 'bootstrap', roles: ['super_admin'], ...bootstrap });
        return true;
      });
      if (!made) return { kind: 'deleted', clientId: bootstrap.clientId };
    } else if (
      !(await verifySecret(bootstrap.clientSecret, row.secretHash, clientSecretKey(box))) ||
      !toClient(row).roles.includes('super_admin')
    ) {
      await apiClients.resetToSuperAdmin(db, row.id, await hashChosenSecret(bootstrap.clientSecret));
    }
    await apiClients.claimBootstrapClient(db, bootstrap.clientId);
    return { kind: 'configured', clientId: bootstrap.clientId };
  }
  if (await apiClients.anyApiClient(db)) return { kind: 'existing' };
  const { client, clientSecret } = await createClient(db, box, { displayName: 'bootstrap', roles: ['super_admin'] });
  return { kind: 'created', clientId: client.clientId, clientSecret };
}
