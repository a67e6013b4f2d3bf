/**
 * The app_entitlements table: searchable fields in columns, everything else in `record` (jsonb).
 * Soft delete: `deleted_at` set, and every read here skips deleted rows. Listings are keyset
 * pages by id, served by the partial indexes of migration 2 (`app_entitlements_app_live`,
 * `app_entitlements_alias_live`, `app_entitlements_live`).
 */
import { iso, type Queryable } from './db';
import { openGrantCount } from './grants';
import { searchPieces, trigramStats, type TrigramStats } from './search-trigrams';

export interface EntitlementColumns {
  alias: string;
  displayName: string;
  description: string;
  slug: string;
  /** Every other field of the record, read-only ones included. */
  record: Record<string, unknown>;
}

export interface EntitlementRow extends EntitlementColumns {
  id: string;
  appId: string;
  createdAt: string;
  updatedAt: string;
  deletedAt: string | null;
  /** Its GRANTED and DEPROVISIONING grants, counted by the statement that read the row. */
  grantCount: string;
}

export interface EntitlementSearch {
  /** One id: the listing of an app; several: any of them. */
  appIds?: readonly string[];
  /** Exact alias ("" = no filter). */
  alias?: string;
  /** Case-insensitive substring of display name, slug or description ("" = no filter). */
  query?: string;
  /** Keyset cursor: only ids after this one. */
  afterId?: string | undefined;
  limit: number;
}

/** The select list of an EntitlementRow; `t` qualifies the columns in a join. */
export function entitlementColumns(t = ''): string {
  const c = t ? `${t}.` : '';
  return `${c}id, ${c}app_id AS "appId", ${c}alias, ${c}display_name AS "displayName", ${c}description, ${c}slug,
  ${c}record, ${c}created_at AS "createdAt", ${c}updated_at AS "updatedAt", ${c}deleted_at AS "deletedAt",
  ${openGrantCount(t || 'app_entitlements')} AS "grantCount"`;
}

const COLUMNS = entitlementColumns();

export interface RawEntitlementRow extends Omit<
  EntitlementRow,
  'createdAt' | 'updatedAt' | 'deletedAt' | 'record' | 'grantCount'
> {
  record: unknown;
  grantCount?: unknown;
  createdAt: unknown;
  updatedAt: unknown;
  deletedAt: unknown;
}

export function toEntitlementRow(raw: RawEntitlementRow): EntitlementRow {
  const record = typeof raw.record === 'string' ? (JSON.parse(raw.record) as unknown) : raw.record;
  return {
    ...raw,
    record: (record ?? {}) as Record<string, unknown>,
    grantCount: raw.grantCount === undefined || raw.grantCount === null ? '0' : String(raw.grantCount),
    createdAt: iso(raw.createdAt)!,
    updatedAt: iso(raw.updatedAt)!,
    deletedAt: iso(raw.deletedAt),
  };
}

export async function insertEntitlement(
  db: Queryable,
  id: string,
  appId: string,
  columns: EntitlementColumns,
): Promise<EntitlementRow> {
  const rows = await db.query<RawEntitlementRow>(
    `INSERT INTO app_entitlements (id, app_id, alias, display_name, description, slug, record)
     VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb) RETURNING ${COLUMNS}`,
    [id, appId, columns.alias, columns.displayName, columns.description, columns.slug, JSON.stringify(columns.record)],
  );
  return toEntitlementRow(rows[0]!);
}

/**
 * The live (not deleted) entitlement `id` of app `appId`; `forUpdate` locks it in a transaction,
 * `forShare` keeps it from being deleted until the transaction ends (a grant asked for it).
 */
export async function findLiveEntitlement(
  db: Queryable,
  appId: string,
  id: string,
  options: { forUpdate?: boolean; forShare?: boolean } = {},
): Promise<EntitlementRow | undefined> {
  const lock = options.forUpdate ? ' FOR UPDATE' : options.forShare ? ' FOR SHARE' : '';
  const rows = await db.query<RawEntitlementRow>(
    `SELECT ${COLUMNS} FROM app_entitlements WHERE id = $1 AND app_id = $2 AND deleted_at IS NULL${lock}`,
    [id, appId],
  );
  return rows[0] && toEntitlementRow(rows[0]);
}

