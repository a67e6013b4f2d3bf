/**
 * npm run docs:config: writes the configuration table of docs/operations.md#configuration from CONFIG_SCHEMA
 * (src/config.ts), between its two markers. test/unit/config-table.test.ts fails when the table in
 * the doc is not the one this writes.
 *
 *   npm run docs:config            rewrite the table
 *   npm run docs:config -- --check exit 1 when the table is stale
 */
import fs from 'node:fs';
import path from 'node:path';
import { CONFIG_SCHEMA, CONFIG_VARIABLES } from '../src/config';

export const OPERATIONS_DOC = path.resolve(__dirname, '../docs/operations.md');
export const TABLE_START =
  '<!-- configuration table: written by `npm run docs:config` from src/config.ts; do not edit -->';
export const TABLE_END = '<!-- end of the configuration table -->';

/** The table, one row per variable in the schema's order. */
export function configTable(): string {
  const rows = CONFIG_VARIABLES.map((name) => {
    const variable = CONFIG_SCHEMA[name];
    return `| \`${name}\` | ${variable.type} | ${variable.description} | ${variable.default} |`;
  });
  return ['| variable | type | meaning | default |', '|---|---|---|---|', ...rows].join('\n');
}

/** The table as it stands in `doc` (between the markers). */
export function tableIn(doc: string): string {
  const start = doc.indexOf(TABLE_START);
  const end = doc.indexOf(TABLE_END);
  if (start < 0 || end < start)
    throw new Error(`docs/operations.md has no configuration table markers (${TABLE_START} … ${TABLE_END})`);
  return doc.slice(start + TABLE_START.length, end).trim();
}

function main(): void {
  const doc = fs.readFileSync(OPERATIONS_DOC, 'utf8');
  const table = configTable();
  if (process.argv.includes('--check')) {
    if (tableIn(doc) !== table) {
      console.error('docs/operations.md: the configuration table is stale; run npm run docs:config');
      process.exit(1);
    }
    return;
  }
  const start = doc.indexOf(TABLE_START);
  const end = doc.indexOf(TABLE_END);
  tableIn(doc); // the markers are there
  fs.writeFileSync(OPERATIONS_DOC, `${doc.slice(0, start + TABLE_START.length)}\n${table}\n${doc.slice(end)}`);
  console.log(`docs/operations.md: configuration table written (${CONFIG_VARIABLES.length} variables)`);
}

if (require.main === module) main();
