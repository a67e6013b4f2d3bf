/**
 * The databases a store test runs on: embedded PGlite always, PostgreSQL too when DATABASE_URL is
 * set (CI sets it). Use as `for (const target of DATABASES) describe(target.name, ...)`.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { openDb, type Db } from '../../src/store/db';

export interface DatabaseTarget {
  name: 'pglite' | 'postgres';
  url: string | undefined;
}

export const DATABASES: DatabaseTarget[] = [
  { name: 'pglite', url: undefined },
  ...(process.env.DATABASE_URL ? [{ name: 'postgres' as const, url: process.env.DATABASE_URL }] : []),
];

/**
 * The store of a test that does not name one: PGlite, or PostgreSQL in the "postgres" jest project
 * (TEST_DEFAULT_STORE=postgres, set by test/setup/postgres.ts).
 */
export function defaultTarget(): DatabaseTarget {
  const url = process.env.DATABASE_URL;
  return process.env.TEST_DEFAULT_STORE === 'postgres' && url ? { name: 'postgres', url } : { name: 'pglite', url: undefined };
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
