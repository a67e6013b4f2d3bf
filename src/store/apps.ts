/** The apps table. Listings are keyset pages by id (the primary key). */
import { iso, type Queryable } from './db';

export interface AppRow {
  id: string;
  displayName: string;
  description: string;
  createdAt: string;
  updatedAt: string;
}

const COLUMNS = `id, display_name AS "displayName", description, created_at AS "createdAt", updated_at AS "updatedAt"`;

type RawRow = Omit<AppRow, 'createdAt' | 'updatedAt'> & { createdAt: unknown; updatedAt: unknown };

function toRow(raw: RawRow): AppRow {
  return { ...raw, createdAt: iso(raw.createdAt)!, updatedAt: iso(raw.updatedAt)! };
}

export async function insertApp(
  db: Queryable,
  app: { id: string; displayName: string; description: string },
): Promise<AppRow> {
  const rows = await db.query<RawRow>(
    `INSERT INTO apps (id, display_name, description) VALUES ($1, $2, $3) RETURNING ${COLUMNS}`,
    [app.id, app.displayName, app.description],
  );
  return toRow(rows[0]!);
}

export async function findApp(db: Queryable, id: string): Promise<AppRow | undefined> {
  const rows = await db.query<RawRow>(`SELECT ${COLUMNS} FROM apps WHERE id = $1`, [id]);
  return rows[0] && toRow(rows[0]);
}

/** Up to `limit` apps with ids after `afterId`, by id. */
export async function listApps(db: Queryable, afterId: string | undefined, limit: number): Promise<AppRow[]> {
  const rows =
    afterId === undefined
      ? await db.query<RawRow>(`SELECT ${COLUMNS} FROM apps ORDER BY id LIMIT $1`, [limit])
      : await db.query<RawRow>(`SELECT ${COLUMNS} FROM apps WHERE id > $1 ORDER BY id LIMIT $2`, [afterId, limit]);
  return rows.map(toRow);
}
