/**
 * The console_sessions table: one row per signed-in person, keyed by the hash of the cookie's id
 * (the id itself is never stored). What a session is and how long it lives is src/auth/sessions.ts.
 */
import { iso, type Queryable } from './db';

export interface SessionPerson {
  id: string;
  name: string;
  email: string;
}

export interface SessionRecord {
  idHash: string;
  csrfToken: string;
  /** `client:<clientId>` or `person:<issuer>#<subject>`. */
  actor: string;
  person: SessionPerson;
  /** As stored (a JSON array of role names). */
  roles: unknown;
  createdAt: string;
  lastSeenAt: string;
  expiresAt: string;
}

interface SessionRow {
  id_hash: string;
  csrf_token: string;
  actor: string;
  person: SessionPerson;
  roles: unknown;
  created_at: Date;
  last_seen_at: Date;
  expires_at: Date;
}

function toRecord(row: SessionRow): SessionRecord {
  return {
    idHash: row.id_hash,
    csrfToken: row.csrf_token,
    actor: row.actor,
    person: row.person,
    roles: row.roles,
    createdAt: iso(row.created_at) ?? '',
    lastSeenAt: iso(row.last_seen_at) ?? '',
    expiresAt: iso(row.expires_at) ?? '',
  };
}

export async function insertSession(
  db: Queryable,
  input: {
    idHash: string;
    csrfToken: string;
    actor: string;
    person: SessionPerson;
    roles: string[];
    now: Date;
    expiresAt: Date;
  },
): Promise<void> {
  await db.query(
    `INSERT INTO console_sessions (id_hash, csrf_token, actor, person, roles, created_at, last_seen_at, expires_at)
     VALUES ($1, $2, $3, $4::jsonb, $5::jsonb, $6, $6, $7)`,
    [
      input.idHash,
      input.csrfToken,
      input.actor,
      JSON.stringify(input.person),
      JSON.stringify(input.roles),
      input.now,
      input.expiresAt,
    ],
  );
}

export async function sessionByHash(db: Queryable, idHash: string): Promise<SessionRecord | undefined> {
  const rows = await db.query<SessionRow>('SELECT * FROM console_sessions WHERE id_hash = $1', [idHash]);
  return rows[0] ? toRecord(rows[0]) : undefined;
}

/** Writes the last-seen time and the idle expiry of a session still present. */
export async function touchSession(db: Queryable, idHash: string, now: Date, expiresAt: Date): Promise<void> {
  await db.query('UPDATE console_sessions SET last_seen_at = $2, expires_at = $3 WHERE id_hash = $1', [
    idHash,
    now,
    expiresAt,
  ]);
}

export async function deleteSession(db: Queryable, idHash: string): Promise<void> {
  await db.query('DELETE FROM console_sessions WHERE id_hash = $1', [idHash]);
}

/** Deletes every session expired at `now`; answers how many. */
export async function purgeExpiredSessions(db: Queryable, now: Date): Promise<number> {
  const rows = await db.query('DELETE FROM console_sessions WHERE expires_at <= $1 RETURNING 1', [now]);
  return rows.length;
}

/** Ends every session of an actor (a deleted API client's). */
export async function deleteSessionsOf(db: Queryable, actor: string): Promise<void> {
  await db.query('DELETE FROM console_sessions WHERE actor = $1', [actor]);
}

/** An OIDC sign-in under way: what the callback checks, kept until it is used once or expires. */
export interface PendingLogin {
  browserHash: string;
  nonce: string;
  codeVerifier: string;
  returnTo: string;
}

/**
 * Keeps a sign-in under way, and at most `cap` of them: beyond it the ones started longest ago are
 * dropped (a flood of starts pushes out its own rows first; a person's sign-in survives as long as
 * the flood takes to start `cap` more). Expired ones are purged by `purgeExpiredLogins`.
 */
export async function insertPendingLogin(
  db: Queryable,
  stateHash: string,
  login: PendingLogin,
  expiresAt: Date,
  cap: number,
): Promise<void> {
  await db.query(
    'INSERT INTO console_logins (state_hash, browser_hash, nonce, code_verifier, return_to, expires_at) VALUES ($1, $2, $3, $4, $5, $6)',
    [stateHash, login.browserHash, login.nonce, login.codeVerifier, login.returnTo, expiresAt],
  );
  await db.query(
    `DELETE FROM console_logins WHERE state_hash IN (
       SELECT state_hash FROM console_logins ORDER BY expires_at DESC, state_hash OFFSET $1
     )`,
    [cap],
  );
}

/**
 * Takes (reads and deletes, so that a state serves once) the sign-in of `stateHash` still under way
 * at `now`, if it was started in the browser of `browserHash`. A sign-in under way in another
 * browser is left as it is (a callback without the right cookie does not burn it): answered as
 * `'other browser'`.
 */
export async function takePendingLogin(
  db: Queryable,
  stateHash: string,
  browserHash: string,
  now: Date,
): Promise<PendingLogin | 'other browser' | undefined> {
  const rows = await db.query<{
    browser_hash: string;
    nonce: string;
    code_verifier: string;
    return_to: string;
    expires_at: Date;
  }>('DELETE FROM console_logins WHERE state_hash = $1 AND browser_hash = $2 RETURNING *', [stateHash, browserHash]);
  const row = rows[0];
  if (!row) {
    const elsewhere = await db.query('SELECT 1 FROM console_logins WHERE state_hash = $1 AND expires_at > $2', [
      stateHash,
      now,
    ]);
    return elsewhere.length > 0 ? 'other browser' : undefined;
  }
  if (new Date(row.expires_at).getTime() <= now.getTime()) return undefined;
  return { browserHash: row.browser_hash, nonce: row.nonce, codeVerifier: row.code_verifier, returnTo: row.return_to };
}

export async function purgeExpiredLogins(db: Queryable, now: Date): Promise<void> {
  await db.query('DELETE FROM console_logins WHERE expires_at <= $1', [now]);
}
