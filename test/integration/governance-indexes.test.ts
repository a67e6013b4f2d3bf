/**
 * The listing under an app and the alias lookup must stay index scans when app_entitlements is
 * big (1M rows in production): EXPLAIN the exact SQL the store runs, on a table with a few
 * thousand analysed rows, and check the plan.
 */
import { DATABASES, openTestDb } from '../helpers/databases';
import type { Db } from '../../src/store/db';
import { newId } from '../../src/ids';
import { entitlementSearchQuery, type EntitlementSearch } from '../../src/store/entitlements';

const APPS = 20;
const PER_APP = 100;

for (const target of DATABASES) {
  describe(`app_entitlements indexes (${target.name})`, () => {
    let db: Db;
    const appIds: string[] = [];
    const entitlementIds: string[] = [];

    beforeAll(async () => {
      db = await openTestDb(target);
      const rows = { id: [] as string[], app: [] as string[], alias: [] as string[], name: [] as string[], deleted: [] as boolean[] };
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
      expectIndexScan(await plan({ appIds: [appId], afterId: entitlementIds[7 * PER_APP + 50], limit: 26 }), 'app_entitlements_app_live');
    });

    it('looks an alias up with an index scan on (alias, id)', async () => {
      expectIndexScan(await plan({ alias: 'alias-3-5', limit: 26 }), 'app_entitlements_alias_live');
      expectIndexScan(await plan({ alias: 'alias-3-5', afterId: entitlementIds[0], limit: 26 }), 'app_entitlements_alias_live');
    });

    it('returns the right rows from those plans', async () => {
      const appId = appIds[7]!;
      const { text, values } = entitlementSearchQuery({ appIds: [appId], limit: 1000 });
      const live = entitlementIds.slice(7 * PER_APP, 8 * PER_APP).filter((_, e) => e % 10 !== 0);
      expect((await db.query<{ id: string }>(text, values)).map((row) => row.id)).toEqual(live);
      const alias = entitlementSearchQuery({ alias: 'alias-3-5', limit: 26 });
      expect((await db.query<{ id: string }>(alias.text, alias.values)).map((row) => row.id)).toEqual([entitlementIds[3 * PER_APP + 5]]);
    });

    it('finds by substring exactly the rows where one column holds it, never across two columns', async () => {
      const appId = appIds[2]!;
      const ids = entitlementIds.slice(2 * PER_APP + 1, 2 * PER_APP + 3); // live ones (every tenth is deleted)
      await db.query(`UPDATE app_entitlements SET slug = 'crm-admin', description = 'Full CRM access' WHERE id = $1`, [ids[0]]);
      await db.query(`UPDATE app_entitlements SET slug = 'admin', description = E'odd\\x1fdescription' WHERE id = $1`, [ids[1]]);
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

    if (target.url) {
      it('serves a substring query from the one trigram index over the three columns (PostgreSQL with pg_trgm)', async () => {
        const trgm = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_extension WHERE extname = 'pg_trgm'`);
        expect(trgm[0]!.n).toBe(1);
        // The planner picks the trigram index once the table is big enough for it to matter: add
        // 50,000 rows to another app, ANALYZE, EXPLAIN, and roll all of it back.
        let text = '';
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
            const { text: sql, values } = entitlementSearchQuery({ query: 'ment-4242', limit: 26 });
            text = (await tx.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${sql}`, values)).map((row) => row['QUERY PLAN']).join('\n');
            throw new Error('roll back');
          })
          .catch((err: unknown) => {
            if ((err as Error).message !== 'roll back') throw err;
          });
        await db.exec('ANALYZE app_entitlements');
        expect([text]).toEqual([expect.stringMatching(/Bitmap Index Scan on app_entitlements_search_trgm/)]);
      });
    }
  });
}
