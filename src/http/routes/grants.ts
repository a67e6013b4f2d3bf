/**
 * Grants (`/api/v1/grants`): ask for one (admin, super_admin), read and list them (any role),
 * revoke and extend (admin, super_admin). A grant's life runs on the engine (workflows/grant.ts);
 * these operations change its record and tell its workflow, in one transaction.
 */
import type Router from '@koa/router';
import * as grants from '../../domain/grants';
import * as api from '../../domain/api-schemas';
import type { AppDeps } from '../context';
import {
  ITEM_READ_ERRORS,
  ITEM_WRITE_ERRORS,
  mountOperations,
  operation,
  READ_ERRORS,
  exactRouter,
} from '../operation';
import { GOVERNANCE_READ, GOVERNANCE_WRITE, listBody } from './governance-helpers';

const COLLECTION = '/api/v1/grants';
const ITEM = `${COLLECTION}/{id}` as const;
const TAG = 'Grants';
/** A write that tells the engine: 503 when it cannot be reached (nothing written), 409 for a state it does not apply to. */
const ENGINE_WRITE_ERRORS = [...ITEM_WRITE_ERRORS, 409, 503];

export const GRANT_OPERATIONS = [
  operation({
    method: 'post',
    path: COLLECTION,
    operationId: 'grants.create',
    tag: TAG,
    access: GOVERNANCE_WRITE,
    summary:
      "Grant a user an entitlement (its provisionerPolicy runs); the user's live grant of it is answered unchanged with created false.",
    body: { schema: api.CreateGrantRequest, required: true, validation: 'schema' },
    ok: api.CreateGrantResponse,
    errors: [...ITEM_WRITE_ERRORS, 503],
    handle: async (input, _ctx, deps) => grants.createGrant(deps.db, deps.engine, await input.body(), input.actor),
  }),
  operation({
    method: 'get',
    path: COLLECTION,
    operationId: 'grants.list',
    tag: TAG,
    paged: true,
    access: GOVERNANCE_READ,
    summary: 'List grants, newest first.',
    query: [
      { name: 'userId', description: 'Only grants of this user.', schema: { type: 'string', maxLength: 200 } },
      { name: 'appId', description: 'Only grants of this app.', schema: { type: 'string', maxLength: 200 } },
      {
        name: 'appEntitlementId',
        description: 'Only grants of this entitlement.',
        schema: { type: 'string', maxLength: 200 },
      },
      {
        name: 'state',
        description: 'Only grants in these states (repeatable).',
        schema: { type: 'array', items: { type: 'string', enum: [...api.GrantState.options] } },
      },
    ],
    ok: api.GrantList,
    errors: READ_ERRORS,
    handle: async (input, ctx, deps) =>
      listBody(
        'grant',
        await grants.listGrants(
          deps.db,
          deps.pageTokens,
          grants.readGrantFilter(ctx.query as Record<string, unknown>),
          input.page,
        ),
      ),
  }),
  operation({
    method: 'get',
    path: ITEM,
    operationId: 'grants.get',
    tag: TAG,
    access: GOVERNANCE_READ,
    summary: 'Get a grant with its provisioning record.',
    ok: api.GrantResponse,
    errors: ITEM_READ_ERRORS,
    handle: async (input, _ctx, deps) => ({ grant: await grants.getGrant(deps.db, input.params.id) }),
  }),
  operation({
    method: 'post',
    path: `${ITEM}/revoke`,
    operationId: 'grants.revoke',
    tag: TAG,
    access: GOVERNANCE_WRITE,
    summary:
      'Revoke a grant (its deprovisionerPolicy runs); a REVOKED grant answers unchanged, a failed deprovision is retried.',
    body: { schema: api.RevokeGrantRequest, required: true, validation: 'schema' },
    ok: api.GrantResponse,
    errors: ENGINE_WRITE_ERRORS,
    handle: async (input, _ctx, deps) => {
      const body = await input.body();
      return { grant: await grants.revokeGrant(deps.db, deps.engine, input.params.id, body.reason, input.actor) };
    },
  }),
  operation({
    method: 'post',
    path: `${ITEM}/extend`,
    operationId: 'grants.extend',
    tag: TAG,
    access: GOVERNANCE_WRITE,
    summary: "Set a GRANTED grant's expiresAt to now + duration (bounded by the entitlement's durationGrant).",
    body: { schema: api.ExtendGrantRequest, required: true, validation: 'schema' },
    ok: api.GrantResponse,
    errors: ENGINE_WRITE_ERRORS,
    handle: async (input, _ctx, deps) => {
      const body = await input.body();
      return { grant: await grants.extendGrant(deps.db, deps.engine, input.params.id, body.duration, input.actor) };
    },
  }),
];

export function createGrantsRouter(deps: AppDeps): Router {
  return mountOperations(exactRouter(), deps, GRANT_OPERATIONS);
}
