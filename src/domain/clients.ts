/**
 * API clients (super_admin): create, list, get, delete, each write audited with its roles (never
 * the secret, which only the create response holds), and failed token requests audited.
 */
import {
  createClient as insertClient,
  deleteClient as removeClient,
  getClient as findClient,
  listClients,
  type ApiClient,
} from '../auth/clients';
import type { SecretBox } from '../crypto/secret-box';
import { recordAudit } from '../store/audit';
import type { Db } from '../store/db';
import { isString, pageOf } from './listing';
import type { Page, PageRequest, PageTokens } from './pagination';
import { notFound } from '../errors';
import type { CreateClientRequest } from './api-schemas';

export type { ApiClient };

/** Creates a client (the secret is returned here and nowhere else) and audits it, in one transaction. */
export async function createApiClient(
  db: Db,
  box: SecretBox,
  actor: string,
  body: CreateClientRequest,
): Promise<{ client: ApiClient; clientSecret: string }> {
  const input = { displayName: body.displayName ?? '', roles: [...new Set(body.roles)] };
  return db.transaction(async (tx) => {
    const made = await insertClient(tx, box, input);
    await recordAudit(tx, {
      actor,
      action: 'api_client.create',
      resourceType: 'api_client',
      resourceId: made.client.id,
      details: { clientId: made.client.clientId, displayName: made.client.displayName, roles: made.client.roles },
    });
    return made;
  });
}

export function listApiClients(db: Db, tokens: PageTokens, page: PageRequest): Promise<Page<{ client: ApiClient }>> {
  return pageOf(tokens, page, {
    name: 'iam:clients',
    filter: {},
    isCursor: isString,
    fetch: (after, limit) => listClients(db, after, limit),
    keyOf: (client) => client.id,
    toItem: (client) => ({ client }),
  });
}

/** The client, or 404. */
export async function getApiClient(db: Db, id: string): Promise<ApiClient> {
  const client = await findClient(db, id);
  if (!client) throw notFound('client', id);
  return client;
}

/** Deletes the client and audits it, in one transaction; 404 when there is none. */
export async function deleteApiClient(db: Db, actor: string, id: string): Promise<void> {
  const deleted = await db.transaction(async (tx) => {
    const client = await findClient(tx, id);
    if (!client || !(await removeClient(tx, client.id))) return false;
    await recordAudit(tx, {
      actor,
      action: 'api_client.delete',
      resourceType: 'api_client',
      resourceId: client.id,
      details: { clientId: client.clientId, displayName: client.displayName, roles: client.roles },
    });
    return true;
  });
  if (!deleted) throw notFound('client', id);
}

/** Audits a refused token request: the client id as given (cut to 200 characters, NULs dropped) and the source; never the secret. */
export async function auditTokenDenied(db: Db, clientId: string, sourceAddress: string): Promise<void> {
  const id = clientId.replaceAll('\u0000', '').slice(0, 200);
  await recordAudit(db, {
    actor: 'anonymous',
    action: 'api_client.token_denied',
    resourceType: 'api_client',
    resourceId: id,
    details: { clientId: id, sourceAddress, reason: 'invalid_client' },
  });
}
