/**
 * The listing under an app and the alias lookup must stay index scans when app_entitlements is
 * big (1M rows in production): EXPLAIN the exact SQL the store runs, on a table with a few
 * thousand analysed rows, and check the plan.
 */
import { DATABASES, openTestDb, describeOn } from '../helpers/databases';
import type { Db } from '../../src/store/db';
import { newId } from '../../src/ids';
import { entitlementSearchQuery, searchEntitlements, type EntitlementSearch } from '../../src/store/entitlements';
import {
  loadTrigramStats,
  searchPieces,
  SEARCH_STATS_NAME,
  wildcardTrigrams,
  type TrigramStats,
} from '../../src/store/search-trigrams';
import { MIGRATIONS, migrate } from '../../src/store/migrations';

const APPS = 20;
const PER_APP = 100;

for (const target of DATABASES) {
  describeOn(target)(`app_entitlements indexes (${target.label})`, () => {
    let db: Db;
    const appIds: string[] = [];
    const entitlementIds: string[] = [];

    beforeAll(async () => {
      db = await openTestDb(target);
      const rows = {
        id: [] as string[],
        app: [] as string[],
        alias: [] as string[],
        name: [] as string[],
        deleted: [] as boolean[],
      };
      for (let a = 0; a < APPS; a += 1) {
        const appId = newId();
        appIds.push(appId);
        await db.query('INSERT INTO apps (id, display_name) VALUES ($1, $2)', [appId, `app ${a}`]);
        for (let e = 0; e < PER_APP; e += 1) {
          const id = newId();
          entitlementIds.push(id);
          rows.id.push(id);
          rows.app.push(appId);
          rows.alias.push(e % 4 === 0 ? '' : `alias-${a}-${e}`);
          rows.name.push(`Entitlement ${a}/${e}`);
          rows.deleted.push(e % 10 === 0);
        }
      }
      await db.query(
        `INSERT INTO app_entitlements (id, app_id, alias, display_name, record, deleted_at)
         SELECT id, app, alias, name, '{}'::jsonb, CASE WHEN deleted THEN now() END
         FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::boolean[]) AS t(id, app, alias, name, deleted)`,
        [rows.id, rows.app, rows.alias, rows.name, rows.deleted],
      );
      await db.exec('ANALYZE app_entitlements');
    });
    afterAll(async () => db.close());

    async function plan(search: EntitlementSearch): Promise<string> {
      const { text, values } = entitlementSearchQuery(search);
      const rows = await db.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${text}`, values);
      return rows.map((row) => row['QUERY PLAN']).join('\n');
    }

    function expectIndexScan(text: string, index: string): void {
      expect(text).toMatch(new RegExp(`Index (Only )?Scan using ${index} on app_entitlements`));
      expect(text).not.toMatch(/Seq Scan/);
      expect(text).not.toMatch(/Sort/);
    }

    it('pages an app listing with an index scan on (app_id, id), first page and later pages', async () => {
      const appId = appIds[7]!;
      expectIndexScan(await plan({ appIds: [appId], limit: 26 }), 'app_entitlements_app_live');
      expectIndexScan(
        await plan({ appIds: [appId], afterId: entitlementIds[7 * PER_APP + 50], limit: 26 }),
        'app_entitlements_app_live',
      );
    });

    it('looks an alias up with an index scan on (alias, id)', async () => {
      expectIndexScan(await plan({ alias: 'alias-3-5', limit: 26 }), 'app_entitlements_alias_live');
      expectIndexScan(
        await plan({ alias: 'alias-3-5', afterId: entitlementIds[0], limit: 26 }),
        'app_entitlements_alias_live',
      );
    });

    it('returns the right rows from those plans', async () => {
      const appId = appIds[7]!;
      const { text, values } = entitlementSearchQuery({ appIds: [appId], limit: 1000 });
      const live = entitlementIds.slice(7 * PER_APP, 8 * PER_APP).filter((_, e) => e % 10 !== 0);
      expect((await db.query<{ id: string }>(text, values)).map((row) => row.id)).toEqual(live);
      const alias = entitlementSearchQuery({ alias: 'alias-3-5', limit: 26 });
      expect((await db.query<{ id: string }>(alias.text, alias.values)).map((row) => row.id)).toEqual([
        entitlementIds[3 * PER_APP + 5],
      ]);
    });

    it('finds by substring exactly the rows where one column holds it, never across two columns', async () => {
      const appId = appIds[2]!;
      const ids = entitlementIds.slice(2 * PER_APP + 1, 2 * PER_APP + 3); // live ones (every tenth is deleted)
      await db.query(`UPDATE app_entitlements SET slug = 'crm-admin', description = 'Full CRM access' WHERE id = $1`, [
        ids[0],
      ]);
      await db.query(`UPDATE app_entitlements SET slug = 'admin', description = E'odd\\x1fdescription' WHERE id = $1`, [
        ids[1],
      ]);
      const found = async (query: string): Promise<string[]> => {
        const { text, values } = entitlementSearchQuery({ appIds: [appId], query, limit: 1000 });
        return (await db.query<{ id: string }>(text, values)).map((row) => row.id);
      };
      expect(await found('CRM-ADM')).toEqual([ids[0]]);
      expect(await found('crm acc')).toEqual([ids[0]]);
      expect(await found('admin')).toEqual([ids[0], ids[1]]);
      // The end of the display name and the start of the slug are not one text.
      expect(await found('2/1crm')).toEqual([]);
      expect(await found('2/1\u001fcrm')).toEqual([]);
      // A query holding the separator still finds a column that holds it.
      expect(await found('odd\u001fdesc')).toEqual([ids[1]]);
    });

    it('finds the same rows when the index is asked for pieces of the query (trigram statistics)', async () => {
      const appId = appIds[4]!;
      const ids = entitlementIds.slice(4 * PER_APP + 1, 4 * PER_APP + 4);
      await db.query(`UPDATE app_entitlements SET slug = 'crm-admin', description = 'Full CRM access' WHERE id = $1`, [
        ids[0],
      ]);
      await db.query(
        `UPDATE app_entitlements SET slug = 'entitlement-4242', description = 'ment-4242 twice' WHERE id = $1`,
        [ids[1]],
      );
      await db.query(
        `UPDATE app_entitlements SET display_name = 'Entitlement 4/4242', description = E'x\x1fment-4242' WHERE id = $1`,
        [ids[2]],
      );
      // As if ANALYZE had found "Entitlement" in every row, and the digits rare.
      const common = new Set(wildcardTrigrams('xx Entitlement entitlement- ment- crm- ').map((t) => t.trigram));
      const stats: TrigramStats = { frequency: new Map([...common].map((t) => [t, 1])), unlisted: 0.001 };
      const live = await db.query<{ id: string; display_name: string; slug: string; description: string }>(
        'SELECT id, display_name, slug, description FROM app_entitlements WHERE app_id = $1 AND deleted_at IS NULL ORDER BY id',
        [appId],
      );
      const queries = [
        'ment-4242',
        'Entitlement 4/4',
        'ENTITLEMENT 4/42',
        'ment 4/1',
        'ment 4/1crm',
        'nt-4242 tw',
        'crm-adm',
        'crm-access',
        'ment-4242\u001fx',
        'lement 4/9',
      ];
      let piecesUsed = 0;
      for (const query of queries) {
        const expected = live
          .filter((row) =>
            [row.display_name, row.slug, row.description].some((column) =>
              column.toLowerCase().includes(query.toLowerCase()),
            ),
          )
          .map((row) => row.id);
        const run = async (withStats: TrigramStats | undefined): Promise<string[]> => {
          const { text, values } = entitlementSearchQuery({ appIds: [appId], query, limit: 1000 }, withStats);
          return (await db.query<{ id: string }>(text, values)).map((row) => row.id);
        };
        if (searchPieces(query, stats)[0] !== query) piecesUsed += 1;
        expect({ query, rows: await run(stats) }).toEqual({ query, rows: expected });
        expect({ query, rows: await run(undefined) }).toEqual({ query, rows: expected });
      }
      expect(piecesUsed).toBeGreaterThanOrEqual(6);
      // The three kinds of match are there: a display name, a slug and a description.
      const { text, values } = entitlementSearchQuery({ appIds: [appId], query: 'ment-4242', limit: 1000 }, stats);
      expect((await db.query<{ id: string }>(text, values)).map((row) => row.id)).toEqual(ids.slice(1, 3));
      // Through the store call, with whatever statistics the store has.
      expect(
        (await searchEntitlements(db, { appIds: [appId], query: 'ment-4242', limit: 1000 })).map((row) => row.id),
      ).toEqual(ids.slice(1, 3));
    });

    // pg_trgm on both stores: PostgreSQL's contrib, and PGlite's contrib extension, loaded when the embedded store opens.
    it(`serves a substring query from the one trigram index, asked only for its rare trigrams (${target.name} with pg_trgm)`, async () => {
      const trgm = await db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_extension WHERE extname = 'pg_trgm'`,
      );
      expect(trgm[0]!.n).toBe(1);
      // The planner picks the trigram index once the table is big enough for it to matter: add
      // 50,000 rows to another app, ANALYZE, EXPLAIN, and roll all of it back.
      const seen: {
        stats?: TrigramStats;
        pieces?: string[];
        plain?: string;
        withStats?: string;
        rows?: string[];
        rowsWithStats?: string[];
      } = {};
      await db
        .transaction(async (tx) => {
          const appId = newId();
          await tx.query('INSERT INTO apps (id, display_name) VALUES ($1, $2)', [appId, 'big app']);
          await tx.query(
            `INSERT INTO app_entitlements (id, app_id, alias, display_name, slug, description, record)
             SELECT gen_random_uuid()::text, $1, '', 'Entitlement ' || g, 'entitlement-' || g, 'Seeded', '{}'::jsonb FROM generate_series(1, 50000) AS g`,
            [appId],
          );
          await tx.query('ANALYZE app_entitlements');
          seen.stats = await loadTrigramStats(tx);
          seen.pieces = searchPieces('ment-4242', seen.stats);
          const explain = async (stats: TrigramStats | undefined): Promise<string> => {
            const { text: sql, values } = entitlementSearchQuery({ query: 'ment-4242', limit: 26 }, stats);
            return (await tx.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${sql}`, values))
              .map((row) => row['QUERY PLAN'])
              .join('\n');
          };
          // Which pattern goes to the trigram index is what is checked here, not whether the
          // planner prefers the index to walking the ids in order: at 50,000 rows that choice
          // is close and turns on the size of the GIN pending list (the 50,000 inserts), so
          // it varied from run to run. Both other paths are taken off the table for the EXPLAINs.
          await tx.query('SET LOCAL enable_indexscan = off');
          await tx.query('SET LOCAL enable_seqscan = off');
          seen.plain = await explain(undefined);
          seen.withStats = await explain(seen.stats);
          await tx.query('SET LOCAL enable_indexscan = on');
          await tx.query('SET LOCAL enable_seqscan = on');
          const ids = async (stats: TrigramStats | undefined): Promise<string[]> => {
            const { text: sql, values } = entitlementSearchQuery(
              { appIds: [appId], query: 'ment-4242', limit: 1000 },
              stats,
            );
            return (await tx.query<{ id: string }>(sql, values)).map((row) => row.id);
          };
          seen.rows = await ids(undefined);
          seen.rowsWithStats = await ids(seen.stats);
          throw new Error('roll back');
        })
        .catch((err: unknown) => {
          if ((err as Error).message !== 'roll back') throw err;
        });
      await db.exec('ANALYZE app_entitlements');
      // ANALYZE found the trigrams of "Entitlement" in every row and those of the digits rare.
      expect(seen.stats?.frequency.get('men')).toBeGreaterThan(0.99);
      expect(seen.stats?.frequency.get('424') ?? seen.stats?.unlisted).toBeLessThan(0.01);
      expect(seen.pieces).toEqual(['-4242']);
      const index = /Bitmap Index Scan on app_entitlements_search_trgm .*\n\s+Index Cond: (.*)$/m;
      // Without statistics the index is asked for every trigram of the query…
      expect(index.exec(seen.plain!)?.[1]).toMatch(/~~\* '%ment-4242%'/);
      // …with them, only for "-4242"; the query itself is checked on the candidates.
      expect(index.exec(seen.withStats!)?.[1]).toMatch(/^\(\(\(\(\(display_name .* ~~\* '%-4242%'::text\)$/);
      expect(seen.withStats).not.toMatch(/Seq Scan/);
      expect(seen.withStats).toMatch(/Filter: .*CASE WHEN .* ~~\* '%ment-4242%'/);
      // The same 11 rows (entitlement-4242, entitlement-42420 … 42429) either way.
      expect(seen.rows).toHaveLength(11);
      expect(seen.rowsWithStats).toEqual(seen.rows);
    });

    it('extracts the trigrams pg_trgm extracts', async () => {
      // show_trgm pads every word on both sides, as wildcardTrigrams does for a word between
      // two non-word characters.
      const schema = await db.query<{ s: string }>(
        `SELECT n.nspname AS s FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'pg_trgm'`,
      );
      for (const text of [
        'ment-4242',
        'Entitlement 12 of 3',
        'CRM_admin.x',
        'a-b--cd',
        'Zebra42 x9y',
        '%_\\%done',
        'UPPER lower',
      ]) {
        const rows = await db.query<{ t: string[] }>(`SELECT "${schema[0]!.s}".show_trgm($1) AS t`, [text]);
        expect({ text, trigrams: new Set(wildcardTrigrams(` ${text} `).map((t) => t.trigram)) }).toEqual({
          text,
          trigrams: new Set(rows[0]!.t),
        });
      }
    });

    it('gives a store migrated without pg_trgm the search index and statistics once the extension is there (its own migration)', async () => {
      // A store migrated before pg_trgm was loaded (a PGlite data directory of an earlier version):
      // no search index, no statistics, and every migration recorded but the one that repairs that.
      const repair = MIGRATIONS.findIndex((sql) => sql.includes("to_regclass('app_entitlements_search_trgm')")) + 1;
      expect(repair).toBeGreaterThan(0);
      await db.exec(`DROP STATISTICS IF EXISTS ${SEARCH_STATS_NAME}; DROP INDEX app_entitlements_search_trgm`);
      await db.query('DELETE FROM schema_migrations WHERE version = $1', [repair]);
      const objects = async (): Promise<string[]> =>
        (
          await db.query<{ name: string }>(
            `SELECT indexname AS name FROM pg_indexes WHERE schemaname = current_schema() AND indexname = 'app_entitlements_search_trgm'
             UNION ALL SELECT stxname FROM pg_statistic_ext WHERE stxname = $1 AND stxnamespace = current_schema()::regnamespace`,
            [SEARCH_STATS_NAME],
          )
        ).map((row) => row.name);
      expect(await objects()).toEqual([]);
      await migrate(db);
      expect((await objects()).sort()).toEqual(['app_entitlements_search_trgm', SEARCH_STATS_NAME]);
      // …and the statistics are there at once (the migration analysed the table).
      expect((await loadTrigramStats(db))?.frequency.size).toBeGreaterThan(0);
    });
  });
}
