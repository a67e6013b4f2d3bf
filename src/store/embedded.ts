/**
 * The embedded store as `npm start` opens it (no DATABASE_URL): PGlite in a data directory,
 * created by a short-lived child process, its WebAssembly on V8's baseline compiler only.
 * The benchmark's soak opens its store the same way, so that it measures this.
 */
import path from 'node:path';
import v8 from 'node:v8';
import { runNodeChild } from '../node-child';
import { openDb, pgliteDataDirExists, type Db } from './db';

/** Opens (creating it first when missing) the embedded store in `storeDir`; `onCreated` runs after a creation. */
export async function openEmbeddedStore(storeDir: string, onCreated?: () => void): Promise<Db> {
  // The embedded store's WebAssembly runs on V8's baseline compiler only: less resident code and
  // compiler memory, and this service's queries do not need the optimising tier
  // (docs/performance.md#constants).
  v8.setFlagsFromString('--liftoff-only');
  if (!pgliteDataDirExists(storeDir)) {
    // initdb's memory leaves with a child process instead of staying resident here.
    await runNodeChild(
      path.join(__dirname, `init-pglite${path.extname(__filename)}`),
      [storeDir],
      'creating the embedded store',
    );
    onCreated?.();
  }
  return openDb({ dataDir: storeDir });
}
