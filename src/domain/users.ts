/** Users (service accounts and humans): create, get, list. */
import { newId } from '../ids';
import * as store from '../store/users';
import type { Db, Queryable } from '../store/db';
import type { Page, PageRequest, PageTokens } from './pagination';
import { isString, pageOf } from './listing';
import { CreateUserRequest, type User } from './schemas';
import { parseOrThrow } from './validation';
import { notFound } from '../errors';
import { recordDirectoryEvent } from './directory-events';

export const SERVICE_USER = 'USER_TYPE_SERVICE';

function toUser(row: store.UserRow): User {
  return {
    id: row.id,
    displayName: row.displayName,
    email: row.email,
    type: row.type as User['type'],
    createdAt: row.createdAt,
  };
}

/**
 * Creates a user from a request body, with its `user.created` event in the same transaction; 400
 * naming the field when it is invalid.
 */
export async function createUser(db: Db, body: unknown, actor: string): Promise<User> {
  const input = parseOrThrow(CreateUserRequest, body);
  return db.transaction(async (tx) => {
    const user = toUser(
      await store.insertUser(tx, {
        id: newId(),
        displayName: input.displayName,
        email: input.email ?? '',
        type: input.type,
      }),
    );
    await recordDirectoryEvent(tx, { type: 'user.created', actor, user: { ...user } });
    return user;
  });
}

/** The user, or 404. */
export async function getUser(db: Queryable, id: string): Promise<User> {
  const row = await store.findUser(db, id);
  if (!row) throw notFound('user', id);
  return toUser(row);
}

export function listUsers(db: Db, tokens: PageTokens, page: PageRequest): Promise<Page<User>> {
  return pageOf(tokens, page, {
    name: 'users',
    filter: {},
    isCursor: isString,
    fetch: (after, limit) => store.listUsers(db, after, limit),
    keyOf: (row) => row.id,
    toItem: toUser,
  });
}
