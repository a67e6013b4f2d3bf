/**
 * Provisioning webhooks (`/api/v1/provisioning_webhooks`: writes super_admin, reads admin and
 * super_admin) and the receivers' callbacks (`POST /api/v1/provisioning/callbacks/{token}`: no
 * bearer token, the token in the path is the capability, single use).
 */
import type Router from '@koa/router';
import * as hooks from '../../domain/provisioning-webhooks';
import * as api from '../../domain/api-schemas';
import { EmptyResponse } from '../../domain/schemas';
import type { AppDeps } from '../context';
import type { Grant } from '../operation';
import { ITEM_READ_ERRORS, mountOperations, operation, READ_ERRORS, WRITE_ERRORS, exactRouter } from '../operation';
import { listBody } from './governance-helpers';

const COLLECTION = '/api/v1/provisioning_webhooks';
const ITEM = `${COLLECTION}/{id}` as const;
const TAG = 'Provisioning webhooks';
/** super_admin only (as outbound secrets). */
const WRITE: Grant = { area: 'secrets', mode: 'write' };
/** admin and super_admin. */
const READ: Grant = { area: 'automations', mode: 'read' };

export const PROVISIONING_WEBHOOK_OPERATIONS = [
  operation({
    method: 'post',
    path: COLLECTION,
    operationId: 'provisioningWebhooks.create',
    tag: TAG,
    access: WRITE,
    summary: 'Create a provisioning webhook (the outbound rules of callWebhook apply to its URL).',
    body: { schema: api.CreateProvisioningWebhookRequest, required: true, validation: 'schema' },
    ok: api.ProvisioningWebhookResponse,
    errors: WRITE_ERRORS,
    handle: async (input, _ctx, deps) => ({
      provisioningWebhook: await hooks.createProvisioningWebhook(
        deps.db,
        await input.body(),
        deps.config.allowPrivateOutbound,
      ),
    }),
  }),
  operation({
    method: 'get',
    path: COLLECTION,
    operationId: 'provisioningWebhooks.list',
    tag: TAG,
    paged: true,
    access: READ,
    summary: 'List provisioning webhooks.',
    ok: api.ProvisioningWebhookList,
    errors: READ_ERRORS,
    handle: async (input, _ctx, deps) =>
      listBody('provisioningWebhook', await hooks.listProvisioningWebhooks(deps.db, deps.pageTokens, input.page)),
  }),
  operation({
    method: 'get',
    path: ITEM,
    operationId: 'provisioningWebhooks.get',
    tag: TAG,
    access: READ,
    summary: 'Get a provisioning webhook.',
    ok: api.ProvisioningWebhookResponse,
    errors: ITEM_READ_ERRORS,
    handle: async (input, _ctx, deps) => ({
      provisioningWebhook: await hooks.getProvisioningWebhook(deps.db, input.params.id),
    }),
  }),
  operation({
    method: 'delete',
    path: ITEM,
    operationId: 'provisioningWebhooks.delete',
    tag: TAG,
    access: WRITE,
    summary: 'Delete a provisioning webhook (409 while an entitlement policy names it).',
    ok: EmptyResponse,
    errors: [...ITEM_READ_ERRORS, 409],
    handle: async (input, _ctx, deps) => {
      await hooks.deleteProvisioningWebhook(deps.db, input.params.id);
      return {};
    },
  }),
  operation({
    method: 'post',
    path: '/api/v1/provisioning/callbacks/{token}',
    operationId: 'provisioningCallbacks.receive',
    tag: TAG,
    access: 'public',
    summary:
      "A receiver's answer to a call it accepted with 202: single use; 404 for a used or unknown token (nothing changes).",
    body: { schema: api.ProvisioningCallbackRequest, required: true, validation: 'schema' },
    ok: EmptyResponse,
    errors: [400, 404, 413, 500, 503],
    handle: async (input, _ctx, deps) => {
      const body = await input.body();
      await hooks.receiveCallback(deps.db, deps.engine, input.params.token, body);
      return {};
    },
  }),
];

export function createProvisioningWebhooksRouter(deps: AppDeps): Router {
  return mountOperations(exactRouter(), deps, PROVISIONING_WEBHOOK_OPERATIONS);
}
