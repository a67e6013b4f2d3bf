/** Users (service accounts and humans): create, get, list. */
import { newId } from '../ids';
import * as store from '../store/users';
import type { Db, Queryable } from '../store/db';
import type { Page, PageRequest, PageTokens } from './pagination';
import { isString, pageOf } from './listing';
import { CreateUserRequest, type UpdateUserRequest, userMaskPaths, USER_UPDATE_FIELDS, type User } from './schemas';
import { parseOrThrow } from './validation';
import { invalidArgument, notFound } from '../errors';
import { recordDirectoryEvent } from './directory-events';

export const SERVICE_USER = 'USER_TYPE_SERVICE';

function toUser(row: store.UserRow): User {
  return {
    id: row.id,
    displayName: row.displayName,
    email: row.email,
    type: row.type as User['type'],
    status: row.status as User['status'],
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

/**
 * The user with `email` (case-insensitive; the oldest if several), made with `displayName` and
 * `type` when there is none, with its `user.created` event in the same transaction. One user per
 * lower-cased email even when callers race: the email's lock is held from the look-up to the insert.
 * 400 naming the field when what would be made is invalid.
 */
export async function ensureUser(
  db: Db,
  wanted: { email: string; displayName: string; type: string },
  actor: string,
): Promise<{ user: User; created: boolean }> {
  const input = parseOrThrow(CreateUserRequest, wanted);
  const email = input.email ?? '';
  if (email === '') throw invalidArgument({ field: 'email', description: 'is required' });
  return db.transaction(async (tx) => {
    await store.lockEmail(tx, email);
    const existing = await store.findUserByEmail(tx, email);
    if (existing) return { user: toUser(existing), created: false };
    const user = toUser(
      await store.insertUser(tx, { id: newId(), displayName: input.displayName, email, type: input.type }),
    );
    await recordDirectoryEvent(tx, { type: 'user.created', actor, user: { ...user } });
    return { user, created: true };
  });
}

/**
 * Updates a user's `displayName`, `email` or `status` (`{user, updateMask}`: the mask's fields, or
 * those given), with its `user.updated` event in the same transaction; an update that changes
 * nothing writes nothing and sends no event. 404 for an unknown user, 400 naming a bad field.
 */
export async function updateUser(db: Db, id: string, body: UpdateUserRequest, actor: string): Promise<User> {
  const patch = body.user ?? {};
  const mask = userMaskPaths(body.updateMask);
  const fields = (mask.length > 0 ? mask : USER_UPDATE_FIELDS.filter((field) => patch[field] != null)) as Array<
    (typeof USER_UPDATE_FIELDS)[number]
  >;
  for (const field of fields) {
    if (field !== 'email' && (patch[field] === undefined || patch[field] === null))
      throw invalidArgument({ field: `user.${field}`, description: 'is required by the update mask' });
  }
  return db.transaction(async (tx) => {
    const current = await store.findUser(tx, id, true);
    if (!current) throw notFound('user', id);
    const next = { ...current };
    for (const field of fields) next[field] = (patch[field] ?? '') as string;
    if (fields.every((field) => next[field] === current[field])) return toUser(current);
    const user = toUser((await store.updateUser(tx, next))!);
    await recordDirectoryEvent(tx, { type: 'user.updated', actor, user: { ...user } });
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
