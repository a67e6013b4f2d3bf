/**
 * A real store that can be taken down mid-test. PGlite: the embedded database is closed (what an
 * embedded store's failure looks like to the app). PostgreSQL: the app reaches the server through a
 * TCP relay of this process; taking the store down resets every connection through it, open or
 * new (what the app sees when PostgreSQL or the network to it goes away).
 */
import { randomBytes } from 'node:crypto';
import { openDb, type Db } from '../../src/store/db';
import { openTestDb, type DatabaseTarget } from './databases';
import { startTcpRelay } from './tcp-relay';

export interface StoreWithOutage {
  db: Db;
  /** From now on every query fails as it would with the store gone. */
  takeDown(): Promise<void>;
  /** Releases everything (also after takeDown). */
  close(): Promise<void>;
}

export async function openStoreWithOutage(target: DatabaseTarget): Promise<StoreWithOutage> {
  if (!target.url) {
    const db = await openTestDb(target);
    let closed = false;
    const shut = async (): Promise<void> => {
      if (closed) return;
      closed = true;
      await db.close();
    };
    return { db, takeDown: shut, close: shut };
  }
  const upstream = new URL(target.url);
  const relay = await startTcpRelay({ host: upstream.hostname, port: Number(upstream.port || 5432) });
  const relayed = new URL(target.url);
  relayed.hostname = '127.0.0.1';
  relayed.port = String(relay.port);
  const schema = `t_${randomBytes(6).toString('hex')}`;
  const db = await openDb({ databaseUrl: relayed.toString(), schema });
  let down = false;
  const takeDown = async (): Promise<void> => {
    if (down) return;
    down = true;
    relay.setTarget(undefined);
    relay.cut();
  };
  return {
    db,
    takeDown,
    async close() {
      await takeDown();
      await db.close().catch(() => undefined);
      await relay.close();
      const { Client } = await import('pg');
      const direct = new Client({ connectionString: target.url });
      await direct.connect();
      try {
        await direct.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      } finally {
        await direct.end();
      }
    },
  };
}
