/**
 * `revokeEntitlements`: takes access back from a user → output `{"revoked": [{"grantId", "appId",
 * "entitlementId", "state"}], "notGranted": [{"appId", "entitlementId"}]}`. Either `entitlements`
 * (CEL giving a list of 1..50 maps `{"appId", "entitlementId"}`) or `all: true` — every
 * `PROVISIONING` or `GRANTED` grant of the user (of `appId` when given) that is not a delegated
 * child (children go with their parent); `DEPROVISIONING` ones are listed unchanged. Asking to
 * revoke what the user does not hold is not an error: `notGranted` says so. By default the step
 * waits (status WAITING, a durable timer between checks) until each grant is `REVOKED`; one whose
 * deprovision fails keeps the step waiting, and the console's Tasks page offers its Retry.
 */
import { z } from 'zod';
import { celSchema, defineEffect, defineStep, describeValue, type EffectExpressions } from './kind';
import { entitlementRefs, grantsOf, userIdOf, waitUntil, type EntitlementRef } from './grant-entitlements';
import { StepError } from '../errors';

/** What the activity revokes, from the evaluated fields. */
export interface RevokeEntitlementsRequest {
  userId: string;
  /** The entitlements to revoke; absent: all the user's (of `appId` when given). */
  entitlements?: EntitlementRef[];
  appId?: string;
  reason: string;
}

/** One grant the step revoked or found being revoked. */
export interface RevokedGrant extends EntitlementRef {
  grantId: string;
  state: string;
}

/** The check between waits: the grants the first call revoked, to read again. */
export interface RevokeCheck {
  check: RevokedGrant[];
  notGranted: EntitlementRef[];
}

const schema = z
  .object({
    userId: celSchema().meta({ description: 'CEL giving the id of the user whose access is taken back.' }),
    entitlements: celSchema().nullish().meta({
      description: 'CEL giving a list of 1..50 maps {"appId", "entitlementId"} (exactly one of this and all).',
    }),
    all: z.literal(true, { error: 'must be true (or absent)' }).nullish().meta({
      description: 'Revoke every grant of the user (of appId when given); exactly one of this and entitlements.',
    }),
    appId: celSchema().nullish().meta({ description: 'With all: CEL giving the app whose grants are revoked.' }),
    reason: celSchema().meta({ description: 'CEL giving the reason the grants record (1..500 characters).' }),
    waitForDeprovisioning: z
      .boolean({ error: 'must be true or false' })
      .nullish()
      .meta({ description: 'Wait until every revoked grant is REVOKED (default true).' }),
  })
  .superRefine((body, ctx) => {
    const both = Boolean(body.entitlements) && body.all === true;
    const neither = !body.entitlements && body.all !== true;
    if (both || neither)
      ctx.addIssue({
        code: 'custom',
        path: [both ? 'all' : 'entitlements'],
        message: `exactly one of entitlements and all (${both ? 'both are set' : 'neither is set'})`,
      });
    if (body.appId && body.all !== true)
      ctx.addIssue({ code: 'custom', path: ['appId'], message: 'applies only with all: true' });
  })
  .meta({ id: 'RevokeEntitlementsStep', description: "Takes back a user's grants." });

function request(values: Record<string, unknown>): RevokeEntitlementsRequest {
  const { reason, appId } = values;
  if (typeof reason !== 'string' || reason.trim() === '' || reason.length > 500)
    throw new StepError(
      `revokeEntitlements.reason: must evaluate to a string of 1..500 characters, got ${describeValue(reason)}`,
    );
  if (appId !== undefined && (typeof appId !== 'string' || appId.trim() === ''))
    throw new StepError(`revokeEntitlements.appId: must evaluate to an app id, got ${describeValue(appId)}`);
  return {
    userId: userIdOf('revokeEntitlements', values.userId),
    ...('entitlements' in values ? { entitlements: entitlementRefs('revokeEntitlements', values.entitlements) } : {}),
    ...(typeof appId === 'string' ? { appId } : {}),
    reason,
  };
}

export const revokeEntitlementsEffect = defineEffect<RevokeEntitlementsRequest | EffectExpressions | RevokeCheck>()(
  'revokeEntitlements',
  { firstAttemptLocal: true, fromValues: request },
);

export const revokeEntitlements = defineStep({
  kind: 'revokeEntitlements',
  retryable: true,
  schema,
  effect: revokeEntitlementsEffect,
  async run(body, effects) {
    const expressions: Record<string, string> = { userId: body.userId, reason: body.reason };
    if (body.entitlements) expressions.entitlements = body.entitlements;
    if (body.appId) expressions.appId = body.appId;
    let result = await effects.evaluateAndPerform(revokeEntitlementsEffect, expressions, 'evaluate revokeEntitlements');
    if (body.waitForDeprovisioning !== false)
      result = await waitUntil(
        effects,
        result,
        (r) => grantsOf(r, 'revoked').every((g) => g.state === 'REVOKED'),
        (r) =>
          effects.perform(revokeEntitlementsEffect, {
            check: grantsOf(r, 'revoked') as unknown as RevokedGrant[],
            notGranted: (r.notGranted as EntitlementRef[] | undefined) ?? [],
          }),
        'wait for deprovisioning',
      );
    return result;
  },
});
