/**
 * API clients: /api/v1/iam/clients (super_admin only). The secret is in the create response only.
 * Creating and deleting a client is audited (actor, client id, roles; never the secret): see
 * domain/clients.
 */
import type Router from '@koa/router';
import type { AppDeps } from '../context';
import * as api from '../../domain/api-schemas';
import * as gov from '../../domain/schemas';
import { createApiClient, deleteApiClient, getApiClient, listApiClients } from '../../domain/clients';
import {
  ITEM_READ_ERRORS,
  mountOperations,
  operation,
  READ_ERRORS,
  WRITE_ERRORS,
  type Grant,
  exactRouter,
} from '../operation';

const IAM: Grant = { area: 'iam', mode: 'write' };
const TAG = 'API Clients';

export const CLIENT_OPERATIONS = [
  operation({
    method: 'post',
    path: '/api/v1/iam/clients',
    operationId: 'iam.clients.create',
    tag: TAG,
    access: IAM,
    summary: 'Create an API client (super_admin); the secret is shown only here.',
    body: { schema: api.CreateClientRequest, required: true, validation: 'schema' },
    ok: api.CreateClientResponse,
    errors: WRITE_ERRORS,
    handle: async (input, _ctx, deps) => createApiClient(deps.db, deps.secretBox, input.actor, await input.body()),
  }),
  operation({
    method: 'get',
    path: '/api/v1/iam/clients',
    operationId: 'iam.clients.list',
    tag: TAG,
    paged: true,
    access: IAM,
    summary: 'List API clients (super_admin).',
    ok: api.ApiClientList,
    errors: READ_ERRORS,
    handle: async (input, _ctx, deps) => {
      const page = await listApiClients(deps.db, deps.pageTokens, input.page);
      return { list: page.items, nextPageToken: page.nextPageToken };
    },
  }),
  operation({
    method: 'get',
    path: '/api/v1/iam/clients/{id}',
    operationId: 'iam.clients.get',
    tag: TAG,
    access: IAM,
    summary: 'Get an API client (super_admin).',
    ok: api.ApiClientResponse,
    errors: ITEM_READ_ERRORS,
    handle: async (input, _ctx, deps) => ({ client: await getApiClient(deps.db, input.params.id) }),
  }),
  operation({
    method: 'delete',
    path: '/api/v1/iam/clients/{id}',
    operationId: 'iam.clients.delete',
    tag: TAG,
    access: IAM,
    summary: 'Delete an API client (super_admin).',
    ok: gov.EmptyResponse,
    errors: ITEM_READ_ERRORS,
    handle: async (input, _ctx, deps) => {
      await deleteApiClient(deps.db, input.actor, input.params.id);
      return {};
    },
  }),
];

export function createClientsRouter(deps: AppDeps): Router {
  return mountOperations(exactRouter(), deps, CLIENT_OPERATIONS);
}
