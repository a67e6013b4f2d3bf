/**
 * The no-op activities of the baseline workflows (bench/workflows/bare.ts), and the one store write
 * of the floor with the store: the product's ownership statement (src/store/owners.ts) alone.
 */
import { recordOwner } from '../src/store/owners';
import type { Queryable } from '../src/store/db';
import { SERVICE_USER } from '../src/domain/users';

/** What the bench's automation body carries for its ownership step (bench/automation.ts). */
interface OwnershipTrigger {
  serviceAccount?: unknown;
  appId?: unknown;
  entitlementId?: unknown;
}

/** `db`: the store the automation's worker writes to, for `ownOnly`; without it `ownOnly` fails. */
export function createBareActivities(db?: Queryable) {
  let table: Promise<unknown> | undefined;
  return {
    /** Writes one row of a table of its own (the floor of a grant's one-row change) and answers when. */
    async recordRow(): Promise<number> {
      if (!db) throw new Error('recordRow needs the store');
      table ??= db.query(
        'CREATE TABLE IF NOT EXISTS bench_rows (id bigserial PRIMARY KEY, at timestamptz DEFAULT now())',
      );
      await table;
      await db.query('INSERT INTO bench_rows DEFAULT VALUES');
      return Date.now();
    },
    /** The time it started (ms since the epoch): the floor of a scheduled run's first step (bench/schedules.ts). */
    async stampNow(): Promise<number> {
      return Date.now();
    },
    async noopOne(_payload: unknown): Promise<Record<string, never>> {
      return {};
    },
    async noopTwo(_payload: unknown): Promise<Record<string, never>> {
      return {};
    },
    async noopThree(_payload: unknown): Promise<Record<string, never>> {
      return {};
    },
    /**
     * The ownership statement as the ownership step runs it (the same store function on the same
     * store), with nothing else of the step: no CEL, no reference check, no record mapped. A repeat
     * of an ownership, as every run of the bench's automation after its first is.
     */
    async ownOnly(payload: unknown): Promise<{ created: boolean }> {
      if (!db) throw new Error('ownOnly needs the store');
      const trigger = payload as OwnershipTrigger;
      const ref = {
        userId: String(trigger.serviceAccount),
        roleSlug: 'owner',
        appId: String(trigger.appId),
        entitlementId: String(trigger.entitlementId),
      };
      const found = await recordOwner(db, ref, SERVICE_USER, {
        actor: 'system',
        action: 'entitlement_owner.create',
        resourceType: 'app_entitlement',
        resourceId: ref.entitlementId,
        details: { userId: ref.userId, roleSlug: ref.roleSlug, appId: ref.appId },
      });
      if (!found.owner) throw new Error(`ownOnly: the ownership was not recorded (${JSON.stringify(ref)})`);
      return { created: found.owner.created };
    },
  };
}

export type BareActivities = ReturnType<typeof createBareActivities>;
