/**
 * The receiver's listener cache: one store read per listener, dropped at once in the writing
 * process, and across processes through PostgreSQL LISTEN/NOTIFY. The cross-process part runs a
 * second real process (test/fixtures/listener-cache-process.ts) on the same schema and prints
 * the staleness it measured (docs/performance.md#what-keeps-each-figure-low states the bound; no timing is
 * asserted here).
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import readline from 'node:readline';
import { DATABASES, openTestDb, describeOn } from '../helpers/databases';
import { openDb, type Db } from '../../src/store/db';
import { insertAutomation, setPublished } from '../../src/store/automations';
import { recordPublishedVersion } from '../../src/store/automation-versions';
import { SecretBox, sealContext } from '../../src/crypto/secret-box';
import { ListenerCache, MAX_STALENESS_MS } from '../../src/delivery/listener-cache';
import { listenerChanged } from '../../src/domain/listener-changes';
import { until } from '../helpers/wait';

const REPO_ROOT = path.resolve(__dirname, '../..');
const key = randomBytes(32);
const box = new SecretBox(key);

async function createListener(db: Db, secret: string): Promise<{ id: string; listenerId: string }> {
  const id = `aut_${randomBytes(6).toString('hex')}`;
  const listenerId = randomBytes(12).toString('base64url');
  await insertAutomation(db, {
    id,
    displayName: 'cache test',
    description: '',
    trigger: { authMethod: 'HMAC', jwksUrl: '', allowedCidrs: [], enabled: true },
    listenerId,
    steps: [],
    sealedSigningSecret: box.seal(secret, sealContext('automation_signing_secret', id)),
  });
  const record = await setPublished(db, id, true);
  await recordPublishedVersion(db, id, record!.version, { displayName: 'cache test', steps: [] });
  return { id, listenerId };
}

function counting(db: Db): { db: Db; reads(): number } {
  let reads = 0;
  const counted = Object.assign(Object.create(db) as Db, {
    query: (sql: string, params?: unknown[]) => {
      reads++;
      return db.query(sql, params);
    },
  });
  return { db: counted, reads: () => reads };
}

for (const target of DATABASES) {
  describeOn(target)(`listener cache (${target.label})`, () => {
    let db: Db;
    beforeAll(async () => {
      db = await openTestDb(target);
    });
    afterAll(async () => {
      await db.close();
    });

    it('reads the store once per listener, unseals once, and drops the entry when this process changes it', async () => {
      const { id, listenerId } = await createListener(db, 'first-secret');
      const { db: counted, reads } = counting(db);
      // The cache's clock stands still: no entry ever expires by age in this test, so only an
      // invalidation (this process's own, or the trigger's NOTIFY) can make it read again.
      let clock = 0;
      const cache = new ListenerCache(counted, box, () => clock);
      await cache.ready();
      try {
        const first = await cache.lookup(listenerId);
        expect(first?.hmacSecret).toBe('first-secret');
        expect(first?.published?.version).toBe(first?.automation.version);
        const before = reads();
        for (let i = 0; i < 20; i++) expect((await cache.lookup(listenerId))?.hmacSecret).toBe('first-secret');
        expect(reads()).toBe(before);

        // Every invalidation this cache receives (this process's own, and the trigger's NOTIFYs,
        // which arrive in commit order): the test waits for the one each write causes, so that no
        // late notification can drop an entry after the point the test checks.
        let invalidations = 0;
        const invalidate = cache.invalidate.bind(cache);
        cache.invalidate = (changed: string) => {
          if (changed === listenerId) invalidations++;
          invalidate(changed);
        };
        const invalidated = async (count: number, what: string): Promise<void> =>
          until(() => invalidations >= count, what);

        await db.query('UPDATE automations SET signing_secret = $1 WHERE id = $2', [
          box.seal('second-secret', sealContext('automation_signing_secret', id)),
          id,
        ]);
        listenerChanged(listenerId); // what the domain does after its transaction commits
        await invalidated(2, "this process's drop and the UPDATE's NOTIFY");
        expect((await cache.lookup(listenerId))?.hmacSecret).toBe('second-secret');

        // unpublish through SQL only: the NOTIFY from the trigger drops the entry
        expect((await cache.lookup(listenerId))?.automation.published).toBe(true);
        await setPublished(db, id, false);
        await invalidated(3, "the unpublish's NOTIFY");
        expect((await cache.lookup(listenerId))?.automation.published).toBe(false);

        // Without a notification the entry is kept until it is MAX_STALENESS_MS old, then read again.
        await db.query('UPDATE automations SET signing_secret = $1 WHERE id = $2', [
          box.seal('third-secret', sealContext('automation_signing_secret', id)),
          id,
        ]);
        await invalidated(4, 'the NOTIFY of the secret change');
        expect((await cache.lookup(listenerId))?.hmacSecret).toBe('third-secret');
        await db.query('ALTER TABLE automations DISABLE TRIGGER USER');
        try {
          await db.query('UPDATE automations SET signing_secret = $1 WHERE id = $2', [
            box.seal('fourth-secret', sealContext('automation_signing_secret', id)),
            id,
          ]);
        } finally {
          await db.query('ALTER TABLE automations ENABLE TRIGGER USER');
        }
        clock += MAX_STALENESS_MS - 1;
        expect((await cache.lookup(listenerId))?.hmacSecret).toBe('third-secret');
        clock += 1;
        expect((await cache.lookup(listenerId))?.hmacSecret).toBe('fourth-secret');
        expect(await cache.lookup('no-such-listener')).toBeUndefined();
      } finally {
        await cache.close();
      }
    });

    it('keeps a load that only other listeners changed during, and drops one that its own listener changed during', async () => {
      const { listenerId } = await createListener(db, 'gated-secret');
      let reads = 0;
      let gate: Promise<void> | undefined;
      const gated = Object.assign(Object.create(db) as Db, {
        query: async (sql: string, params?: unknown[]) => {
          reads++;
          if (gate) await gate;
          return db.query(sql, params);
        },
      });
      const cache = new ListenerCache(gated, box, () => 0);
      await cache.ready();
      const loadWhile = async (during: () => void): Promise<void> => {
        let open!: () => void;
        gate = new Promise((resolve) => (open = resolve));
        const pending = cache.lookup(listenerId);
        during();
        open();
        expect((await pending)?.hmacSecret).toBe('gated-secret');
        gate = undefined;
      };
      try {
        // Another listener's change (the channel carries every listener's) does not cost this one its entry.
        await loadWhile(() => cache.invalidate('some-other-listener'));
        const afterFirst = reads;
        expect((await cache.lookup(listenerId))?.hmacSecret).toBe('gated-secret');
        expect(reads).toBe(afterFirst);
        // Its own change during the load: the value read may predate it, so it is not kept.
        cache.invalidate(listenerId);
        await loadWhile(() => cache.invalidate(listenerId));
        const afterRaced = reads;
        await cache.lookup(listenerId);
        expect(reads).toBe(afterRaced + 1);
        // A reset (the listening connection came back) also makes a load in flight stale.
        await loadWhile(() => cache.clear());
        const afterReset = reads;
        await cache.lookup(listenerId);
        expect(reads).toBe(afterReset + 1);
      } finally {
        await cache.close();
      }
    });

    // Two processes cannot share an embedded store: this case is declared for PostgreSQL only (and
    // reported as skipped, with the rest of that block, when DATABASE_URL is unset).
    const postgresOnly = (title: string, fn: jest.ProvidesCallback): void =>
      target.name === 'postgres' ? it(title, fn) : undefined;
    postgresOnly('drops the entry in another process through LISTEN/NOTIFY', async () => {
      // The second process needs the schema by name: make one it can open.
      const schema = `t_${randomBytes(6).toString('hex')}`;
      const shared = await openDb({ databaseUrl: target.url, schema });
      const child = spawn(
        process.execPath,
        [
          path.join(REPO_ROOT, 'node_modules/tsx/dist/cli.mjs'),
          'test/fixtures/listener-cache-process.ts',
          target.url!,
          schema,
          key.toString('base64url'),
        ],
        {
          cwd: REPO_ROOT,
          stdio: ['pipe', 'pipe', 'inherit'],
        },
      );
      const lines: Array<Record<string, unknown>> = [];
      readline
        .createInterface({ input: child.stdout })
        .on('line', (line) => lines.push(JSON.parse(line) as Record<string, unknown>));
      const ask = async (listenerId: string): Promise<Record<string, unknown>> => {
        const answers = lines.filter((l) => 'lookup' in l).length;
        child.stdin.write(`lookup ${listenerId}\n`);
        await until(() => lines.filter((l) => 'lookup' in l).length > answers, 'an answer from the second process');
        return lines.filter((l) => 'lookup' in l).at(-1)!;
      };
      try {
        await until(() => lines.some((l) => l.ready === true), 'the second process to listen');
        const { id, listenerId } = await createListener(shared, 'old-secret');
        expect((await ask(listenerId)).lookup).toBe('old-secret');
        const reads = (await ask(listenerId)).reads;
        expect((await ask(listenerId)).reads).toBe(reads); // served from its cache

        const staleness: number[] = [];
        for (let round = 0; round < 5; round++) {
          const secret = `rotated-${round}`;
          const seen = lines.filter((l) => l.invalidated === listenerId).length;
          const committedAt = Date.now();
          await shared.query('UPDATE automations SET signing_secret = $1 WHERE id = $2', [
            box.seal(secret, sealContext('automation_signing_secret', id)),
            id,
          ]);
          await until(
            () => lines.filter((l) => l.invalidated === listenerId).length > seen,
            'the NOTIFY to reach the second process',
          );
          staleness.push((lines.filter((l) => l.invalidated === listenerId).at(-1)!.at as number) - committedAt);
          expect((await ask(listenerId)).lookup).toBe(secret);
        }
        await shared.query(`UPDATE automations SET trigger = jsonb_set(trigger, '{enabled}', 'false') WHERE id = $1`, [
          id,
        ]);
        await until(async () => (await ask(listenerId)).enabled === false, 'the disable to reach the second process');
        console.log(`listener cache: cross-process staleness (commit → invalidation) ms: ${staleness.join(', ')}`);
      } finally {
        child.stdin.end();
        await new Promise((resolve) => child.once('exit', resolve));
        await shared.exec(`DROP SCHEMA ${schema} CASCADE`).catch(() => undefined);
        await shared.close();
      }
    });
  });
}
