/**
 * One SQL interface over PostgreSQL (`pg`) and embedded PGlite: same SQL dialect, same
 * migrations. `openDb` connects and migrates; everything else takes a `Db` or a `Queryable`.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { PGlite } from '@electric-sql/pglite';
import { migrate } from './migrations';

export interface Queryable {
  /** Runs one parameterised statement and returns its rows. */
  query<R = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<R[]>;
}

export interface Db extends Queryable {
  readonly kind: 'pglite' | 'postgres';
  /** Runs `fn` in one transaction: committed when it resolves, rolled back when it throws. */
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
  /** Runs a script of several statements without parameters (migrations). */
  exec(sql: string): Promise<void>;
  close(): Promise<void>;
}

export interface DbOptions {
  /** PostgreSQL connection string; when unset, PGlite is used. */
  databaseUrl?: string | undefined;
  /** PGlite data directory; when unset with no databaseUrl, an in-memory PGlite. */
  dataDir?: string | undefined;
  /** PostgreSQL schema to use (created if missing); lets tests isolate themselves. */
  schema?: string | undefined;
  /** In-memory PGlite only: a data-dir image (from `dumpMemoryImage`) to start from instead of initdb. */
  image?: Blob | undefined;
}

export async function openDb(options: DbOptions): Promise<Db> {
  if (!options.databaseUrl && !options.dataDir) return openMemoryPglite(options.image);
  const db = options.databaseUrl ? await openPostgres(options.databaseUrl, options.schema) : await openPglite(options.dataDir);
  try {
    await migrate(db);
  } catch (err) {
    await db.close();
    throw err;
  }
  return db;
}

async function openPostgres(url: string, schema: string | undefined): Promise<Db> {
  const { Pool } = await import('pg');
  if (schema !== undefined && !/^[a-z_][a-z0-9_]*$/.test(schema)) throw new Error('invalid schema name');
  const pool = new Pool({
    connectionString: url,
    max: 10,
    ...(schema ? { options: `-c search_path=${schema}` } : {}),
  });
  pool.on('error', () => {
    /* idle client errors surface on the next query */
  });
  if (schema) await pool.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
  return {
    kind: 'postgres',
    async query<R>(sql: string, params: unknown[] = []): Promise<R[]> {
      const result = await pool.query(sql, params);
      return result.rows as R[];
    },
    async transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        const result = await fn({
          async query<R>(sql: string, params: unknown[] = []): Promise<R[]> {
            return (await client.query(sql, params)).rows as R[];
          },
        });
        await client.query('COMMIT');
        return result;
      } catch (err) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw err;
      } finally {
        client.release();
      }
    },
    async exec(sql: string): Promise<void> {
      await pool.query(sql);
    },
    async close(): Promise<void> {
      await pool.end();
    },
  };
}

/** A migrated in-memory database image, made once per process: later in-memory opens load it. */
let memoryTemplate: Promise<Blob> | undefined;

/** In-memory PGlite (tests, tools): starts from the migrated template instead of initdb + migrations. */
async function openMemoryPglite(image: Blob | undefined): Promise<Db> {
  let template = image;
  if (!template) {
    memoryTemplate ??= dumpMemoryImage();
    try {
      template = await memoryTemplate;
    } catch (err) {
      memoryTemplate = undefined;
      throw err;
    }
  }
  const { PGlite } = await import('@electric-sql/pglite');
  const db = wrapPglite(await PGlite.create({ loadDataDir: template }));
  await migrate(db);
  return db;
}

/** A migrated, empty in-memory database as a data-dir image (uncompressed tar). */
export async function dumpMemoryImage(): Promise<Blob> {
  const { PGlite } = await import('@electric-sql/pglite');
  const pg = await PGlite.create({});
  try {
    await migrate(wrapPglite(pg));
    return await pg.dumpDataDir('none');
  } finally {
    await pg.close();
  }
}

async function openPglite(dataDir: string | undefined): Promise<Db> {
  const { PGlite } = await import('@electric-sql/pglite');
  if (dataDir) fs.mkdirSync(path.dirname(dataDir), { recursive: true });
  return wrapPglite(await PGlite.create(dataDir ? { dataDir } : {}));
}

function wrapPglite(pg: PGlite): Db {
  return {
    kind: 'pglite',
    async query<R>(sql: string, params: unknown[] = []): Promise<R[]> {
      return (await pg.query<R>(sql, params)).rows;
    },
    async transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
      return pg.transaction(async (tx) =>
        fn({
          async query<R>(sql: string, params: unknown[] = []): Promise<R[]> {
            return (await tx.query<R>(sql, params)).rows;
          },
        }),
      );
    },
    async exec(sql: string): Promise<void> {
      await pg.exec(sql);
    },
    async close(): Promise<void> {
      await pg.close();
    },
  };
}

/** Unique-violation test that works for both drivers. */
export function isUniqueViolation(err: unknown): boolean {
  return (err as { code?: unknown })?.code === '23505';
}

/** Timestamps come back as Date from both drivers; the API speaks RFC 3339 UTC. */
export function iso(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  const date = value instanceof Date ? value : new Date(String(value));
  return date.toISOString();
}
