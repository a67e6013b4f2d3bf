/**
 * The databases a store test runs on: embedded PGlite always, PostgreSQL when DATABASE_URL is set
 * (CI sets it). Without it the PostgreSQL cases are still declared, as skipped, with a title that
 * says so (test/reporters/skips.js counts them at the end of the run). Use as
 * `for (const target of DATABASES) describeOn(target)(`what (${target.label})`, ...)`.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { openDb, type Db } from '../../src/store/db';

export interface DatabaseTarget {
  name: 'pglite' | 'postgres';
  url: string | undefined;
  /** The name for titles; says "needs DATABASE_URL" when the target cannot run here. */
  label: string;
  /** False for PostgreSQL without DATABASE_URL: its cases are declared as skipped. */
  available: boolean;
}

/** The words every skipped PostgreSQL title carries (the end-of-run count looks for them). */
export const NEEDS_DATABASE_URL = 'needs DATABASE_URL';

export const PGLITE: DatabaseTarget = { name: 'pglite', url: undefined, label: 'pglite', available: true };
export const POSTGRES: DatabaseTarget = process.env.DATABASE_URL
  ? { name: 'postgres', url: process.env.DATABASE_URL, label: 'postgres', available: true }
  : { name: 'postgres', url: undefined, label: `postgres, skipped: ${NEEDS_DATABASE_URL}`, available: false };
export const DATABASES: DatabaseTarget[] = [PGLITE, POSTGRES];

const HOOKS = ['beforeAll', 'beforeEach', 'afterAll', 'afterEach'] as const;

/**
 * `describe` for a target that can run here, `describe.skip` for one that cannot. In the skipped
 * block no hook is registered, nested blocks' included: jest would still run the `beforeAll` of a
 * nested `describe` whose tests it then skips.
 */
export function describeOn(target: DatabaseTarget): jest.Describe {
  if (target.available) return describe;
  const g = globalThis as unknown as Record<(typeof HOOKS)[number], unknown>;
  const skipped = (name: string, fn: () => void): void =>
    // eslint-disable-next-line jest/no-disabled-tests -- a declared skip: the target's label says why
    describe.skip(name, () => {
      const saved = HOOKS.map((hook) => g[hook]);
      for (const hook of HOOKS) g[hook] = () => undefined;
      try {
        fn();
      } finally {
        HOOKS.forEach((hook, i) => (g[hook] = saved[i]));
      }
    });
  return Object.assign(skipped, describe.skip, {
    skip: describe.skip,
    only: describe.skip,
  }) as unknown as jest.Describe;
}

/** `it` for a target that can run here, `it.skip` for one that cannot. */
export function itOn(target: DatabaseTarget): jest.It {
  return target.available ? it : it.skip;
}

/**
 * The store of a test that does not name one: PGlite, or PostgreSQL in the "postgres" jest project
 * (TEST_DEFAULT_STORE=postgres, set by test/setup/postgres.ts).
 */
export function defaultTarget(): DatabaseTarget {
  const url = process.env.DATABASE_URL;
  return process.env.TEST_DEFAULT_STORE === 'postgres' && url ? POSTGRES : PGLITE;
}

let image: Blob | undefined;

/** The migrated PGlite image made once by jest's globalSetup (undefined outside it). */
function pgliteImage(): Blob | undefined {
  const file = process.env.TEST_PGLITE_IMAGE;
  if (!image && file && fs.existsSync(file)) image = new Blob([fs.readFileSync(file)]);
  return image;
}

/** A fresh, migrated database: in-memory PGlite, or a new schema in PostgreSQL. */
export async function openTestDb(target: DatabaseTarget): Promise<Db> {
  if (target.name === 'postgres' && !target.url) throw new Error(`the postgres target ${NEEDS_DATABASE_URL}`);
  if (!target.url) return openDb({ image: pgliteImage() });
  const schema = `t_${randomBytes(6).toString('hex')}`;
  const db = await openDb({ databaseUrl: target.url, schema });
  const close = db.close.bind(db);
  return Object.assign(db, {
    async close() {
      await db.exec(`DROP SCHEMA ${schema} CASCADE`).catch(() => undefined);
      await close();
    },
  });
}
