/**
 * One SQL interface over PostgreSQL (`pg`) and embedded PGlite: same SQL dialect, same
 * migrations. `openDb` connects and migrates; everything else takes a `Db` or a `Queryable`.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Extensions, PGlite } from '@electric-sql/pglite';
import { migrate } from './migrations';
import type { Db, Queryable, QueryOptions } from './queryable';
import { UnavailableError } from '../errors';

export type { Db, Queryable, QueryOptions };

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
  const db = options.databaseUrl
    ? await openPostgres(options.databaseUrl, options.schema)
    : await openPglite(options.dataDir);
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
    // A server that accepts no connection must not hold requests for long: they answer 503.
    connectionTimeoutMillis: 5_000,
    ...(schema ? { options: `-c search_path=${schema}` } : {}),
  });
  pool.on('error', () => {
    /* idle client errors surface on the next query */
  });
  if (schema) await pool.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
  const listeners = new Set<() => Promise<void>>();
  return {
    kind: 'postgres',
    async query<R>(sql: string, params: unknown[] = [], options?: QueryOptions): Promise<R[]> {
      try {
        // A named query: pg prepares it on each pooled connection the first time and reuses it.
        const rows = options?.prepare
          ? (await pool.query({ name: options.prepare, text: sql, values: params })).rows
          : (await pool.query(sql, params)).rows;
        return rows as R[];
      } catch (err) {
        throw storeError(err);
      }
    },
    async transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
      const client = await pool.connect().catch((err: unknown) => {
        throw storeError(err);
      });
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
        throw storeError(err);
      } finally {
        client.release();
      }
    },
    async exec(sql: string): Promise<void> {
      await pool.query(sql);
    },
    async listen(channel, onNotify, onReset): Promise<() => Promise<void>> {
      const stop = await listenPostgres(url, channel, onNotify, onReset);
      listeners.add(stop);
      return async () => {
        listeners.delete(stop);
        await stop();
      };
    },
    async close(): Promise<void> {
      // LISTEN connections are not pooled: they end with the Db.
      await Promise.all([...listeners].map((stop) => stop()));
      listeners.clear();
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
  const db = wrapPglite(
    await PGlite.create({
      loadDataDir: template,
      startParams: [...PGlite.defaultStartParams, ...PGLITE_SETTINGS],
      extensions: await pgliteExtensions(),
    }),
  );
  await migrate(db);
  return db;
}

/** A migrated, empty in-memory database as a data-dir image (uncompressed tar). */
export async function dumpMemoryImage(): Promise<Blob> {
  const { PGlite } = await import('@electric-sql/pglite');
  const pg = await PGlite.create({ extensions: await pgliteExtensions() });
  try {
    await migrate(wrapPglite(pg));
    return await pg.dumpDataDir('none');
  } finally {
    await pg.close();
  }
}

/**
 * PostgreSQL settings of PGlite: small shared buffers instead of the default 128 MB, since a
 * file-backed store's files stay in the OS page cache anyway and every in-memory store (tests, the
 * benchmark) would otherwise fill its own (docs/performance.md#constants).
 */
const PGLITE_SETTINGS = ['-c', 'shared_buffers=8MB'];

/**
 * The contrib extensions every PGlite opens with: pg_trgm, so the migrations create the trigram
 * index and the statistics of the entitlement search (as on PostgreSQL with contrib) and a search
 * by `query` reads the index instead of scanning the table. Loaded on every open, not only the
 * first: once a database has the extension, its index cannot be used or updated without it.
 */
async function pgliteExtensions(): Promise<Extensions> {
  const { pg_trgm } = await import('@electric-sql/pglite/contrib/pg_trgm');
  return { pg_trgm };
}

/** True when `dataDir` holds a PGlite (PostgreSQL) data directory already. */
export function pgliteDataDirExists(dataDir: string): boolean {
  return fs.existsSync(path.join(dataDir, 'PG_VERSION'));
}

/**
 * Creates and migrates a new PGlite data directory, then closes it. initdb grows PGlite's
 * WebAssembly memory to several hundred MB, which a process does not get back: `npm start` runs
 * this in a short-lived child process (src/store/init-pglite.ts) before opening the store.
 */
