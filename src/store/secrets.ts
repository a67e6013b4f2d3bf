/**
 * Service-wide secrets (token signing keys, page-token key): made once, shared by every process,
 * stored sealed with the secret box (AES-256-GCM under SECRET_KEY). A value stored in clear by an
 * older version is sealed in place the first time it is read.
 */
import type { Queryable } from './db';
import { SecretBox } from '../auth/secret-box';

/** The plain value of secret `name`, made with `generate` (and stored sealed) when missing. */
export async function getOrCreateSecret(db: Queryable, box: SecretBox, name: string, generate: () => string): Promise<string> {
  await db.query('INSERT INTO service_secrets (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING', [name, box.seal(generate())]);
  const stored = await readStored(db, name);
  if (stored === undefined) throw new Error(`secret ${name} missing after insert`);
  if (SecretBox.isSealed(stored)) return openSecret(box, name, stored);
  // Migration: a value from before sealing. Sealed unless another process did it meanwhile.
  await db.query('UPDATE service_secrets SET value = $3 WHERE name = $1 AND value = $2', [name, stored, box.seal(stored)]);
  return stored;
}

/** Replaces secret `name` (sealed) when its plain value is still `expected`; false when it changed. */
export async function replaceSecret(db: Queryable, box: SecretBox, name: string, expected: string, next: string): Promise<boolean> {
  const stored = await readStored(db, name);
  if (stored === undefined) return false;
  const current = SecretBox.isSealed(stored) ? openSecret(box, name, stored) : stored;
  if (current !== expected) return false;
  const rows = await db.query('UPDATE service_secrets SET value = $3 WHERE name = $1 AND value = $2 RETURNING name', [name, stored, box.seal(next)]);
  return rows.length > 0;
}

async function readStored(db: Queryable, name: string): Promise<string | undefined> {
  const rows = await db.query<{ value: string }>('SELECT value FROM service_secrets WHERE name = $1', [name]);
  return rows[0]?.value;
}

function openSecret(box: SecretBox, name: string, sealed: string): string {
  try {
    return box.open(sealed);
  } catch {
    throw new Error(`service secret "${name}" cannot be opened with this SECRET_KEY (was it sealed with another key?)`);
  }
}
