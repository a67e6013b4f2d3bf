/**
 * `grantEntitlements`: grants a user a list of entitlements (1..50) and, by default, waits until
 * each grant is `GRANTED` or `FAILED` → output `{"grants": [{"appId", "entitlementId", "grantId",
 * "state", "expiresAt", "created"}]}`. `userId`, `entitlements` and `justification` are CEL;
 * `duration` is a literal (bounded by each entitlement's durationGrant). A grant's id derives from
 * the run, the step and the entitlement (activities/access.ts), so a retried attempt or a worker
 * crash never makes a second grant; a user who already holds a live grant of an entitlement keeps
 * it (`created: false`). Any FAILED grant fails the step after all were tried, naming each.
 *
 * The effect runs in the service's own store (its first attempt is a local activity); waiting is a
 * durable timer between checks of the grants' states (1 s doubling to 60 s, every 5 min after an
 * hour), so a step waiting for a person's provisioning task costs a timer, not a worker.
 */
import { z } from 'zod';
import {
  celSchema,
  defineEffect,
  defineStep,
  describeValue,
  durationWithin,
  type EffectExpressions,
  type StepEffects,
} from './kind';
import { StepError } from '../errors';
import { isObject } from '../json';

/** Most entitlements one step grants or revokes. */
export const MAX_STEP_ENTITLEMENTS = 50;
/** Longest grant a step may ask for: ten years (each entitlement's durationGrant bounds it further). */
export const MAX_GRANT_SECONDS = 10 * 366 * 24 * 3600;

/** One entitlement, evaluated. */
export interface EntitlementRef {
  appId: string;
  entitlementId: string;
}

/** What the activity grants, from the evaluated fields. */
export interface GrantEntitlementsRequest {
  userId: string;
  entitlements: EntitlementRef[];
  duration?: string;
  justification?: string;
}

/** One grant as the step reports it. `grantId` is null (and `error` says why) when none could be made. */
export interface StepGrant extends EntitlementRef {
  grantId: string | null;
  state: string;
  expiresAt: string | null;
  created: boolean;
  error?: string;
}

/** The check between waits: the grants the first call made or found, to read again. */
export interface GrantCheck {
  check: StepGrant[];
}

const schema = z
  .object({
    userId: celSchema().meta({ description: 'CEL giving the id of the user to grant (e.g. ctx.steps.user.userId).' }),
    entitlements: celSchema().meta({
      description: `CEL giving a list of 1..${MAX_STEP_ENTITLEMENTS} maps {"appId", "entitlementId"}.`,
    }),
    duration: durationWithin(MAX_GRANT_SECONDS, '"86400s"')
      .nullish()
      .meta({ description: "How long each grant lasts, bounded by its entitlement's durationGrant (absent: that)." }),
    justification: celSchema().nullish().meta({ description: 'CEL giving the justification the grants record.' }),
    waitForProvisioning: z
      .boolean({ error: 'must be true or false' })
      .nullish()
      .meta({ description: 'Wait until every grant is GRANTED or FAILED (default true).' }),
  })
  .meta({ id: 'GrantEntitlementsStep', description: 'Grants a user entitlements.' });

/** The entitlement list of a step, evaluated: 1..50 maps of two non-empty ids, none twice. */
export function entitlementRefs(kind: string, value: unknown): EntitlementRef[] {
  const field = `${kind}.entitlements`;
  if (!Array.isArray(value) || value.length < 1 || value.length > MAX_STEP_ENTITLEMENTS)
    throw new StepError(
      `${field}: must evaluate to a list of 1..${MAX_STEP_ENTITLEMENTS} maps {"appId", "entitlementId"}, got ${describeValue(value)}${Array.isArray(value) ? ` of ${value.length}` : ''}`,
    );
  const seen = new Set<string>();
  const refs: EntitlementRef[] = [];
  value.forEach((item: unknown, index) => {
    const ok =
      isObject(item) &&
      typeof item.appId === 'string' &&
      item.appId.trim() !== '' &&
      typeof item.entitlementId === 'string' &&
      item.entitlementId.trim() !== '';
    if (!ok)
      throw new StepError(
        `${field}[${index}]: must be a map {"appId", "entitlementId"} of two non-empty strings, got ${describeValue(item)}`,
      );
    const ref = { appId: item.appId as string, entitlementId: item.entitlementId as string };
    const key = `${ref.appId}\u0000${ref.entitlementId}`;
    if (seen.has(key)) return;
    seen.add(key);
    refs.push(ref);
  });
  return refs;
}

