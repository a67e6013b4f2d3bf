/**
 * The callWebhook activity's origin check (src/domain/secret-origins.ts): before any secret a
 * request reads is opened, every one of them must allow the origin the request goes to. A secret
 * that does not exist is left to the caller (it fails the step naming the secret). Messages name
 * the field, the secret and the origin, never a value.
 */
import { ApplicationFailure } from '@temporalio/common';
import { allowedOriginsOf, originRefusal, refusedSecret } from '../src/domain/secret-origins';
import type { Queryable } from '../src/store/db';

/** A request reads a secret that may not be sent to its origin (`allowedOrigins`): nothing is sent; not retried. */
export const CALL_WEBHOOK_SECRET_ORIGIN_REFUSED = 'CallWebhookSecretOriginRefused';

/** One read of a secret by a request: the secret's name and where it is read (`headers.Authorization`). */
export interface SecretUse {
  name: string;
  field: string;
}

/** Throws a non-retryable CallWebhookSecretOriginRefused for the first use whose secret does not allow `origin`. */
export async function checkSecretOrigins(db: Queryable, origin: string, uses: readonly SecretUse[]): Promise<void> {
  const originsOf = await allowedOriginsOf(db, [...new Set(uses.map((use) => use.name))]);
  for (const use of uses) {
    const allowed = originsOf.get(use.name);
    if (allowed === undefined || refusedSecret(origin, [use.name], originsOf) === undefined) continue;
    throw ApplicationFailure.create({
      type: CALL_WEBHOOK_SECRET_ORIGIN_REFUSED,
      message: `callWebhook: ${use.field}: ${originRefusal(use.name, origin, allowed)}`,
      nonRetryable: true,
      details: [{ secret: use.name, field: use.field, origin }],
    });
  }
}