export async function updateEntitlement(
  db: Queryable,
  appId: string,
  id: string,
  columns: EntitlementColumns,
): Promise<EntitlementRow | undefined> {
  const rows = await db.query<RawEntitlementRow>(
    `UPDATE app_entitlements SET alias = $3, display_name = $4, description = $5, slug = $6, record = $7::jsonb, updated_at = now()
     WHERE id = $1 AND app_id = $2 AND deleted_at IS NULL RETURNING ${COLUMNS}`,
    [id, appId, columns.alias, columns.displayName, columns.description, columns.slug, JSON.stringify(columns.record)],
  );
  return rows[0] && toEntitlementRow(rows[0]);
}

/** Sets `deleted_at`; false when there was no live entitlement to delete. */
export async function softDeleteEntitlement(db: Queryable, appId: string, id: string): Promise<boolean> {
  const rows = await db.query(
    `UPDATE app_entitlements SET deleted_at = now(), updated_at = now()
     WHERE id = $1 AND app_id = $2 AND deleted_at IS NULL RETURNING id`,
    [id, appId],
  );
  return rows.length > 0;
}

/** Joins the searched columns in SEARCH_TEXT; the same expression as the trigram index (migration 11). */
const SEARCH_SEPARATOR = '\u001f';
const SEARCH_TEXT = "display_name || E'\\x1f' || slug || E'\\x1f' || description";

/** `%`, `_` and `\` are literal in a substring search. */
function likePattern(text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/**
 * The SQL of one keyset page of live entitlements, exported so that tests can EXPLAIN exactly
 * what runs. One app id compares with `=` so the (app_id, id) index also gives the order.
 * `stats` (the trigram frequencies ANALYZE keeps, see search-trigrams.ts) decides which parts of
 * a `query` the trigram index is asked for; the rows are the same with or without them.
 */
export function entitlementSearchQuery(
  search: EntitlementSearch,
  stats?: TrigramStats,
): { text: string; values: unknown[] } {
  const values: unknown[] = [];
  const param = (value: unknown): string => {
    values.push(value);
    return `$${values.length}`;
  };
  const where = ['deleted_at IS NULL'];
  const appIds = search.appIds ?? [];
  if (appIds.length === 1) where.push(`app_id = ${param(appIds[0])}`);
  else if (appIds.length > 1) where.push(`app_id = ANY(${param(appIds)}::text[])`);
  if (search.alias) where.push(`alias = ${param(search.alias)}`, `alias <> ''`);
  if (search.query) {
    const pattern = param(likePattern(search.query));
    if (search.query.includes(SEARCH_SEPARATOR)) {
      where.push(`(display_name ILIKE ${pattern} OR slug ILIKE ${pattern} OR description ILIKE ${pattern})`);
    } else {
      // The three columns joined by U+001F (the expression of the search trigram index): a query
      // without that character matches the joined text exactly when it matches one of the columns.
      const pieces = searchPieces(search.query, stats);
      if (pieces.length === 1 && pieces[0] === search.query) {
        where.push(`(${SEARCH_TEXT}) ILIKE ${pattern}`);
      } else {
        // The index is asked for the pieces of the query made of its rarer trigrams (each piece
        // is in every text that holds the query), and the query itself decides. That check is a
        // CASE so that the planner does not count it as a second selective condition (it
        // estimates a CASE at 1/2): the pieces already match about as many rows as the query, and
        // the estimate chooses between this bitmap scan and walking the ids in order.
        for (const piece of pieces) where.push(`(${SEARCH_TEXT}) ILIKE ${param(likePattern(piece))}`);
        where.push(`CASE WHEN (${SEARCH_TEXT}) ILIKE ${pattern} THEN true ELSE false END`);
      }
    }
  }
  if (search.afterId !== undefined) where.push(`id > ${param(search.afterId)}`);
  const text = `SELECT ${COLUMNS} FROM app_entitlements WHERE ${where.join(' AND ')} ORDER BY id LIMIT ${param(search.limit)}`;
  return { text, values };
}

export async function searchEntitlements(db: Queryable, search: EntitlementSearch): Promise<EntitlementRow[]> {
  const { text, values } = entitlementSearchQuery(search, search.query ? await trigramStats(db) : undefined);
  const rows = await db.query<RawEntitlementRow>(text, values);
  return rows.map(toEntitlementRow);
}

/** The entitlement `id`, deleted or not (a grant's record of what it was a grant of). */
export async function findEntitlementById(db: Queryable, id: string): Promise<EntitlementRow | undefined> {
  const rows = await db.query<RawEntitlementRow>(`SELECT ${COLUMNS} FROM app_entitlements WHERE id = $1`, [id]);
  return rows[0] && toEntitlementRow(rows[0]);
}