/** A user id, evaluated. */
export function userIdOf(kind: string, value: unknown): string {
  if (typeof value !== 'string' || value.trim() === '')
    throw new StepError(`${kind}.userId: must evaluate to a user id (a non-empty string), got ${describeValue(value)}`);
  return value;
}

function request(values: Record<string, unknown>): GrantEntitlementsRequest {
  const { justification, duration } = values;
  if (justification !== undefined && (typeof justification !== 'string' || justification.length > 1000))
    throw new StepError(
      `grantEntitlements.justification: must evaluate to a string of at most 1000 characters, got ${describeValue(justification)}`,
    );
  return {
    userId: userIdOf('grantEntitlements', values.userId),
    entitlements: entitlementRefs('grantEntitlements', values.entitlements),
    ...(typeof duration === 'string' ? { duration } : {}),
    ...(typeof justification === 'string' ? { justification } : {}),
  };
}

export const grantEntitlementsEffect = defineEffect<GrantEntitlementsRequest | EffectExpressions | GrantCheck>()(
  'grantEntitlements',
  { firstAttemptLocal: true, fromValues: request },
);

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

/**
 * The wait between checks after `waitedMs` of waiting, having last waited `lastMs`: 1 s doubling to
 * 60 s, and 5 min once an hour has passed.
 */
export function nextCheckDelay(lastMs: number, waitedMs: number): number {
  if (waitedMs >= HOUR) return 5 * MINUTE;
  return lastMs === 0 ? SECOND : Math.min(lastMs * 2, MINUTE);
}

/** The grants of an effect's answer (none for the dry run's simulation, which answers its input). */
export function grantsOf(result: Record<string, unknown>, key = 'grants'): StepGrant[] {
  const list = result[key];
  return Array.isArray(list) ? (list as StepGrant[]) : [];
}

/** Waits (status WAITING) until `settled` holds for the effect's answer, checking with `check` between timers. */
export async function waitUntil(
  effects: Pick<StepEffects, 'park' | 'sleep'>,
  first: Record<string, unknown>,
  settled: (result: Record<string, unknown>) => boolean,
  check: (result: Record<string, unknown>) => Promise<Record<string, unknown>>,
  what: string,
): Promise<Record<string, unknown>> {
  let result = first;
  let last = 0;
  let waited = 0;
  while (!settled(result)) {
    effects.park('WAITING');
    last = nextCheckDelay(last, waited);
    await effects.sleep(last, what);
    waited += last;
    result = await check(result);
  }
  return result;
}

const SETTLED = new Set(['GRANTED', 'FAILED', 'REVOKED', 'DEPROVISIONING']);

export const grantEntitlements = defineStep({
  kind: 'grantEntitlements',
  retryable: true,
  schema,
  effect: grantEntitlementsEffect,
  async run(body, effects) {
    const expressions: Record<string, string> = { userId: body.userId, entitlements: body.entitlements };
    if (body.justification) expressions.justification = body.justification;
    // A literal, checked by the schema to be a duration (digits, a dot, an "s"): safe to quote as a CEL string.
    if (body.duration) expressions.duration = `'${body.duration}'`;
    let result = await effects.evaluateAndPerform(grantEntitlementsEffect, expressions, 'evaluate grantEntitlements');
    if (body.waitForProvisioning !== false)
      result = await waitUntil(
        effects,
        result,
        (r) => grantsOf(r).every((g) => SETTLED.has(g.state)),
        (r) => effects.perform(grantEntitlementsEffect, { check: grantsOf(r) }),
        'wait for provisioning',
      );
    const grants = grantsOf(result);
    const failed = grants.filter((g) => g.state === 'FAILED');
    if (failed.length > 0)
      throw new StepError(
        `grantEntitlements: ${failed.length} of ${grants.length} grants failed: ${failed
          .map((g) => `${g.appId}/${g.entitlementId}${g.error ? ` (${g.error})` : ''}`)
          .join('; ')}`,
      );
    return result;
  },
});
