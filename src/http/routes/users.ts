/** Users: `POST /api/v1/users`, `GET /api/v1/users/{user_id}`, `POST /api/v1/users/{user_id}` (update), `GET /api/v1/users`. */
import type Router from '@koa/router';
import { createUser, getUser, listUsers, updateUser } from '../../domain/users';
import * as gov from '../../domain/schemas';
import type { AppDeps } from '../context';
import {
  ITEM_READ_ERRORS,
  ITEM_WRITE_ERRORS,
  mountOperations,
  operation,
  READ_ERRORS,
  WRITE_ERRORS,
  exactRouter,
} from '../operation';
import { GOVERNANCE_READ, GOVERNANCE_WRITE, listBody } from './governance-helpers';

export const USER_OPERATIONS = [
  operation({
    method: 'post',
    path: '/api/v1/users',
    operationId: 'users.create',
    tag: 'Users',
    summary: 'Create a user.',
    access: GOVERNANCE_WRITE,
    body: { schema: gov.CreateUserRequest, required: true, validation: 'schema' },
    ok: gov.UserResponse,
    errors: WRITE_ERRORS,
    handle: async (input, _ctx, deps) => ({ user: await createUser(deps.db, await input.body(), input.actor) }),
  }),
  operation({
    method: 'get',
    path: '/api/v1/users/{user_id}',
    operationId: 'users.get',
    tag: 'Users',
    summary: 'Get a user.',
    access: GOVERNANCE_READ,
    ok: gov.UserResponse,
    errors: ITEM_READ_ERRORS,
    handle: async (input, _ctx, deps) => ({ user: await getUser(deps.db, input.params.user_id) }),
  }),
  operation({
    method: 'post',
    path: '/api/v1/users/{user_id}',
    operationId: 'users.update',
    tag: 'Users',
    summary: 'Update a user (displayName, email, status); a change sends user.updated.',
    access: GOVERNANCE_WRITE,
    body: { schema: gov.UpdateUserRequest, required: true, validation: 'schema' },
    ok: gov.UserResponse,
    errors: ITEM_WRITE_ERRORS,
    handle: async (input, _ctx, deps) => ({
      user: await updateUser(deps.db, input.params.user_id, await input.body(), input.actor),
    }),
  }),
  operation({
    method: 'get',
    path: '/api/v1/users',
    operationId: 'users.list',
    tag: 'Users',
    paged: true,
    summary: 'List users.',
    access: GOVERNANCE_READ,
    ok: gov.UserList,
    errors: READ_ERRORS,
    handle: async (input, _ctx, deps) => listBody('user', await listUsers(deps.db, deps.pageTokens, input.page)),
  }),
];

export function createUsersRouter(deps: AppDeps): Router {
  return mountOperations(exactRouter(), deps, USER_OPERATIONS);
}
