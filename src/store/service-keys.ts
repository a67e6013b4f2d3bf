/**
 * Service keys (token signing keys, page-token key): made once, shared by every process,
 * stored sealed with the secret box (AES-256-GCM under SECRET_KEY, bound to the row:
 * `service_secret:<name>`). A value in clear, or sealed without its context, is refused: values
 * from earlier versions are sealed again once, by the sealing migration (./sealing.ts), before
 * anything reads them.
 */
import type { Queryable } from './db';
import { SecretBox, sealContext } from '../crypto/secret-box';

/** The plain value of secret `name`, made with `generate` (and stored sealed) when missing. */
export async function getOrCreateServiceKey(
  db: Queryable,
  box: SecretBox,
  name: string,
  generate: () => string,
): Promise<string> {
  await db.query('INSERT INTO service_secrets (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING', [
    name,
    box.seal(generate(), sealContext('service_secret', name)),
  ]);
  const stored = await readStored(db, name);
  if (stored === undefined) throw new Error(`secret ${name} missing after insert`);
  return openSecret(box, name, stored);
}

/** Replaces secret `name` (sealed) when its plain value is still `expected`; false when it changed. */
export async function replaceSecret(
  db: Queryable,
  box: SecretBox,
  name: string,
  expected: string,
  next: string,
): Promise<boolean> {
  const stored = await readStored(db, name);
  if (stored === undefined) return false;
  if (openSecret(box, name, stored) !== expected) return false;
  const rows = await db.query('UPDATE service_secrets SET value = $3 WHERE name = $1 AND value = $2 RETURNING name', [
    name,
    stored,
    box.seal(next, sealContext('service_secret', name)),
  ]);
  return rows.length > 0;
}

async function readStored(db: Queryable, name: string): Promise<string | undefined> {
  const rows = await db.query<{ value: string }>('SELECT value FROM service_secrets WHERE name = $1', [name]);
  return rows[0]?.value;
}

function openSecret(box: SecretBox, name: string, stored: string): string {
  if (!SecretBox.isSealed(stored)) {
    throw new Error(
      `service secret "${name}" is stored in clear: refused (every value is sealed; was the row written to the database directly?)`,
    );
  }
  if (SecretBox.isLegacy(stored)) {
    throw new Error(
      `service secret "${name}" is sealed without its row binding: refused (the sealing migration runs at start-up, before this read)`,
    );
  }
  try {
    return box.open(stored, sealContext('service_secret', name));
  } catch {
    throw new Error(
      `service secret "${name}" cannot be opened with this SECRET_KEY (was it sealed with another key, or for another row?)`,
    );
  }
}
