/** Service-wide secrets (token signing keys, page-token key): made once, shared by every process. */
import type { Queryable } from './db';

export async function getOrCreateSecret(db: Queryable, name: string, generate: () => string): Promise<string> {
  await db.query('INSERT INTO service_secrets (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING', [name, generate()]);
  const rows = await db.query<{ value: string }>('SELECT value FROM service_secrets WHERE name = $1', [name]);
  const row = rows[0];
  if (!row) throw new Error(`secret ${name} missing after insert`);
  return row.value;
}
