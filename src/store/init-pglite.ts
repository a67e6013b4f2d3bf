/**
 * Child-process entry of `npm start`: creates and migrates a new embedded-store data directory,
 * then exits, so the memory initdb takes leaves with this process (see `initPgliteDataDir`).
 * Usage: `node [loader flags] init-pglite.(ts|js) <store dir>`.
 */
import { initPgliteDataDir } from './db';

const dataDir = process.argv[2];
if (!dataDir) {
  console.error('usage: init-pglite <store dir>');
  process.exit(2);
}
initPgliteDataDir(dataDir).then(
  () => process.exit(0),
  (err: unknown) => {
    console.error((err as Error).message);
    process.exit(1);
  },
);
