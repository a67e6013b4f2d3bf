/**
 * Activities of the automation workflow, built from their dependencies so tests can pass a real
 * or a fake store: `worker.create({ activities: createActivities({ db }) })`.
 *
 * `allowInsecureOutbound` lets callWebhook steps reach `http://` and loopback/private addresses
 * (development and tests only); by default it follows ALLOW_INSECURE_JWKS in the environment.
 */
import type { Db } from '../src/store/db';
import { createCallWebhookActivities } from './call-webhook';
import { createOwnershipActivities } from './ownership';
import { createStepActivities } from './steps';

export type { EvaluateStepInput } from './steps';
export type { OwnershipRef, OwnershipInput, CreatedOwnership } from './ownership';
export type { CallWebhookInput, CallWebhookOutput } from './call-webhook';
export { CEL_EVALUATION_FAILURE } from './steps';
export { OWNERSHIP_NOT_FOUND, OWNERSHIP_INVALID } from './ownership';
export {
  CALL_WEBHOOK_HTTP_ERROR,
  CALL_WEBHOOK_NETWORK_ERROR,
  CALL_WEBHOOK_REFUSED,
  CALL_WEBHOOK_RESPONSE_TOO_LARGE,
  MAX_RESPONSE_BYTES,
} from './call-webhook';

export interface ActivityDeps {
  db: Db;
  /** Default: ALLOW_INSECURE_JWKS in the environment is true (`true`, `1` or `yes`, as config.ts reads it). */
  allowInsecureOutbound?: boolean;
}

export function createActivities(deps: ActivityDeps) {
  const allowInsecureOutbound = deps.allowInsecureOutbound ?? /^(true|1|yes)$/i.test((process.env.ALLOW_INSECURE_JWKS ?? '').trim());
  return {
    ...createStepActivities({ db: deps.db }),
    ...createOwnershipActivities({ db: deps.db }),
    ...createCallWebhookActivities({ allowInsecureOutbound }),
  };
}

export type AutomationActivities = ReturnType<typeof createActivities>;
