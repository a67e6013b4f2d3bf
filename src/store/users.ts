/** The users table (service accounts and humans). Listings are keyset pages by id. */
import { iso, type Queryable } from './db';

export interface UserRow {
  id: string;
  displayName: string;
  email: string;
  type: string;
  status: string;
  createdAt: string;
}

const COLUMNS = `id, display_name AS "displayName", email, type, status, created_at AS "createdAt"`;

type RawRow = Omit<UserRow, 'createdAt'> & { createdAt: unknown };

function toRow(raw: RawRow): UserRow {
  return { ...raw, createdAt: iso(raw.createdAt)! };
}

export async function insertUser(db: Queryable, user: Omit<UserRow, 'createdAt' | 'status'>): Promise<UserRow> {
  const rows = await db.query<RawRow>(
    `INSERT INTO users (id, display_name, email, type) VALUES ($1, $2, $3, $4) RETURNING ${COLUMNS}`,
    [user.id, user.displayName, user.email, user.type],
  );
  return toRow(rows[0]!);
}

/** Sets the user's display name, email and status; answers the row as it is now (undefined: no such user). */
export async function updateUser(
  db: Queryable,
  user: Pick<UserRow, 'id' | 'displayName' | 'email' | 'status'>,
): Promise<UserRow | undefined> {
  const rows = await db.query<RawRow>(
    `UPDATE users SET display_name = $2, email = $3, status = $4 WHERE id = $1 RETURNING ${COLUMNS}`,
    [user.id, user.displayName, user.email, user.status],
  );
  return rows[0] && toRow(rows[0]);
}

export async function findUser(db: Queryable, id: string, forUpdate = false): Promise<UserRow | undefined> {
  const rows = await db.query<RawRow>(`SELECT ${COLUMNS} FROM users WHERE id = $1${forUpdate ? ' FOR UPDATE' : ''}`, [
    id,
  ]);
  return rows[0] && toRow(rows[0]);
}

/** The oldest user whose email is `email`, compared case-insensitively. */
export async function findUserByEmail(db: Queryable, email: string): Promise<UserRow | undefined> {
  const rows = await db.query<RawRow>(
    `SELECT ${COLUMNS} FROM users WHERE lower(email) = lower($1) ORDER BY created_at, id LIMIT 1`,
    [email],
  );
  return rows[0] && toRow(rows[0]);
}

/**
 * Holds, until the transaction ends, the lock of one lower-cased email: two transactions that find
 * or make the user of one email take turns (both stores; PGlite has one connection anyway).
 */
export async function lockEmail(db: Queryable, email: string): Promise<void> {
  await db.query(`SELECT pg_advisory_xact_lock(hashtext('users.email:' || lower($1)))`, [email]);
}

/** Up to `limit` users with ids after `afterId`, by id. */
export async function listUsers(db: Queryable, afterId: string | undefined, limit: number): Promise<UserRow[]> {
  const rows =
    afterId === undefined
      ? await db.query<RawRow>(`SELECT ${COLUMNS} FROM users ORDER BY id LIMIT $1`, [limit])
      : await db.query<RawRow>(`SELECT ${COLUMNS} FROM users WHERE id > $1 ORDER BY id LIMIT $2`, [afterId, limit]);
  return rows.map(toRow);
}
