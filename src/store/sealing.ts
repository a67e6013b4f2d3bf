/**
 * The sealing migration: values sealed by earlier versions without associated data (`v1.…`), and
 * service secrets stored in clear by the versions before sealing, are sealed again bound to their
 * row (src/crypto/secret-box.ts, `sealContext`). It needs SECRET_KEY, so it cannot be a SQL
 * migration: every process that holds the key runs `bindSealedValues` at start, before it reads a
 * sealed value; the first does the work, under an advisory lock, in one transaction, and records it
 * in `secret_sealing` (a store created empty records it at once). After it, a value in clear or
 * sealed without its binding is refused wherever it is read.
 */
import type { Db, Queryable } from './db';
import { SecretBox, sealContext, type SealKind } from '../crypto/secret-box';

const LOCK = 727_276;

/** Reseals what earlier versions left; a no-op once done. Throws (changing nothing) when a value does not open with this key. */
export async function bindSealedValues(db: Db, box: SecretBox): Promise<{ resealed: number }> {
  return db.transaction(async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock($1)', [LOCK]);
    const state = await tx.query<{ context_bound_at: unknown }>('SELECT context_bound_at FROM secret_sealing');
    if (state.length > 0 && state[0]!.context_bound_at !== null) return { resealed: 0 };
    let resealed = 0;
    const rebind = (kind: SealKind, id: string, stored: string, plaintextAllowed: boolean): string | undefined => {
      if (!SecretBox.isSealed(stored)) {
        if (!plaintextAllowed)
          throw new Error(`${kind} of "${id}" is neither sealed nor a service secret: refusing to migrate`);
        resealed++;
        return box.seal(stored, sealContext(kind, id));
      }
      if (!SecretBox.isLegacy(stored)) return undefined;
      let plain: string;
      try {
        plain = box.openLegacy(stored);
      } catch {
        throw new Error(
          `${kind} of "${id}" cannot be opened with this SECRET_KEY: the sealing migration needs the key the value was sealed with`,
        );
      }
      resealed++;
      return box.seal(plain, sealContext(kind, id));
    };
    for (const row of await tx.query<{ name: string; value: string }>('SELECT name, value FROM service_secrets')) {
      const next = rebind('service_secret', row.name, row.value, true);
      if (next !== undefined) await tx.query('UPDATE service_secrets SET value = $2 WHERE name = $1', [row.name, next]);
    }
    const outbound = await tx.query<{ name: string; sealed_value: string; previous_sealed_value: string | null }>(
      'SELECT name, sealed_value, previous_sealed_value FROM outbound_secrets',
    );
    for (const row of outbound) {
      const current = rebind('outbound_secret', row.name, row.sealed_value, false);
      // The value a rotation replaced, kept for signatures during its grace period: same binding.
      const previous =
        row.previous_sealed_value === null
          ? undefined
          : rebind('outbound_secret', row.name, row.previous_sealed_value, false);
      if (current !== undefined || previous !== undefined) {
        await tx.query(
          'UPDATE outbound_secrets SET sealed_value = COALESCE($2, sealed_value), previous_sealed_value = COALESCE($3, previous_sealed_value) WHERE name = $1',
          [row.name, current ?? null, previous ?? null],
        );
      }
    }
    const automations = await tx.query<{
      id: string;
      signing_secret: string | null;
      previous_signing_secret: string | null;
    }>(
      'SELECT id, signing_secret, previous_signing_secret FROM automations WHERE signing_secret IS NOT NULL OR previous_signing_secret IS NOT NULL',
    );
    for (const row of automations) {
      const current =
        row.signing_secret === null
          ? undefined
          : rebind('automation_signing_secret', row.id, row.signing_secret, false);
      const previous =
        row.previous_signing_secret === null
          ? undefined
          : rebind('automation_signing_secret', row.id, row.previous_signing_secret, false);
      if (current !== undefined || previous !== undefined) {
        await tx.query(
          'UPDATE automations SET signing_secret = COALESCE($2, signing_secret), previous_signing_secret = COALESCE($3, previous_signing_secret) WHERE id = $1',
          [row.id, current ?? null, previous ?? null],
        );
      }
    }
    await tx.query('DELETE FROM secret_sealing');
    await tx.query('INSERT INTO secret_sealing (context_bound_at) VALUES (now())');
    return { resealed };
  });
}

/** True once the sealing migration has run on this store (for tests and operations). */
export async function sealedValuesBound(db: Queryable): Promise<boolean> {
  const rows = await db.query<{ context_bound_at: unknown }>('SELECT context_bound_at FROM secret_sealing');
  return rows.length > 0 && rows[0]!.context_bound_at !== null;
}