export async function initPgliteDataDir(dataDir: string): Promise<void> {
  const { PGlite } = await import('@electric-sql/pglite');
  fs.mkdirSync(path.dirname(dataDir), { recursive: true });
  const fresh = wrapPglite(
    await PGlite.create({
      dataDir,
      startParams: [...PGlite.defaultStartParams, ...PGLITE_SETTINGS],
      extensions: await pgliteExtensions(),
    }),
  );
  try {
    await migrate(fresh);
  } finally {
    await fresh.close();
  }
}

async function openPglite(dataDir: string | undefined): Promise<Db> {
  const { PGlite } = await import('@electric-sql/pglite');
  if (dataDir) fs.mkdirSync(path.dirname(dataDir), { recursive: true });
  const startParams = [...PGlite.defaultStartParams, ...PGLITE_SETTINGS];
  // A new data directory: create and migrate it once, close it, and run on a fresh instance.
  if (dataDir && !pgliteDataDirExists(dataDir)) await initPgliteDataDir(dataDir);
  const extensions = await pgliteExtensions();
  return wrapPglite(await PGlite.create(dataDir ? { dataDir, startParams, extensions } : { extensions }));
}

const loadPglite = () => import('@electric-sql/pglite');
let pgliteModule: ReturnType<typeof loadPglite> | undefined;

/** A statement PGlite has prepared under its name, with its parameters' types (for their serializers). */
interface PreparedPglite {
  sql: string;
  paramTypes: number[];
}

/**
 * Runs a named statement on PGlite: prepared (Parse, Describe) on its first use, then each run is
 * Bind, Describe, Execute and Sync in one call into PGlite's WebAssembly, instead of the six calls
 * and the parse and plan of `pg.query`. It takes PGlite's two locks as `pg.query` does, so it never
 * runs inside another caller's transaction.
 */
async function preparedPgliteQuery(
  pg: PGlite,
  prepared: Map<string, PreparedPglite>,
  name: string,
  sql: string,
  params: unknown[],
): Promise<unknown[]> {
  pgliteModule ??= loadPglite();
  const { protocol, parse } = await pgliteModule;
  const { serialize } = protocol;
  return pg._runExclusiveTransaction(() =>
    pg._runExclusiveQuery(async () => {
      let statement = prepared.get(name);
      if (statement && statement.sql !== sql)
        throw new Error(`prepared statement ${name} was prepared with another text`);
      if (!statement) {
        const { messages } = await pg.execProtocol(
          concatBytes([
            serialize.parse({ name, text: sql }),
            serialize.describe({ type: 'S', name }),
            serialize.sync(),
          ]),
          {
            syncToFs: false,
          },
        );
        statement = { sql, paramTypes: parse.parseDescribeStatementResults(messages) };
        prepared.set(name, statement);
      }
      const { paramTypes } = statement;
      // Serialized as pg.query serializes them: by the type PostgreSQL inferred for each parameter.
      const values = params.map((param, i) => {
        if (param === null || param === undefined) return null;
        const serializer = pg.serializers[paramTypes[i]!];
        return serializer ? serializer(param) : String(param);
      });
      const { messages } = await pg.execProtocol(
        concatBytes([
          serialize.bind({ statement: name, values }),
          serialize.describe({ type: 'P' }),
          serialize.execute({}),
          serialize.sync(),
        ]),
      );
      return parse.parseResults(messages, pg.parsers)[0]!.rows;
    }),
  );
}

