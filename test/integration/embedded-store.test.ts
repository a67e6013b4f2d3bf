/**
 * The embedded store as `npm start` (and the benchmark's soak) opens it: created once by a child
 * process, migrated, and reopened with its data on the next start, with pg_trgm each time.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openEmbeddedStore } from '../../src/store/embedded';
import { entitlementSearchQuery } from '../../src/store/entitlements';

describe('openEmbeddedStore', () => {
  let dir: string;
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'embedded-store-'));
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('creates a missing store once, migrated, and reopens the same data afterwards', async () => {
    const storeDir = path.join(dir, 'store');
    const created: string[] = [];
    const first = await openEmbeddedStore(storeDir, () => created.push('first'));
    try {
      expect(created).toEqual(['first']);
      expect(fs.existsSync(path.join(storeDir, 'PG_VERSION'))).toBe(true);
      const [migrations] = await first.query<{ count: string | number }>(
        'SELECT count(*) AS count FROM schema_migrations',
      );
      expect(Number(migrations!.count)).toBeGreaterThan(0);
      await first.exec("CREATE TABLE kept (v text); INSERT INTO kept VALUES ('still here')");
    } finally {
      await first.close();
    }

    const second = await openEmbeddedStore(storeDir, () => created.push('second'));
    try {
      expect(created).toEqual(['first']);
      expect(await second.query<{ v: string }>('SELECT v FROM kept')).toEqual([{ v: 'still here' }]);
      // pg_trgm is loaded on every open: the search index is there and takes new rows (an insert
      // fails when the index's extension is not loaded); which plans use it: governance-indexes.test.ts.
      expect(await second.query(`SELECT extname FROM pg_extension WHERE extname = 'pg_trgm'`)).toEqual([
        { extname: 'pg_trgm' },
      ]);
      expect(
        await second.query(`SELECT indexname FROM pg_indexes WHERE indexname = 'app_entitlements_search_trgm'`),
      ).toEqual([{ indexname: 'app_entitlements_search_trgm' }]);
      await second.query(`INSERT INTO apps (id, display_name) VALUES ('app-1', 'app')`);
      await second.query(
        `INSERT INTO app_entitlements (id, app_id, alias, display_name, record) VALUES ('ent-1', 'app-1', '', 'Entitlement 4242', '{}'::jsonb)`,
      );
      const { text, values } = entitlementSearchQuery({ query: 'ment 4242', limit: 26 });
      expect((await second.query<{ id: string }>(text, values)).map((row) => row.id)).toEqual(['ent-1']);
    } finally {
      await second.close();
    }
  });

  it('says why when the store cannot be created', async () => {
    const blocked = path.join(dir, 'not-a-directory');
    fs.writeFileSync(blocked, 'a file where the data directory should go');
    await expect(openEmbeddedStore(path.join(blocked, 'store'))).rejects.toThrow(/creating the embedded store failed/);
  });
});
