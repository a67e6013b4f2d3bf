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
  });
}
