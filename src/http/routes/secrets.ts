/**
 * Named outbound secrets: `POST /api/v1/secrets` {name, value, allowedOrigins}, `GET
 * /api/v1/secrets` (names, allowed origins and timestamps), `GET /api/v1/secrets/{name}`
 * (metadata), `PUT /api/v1/secrets/{name}` {value?, gracePeriod?, allowedOrigins?} (rotation,
 * re-binding), `DELETE /api/v1/secrets/{name}`. read_only and admin read the metadata; creating,
 * replacing (value or origins) and deleting are super_admin's (src/auth/roles.ts). No response ever
 * carries a value.
 */
import type Router from '@koa/router';
import type { AppDeps } from '../context';
import {
  createOutboundSecret,
  deleteOutboundSecret,
  getOutboundSecret,
  listOutboundSecrets,
  replaceOutboundSecret,
} from '../../domain/outbound-secrets';
import * as gov from '../../domain/schemas';
import * as secrets from '../../domain/secret-schemas';
import {
  type Grant,
  ITEM_READ_ERRORS,
  ITEM_WRITE_ERRORS,
  mountOperations,
  operation,
  READ_ERRORS,
  exactRouter,
} from '../operation';
import { GOVERNANCE_READ, listBody } from './governance-helpers';

const TAG = 'Secrets';
/** Creating, replacing and deleting a secret: super_admin only. */
const SECRETS_WRITE: Grant = { area: 'secrets', mode: 'write' };

export const SECRET_OPERATIONS = [
  operation({
    method: 'post',
    path: '/api/v1/secrets',
    operationId: 'secrets.create',
    tag: TAG,
    access: SECRETS_WRITE,
    summary:
      'Create a named outbound secret (super_admin), read as secrets.<name> in callWebhook header values and sent only to its allowedOrigins; the value is never returned.',
    body: { schema: secrets.CreateSecretRequest, required: true, validation: 'schema' },
    ok: secrets.SecretResponse,
    errors: [400, 401, 403, 409, 413, 500],
    handle: async (input, _ctx, deps) => ({
      secret: await createOutboundSecret(deps.db, await input.body(), {
        secretBox: deps.secretBox,
        actor: input.actor,
      }),
    }),
  }),
  operation({
    method: 'get',
    path: '/api/v1/secrets',
    operationId: 'secrets.list',
    tag: TAG,
    paged: true,
    access: GOVERNANCE_READ,
    summary: 'List outbound secrets: names, allowed origins and timestamps only.',
    ok: secrets.SecretList,
    errors: READ_ERRORS,
    handle: async (input, _ctx, deps) =>
      listBody('secret', await listOutboundSecrets(deps.db, deps.pageTokens, input.page)),
  }),
  operation({
    method: 'get',
    path: '/api/v1/secrets/{name}',
    operationId: 'secrets.get',
    tag: TAG,
    access: GOVERNANCE_READ,
    summary: 'Get a secret’s metadata (never its value).',
    ok: secrets.SecretResponse,
    errors: ITEM_READ_ERRORS,
    handle: async (input, _ctx, deps) => ({ secret: await getOutboundSecret(deps.db, input.params.name) }),
  }),
  operation({
    method: 'put',
    path: '/api/v1/secrets/{name}',
    operationId: 'secrets.replace',
    tag: TAG,
    access: SECRETS_WRITE,
    summary:
      'Replace a secret’s value (rotation) and/or its allowedOrigins (super_admin): requests made from now on send the new value and are checked against the new origins; signed calls also carry the old value’s signature during gracePeriod (default 24 h).',
    body: { schema: secrets.ReplaceSecretRequest, required: true, validation: 'schema' },
    ok: secrets.ReplaceSecretResponse,
    errors: ITEM_WRITE_ERRORS,
    handle: async (input, _ctx, deps) => {
      const body = await input.body();
      const { previousValueExpiresAt, ...secret } = await replaceOutboundSecret(deps.db, input.params.name, body, {
        secretBox: deps.secretBox,
        actor: input.actor,
      });
      return { secret, previousValueExpiresAt };
    },
  }),
  operation({
    method: 'delete',
    path: '/api/v1/secrets/{name}',
    operationId: 'secrets.delete',
    tag: TAG,
    access: SECRETS_WRITE,
    summary: 'Delete a secret (super_admin); a run whose step reads it fails at that step.',
    ok: gov.EmptyResponse,
    errors: ITEM_READ_ERRORS,
    handle: async (input, _ctx, deps) => {
      await deleteOutboundSecret(deps.db, input.params.name, input.actor);
      return {};
    },
  }),
];

export function createSecretsRouter(deps: AppDeps): Router {
  return mountOperations(exactRouter(), deps, SECRET_OPERATIONS);
}