function concatBytes(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

function wrapPglite(pg: PGlite): Db {
  /** The statements prepared on this instance (a new instance, a new session: none). */
  const prepared = new Map<string, PreparedPglite>();
  // A closed or crashed embedded database (its WebAssembly aborted) answers like an unreachable
  // server: UnavailableError, 503 + Retry-After at the HTTP edge, never a 500.
  const guarded = async <T>(fn: () => Promise<T>): Promise<T> => {
    try {
      return await fn();
    } catch (err) {
      throw pg.closed || (err instanceof Error && err.name === 'RuntimeError')
        ? new UnavailableError('the database is unavailable; retry later', 2)
        : err;
    }
  };
  return {
    kind: 'pglite',
    query: <R>(sql: string, params: unknown[] = [], options?: QueryOptions): Promise<R[]> =>
      guarded(async () =>
        options?.prepare
          ? ((await preparedPgliteQuery(pg, prepared, options.prepare, sql, params)) as R[])
          : (await pg.query<R>(sql, params)).rows,
      ),
    transaction: <T>(fn: (tx: Queryable) => Promise<T>): Promise<T> =>
      guarded(() =>
        pg.transaction(async (tx) =>
          fn({
            async query<R>(sql: string, params: unknown[] = []): Promise<R[]> {
              return (await tx.query<R>(sql, params)).rows;
            },
          }),
        ),
      ),
    exec: (sql: string): Promise<void> => guarded(async () => void (await pg.exec(sql))),
    async listen(channel: string, onNotify: (payload: string) => void): Promise<() => Promise<void>> {
      // One PGlite instance per process: its NOTIFYs are delivered in-process, never lost.
      return pg.listen(channel, onNotify);
    },
    async close(): Promise<void> {
      await pg.close();
    },
  };
}

/**
 * A dedicated connection that LISTENs on `channel` (a pooled one would be handed back). When it
 * fails it reconnects after a short delay and calls `onReset`, since notifications sent while it
 * was away are lost.
 */
async function listenPostgres(
  url: string,
  channel: string,
  onNotify: (payload: string) => void,
  onReset: (() => void) | undefined,
): Promise<() => Promise<void>> {
  if (!/^[a-z_][a-z0-9_]*$/.test(channel)) throw new Error('invalid channel name');
  const { Client } = await import('pg');
  let stopped = false;
  let client: InstanceType<typeof Client> | undefined;
  let retry: NodeJS.Timeout | undefined;
  const connect = async (): Promise<void> => {
    const next = new Client({ connectionString: url });
    next.on('notification', (message) => {
      if (message.channel === channel) onNotify(message.payload ?? '');
    });
    next.on('error', () => {
      if (client === next) client = undefined;
      void next.end().catch(() => undefined);
      schedule();
    });
    await next.connect();
    await next.query(`LISTEN ${channel}`);
    if (stopped) {
      await next.end();
      return;
    }
    client = next;
  };
  const schedule = (): void => {
    if (stopped || retry) return;
    retry = setTimeout(() => {
      retry = undefined;
      connect().then(
        () => onReset?.(),
        () => schedule(),
      );
    }, 500);
    retry.unref();
  };
  await connect();
  return async () => {
    stopped = true;
    if (retry) clearTimeout(retry);
    await client?.end().catch(() => undefined);
  };
}

/** Socket errors and PostgreSQL SQLSTATEs that mean "the database cannot be reached now". */
const UNREACHABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  '57P01',
  '57P02',
  '57P03',
  '53300',
]);

/**
 * A lost or refused database connection becomes UnavailableError (503 + Retry-After at the HTTP
 * edge, a retryable failure in activities); every other error is returned unchanged.
 */
export function storeError(err: unknown): unknown {
  if (err instanceof UnavailableError) return err;
  const code = (err as { code?: unknown })?.code;
  const message = err instanceof Error ? err.message : '';
  const unreachable =
    // Class 08 is "connection exception", except 08P01 (protocol violation: a malformed query, a bug).
    (typeof code === 'string' && (UNREACHABLE_CODES.has(code) || (code.startsWith('08') && code !== '08P01'))) ||
    /^(Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error)/.test(
      message,
    );
  return unreachable ? new UnavailableError('the database is unavailable; retry later', 2) : err;
}

/** Resolves when the database answers a trivial query (readiness checks). */
export async function pingStore(db: Queryable): Promise<void> {
  await db.query('SELECT 1');
}

/** Timestamps come back as Date from both drivers; the API speaks RFC 3339 UTC. */
export function iso(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  const date = value instanceof Date ? value : new Date(String(value));
  return date.toISOString();
}
