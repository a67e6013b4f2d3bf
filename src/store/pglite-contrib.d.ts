/**
 * Types of the PGlite contrib extension the embedded store loads. The package declares them under
 * its `exports` map, which this project's `moduleResolution: node` does not read.
 */
declare module '@electric-sql/pglite/contrib/pg_trgm' {
  import type { Extension } from '@electric-sql/pglite';

  export const pg_trgm: Extension;
}
