/**
 * Activities of the automation workflow, built from their dependencies so tests can pass a real
 * or a fake store: `worker.create({ activities: createActivities({ db, allowPrivateOutbound }) })`.
 * Configuration comes in through `deps` (from `loadConfig`), never from the environment.
 */
import type { Db } from '../src/store/db';
import type { SecretBox } from '../src/crypto/secret-box';
import { createCallWebhookActivities } from './call-webhook';
import { createOwnershipActivities } from './owners';
import { createUserActivities } from './users';
import { createAccessActivities } from './access';
import { createStepActivities } from './steps';
import { createLaneActivities } from './lanes';
import { createNotifyActivities } from './notify';
import { createBulkActionActivities } from './bulk-actions';
import { createGrantActivities } from './grants';
import { createProvisioningWebhookActivities } from './provisioning-webhook';
import { createScheduleActivities } from './schedules';
import type { RunEngine } from '../src/domain/engine';
import type { AutomationActivities } from '../src/contract/activities';

export type {
  EvaluateStepInput,
  OwnershipRef,
  OwnershipInput,
  CreatedOwnership,
  CallWebhookInput,
  CallWebhookOutput,
} from '../src/contract/activities';
export { CEL_EVALUATION_FAILURE } from './steps';
export { OWNERSHIP_NOT_FOUND, OWNERSHIP_INVALID } from './owners';
export {
  CALL_WEBHOOK_HTTP_ERROR,
  CALL_WEBHOOK_NETWORK_ERROR,
  CALL_WEBHOOK_REFUSED,
  CALL_WEBHOOK_RESPONSE_TOO_LARGE,
  CALL_WEBHOOK_SECRET_MISSING,
  CALL_WEBHOOK_SECRET_ORIGIN_REFUSED,
  CALL_WEBHOOK_SECRET_UNAVAILABLE,
  MAX_RESPONSE_BYTES,
} from './call-webhook';

export interface ActivityDeps {
  db: Db;
  /**
   * ALLOW_PRIVATE_OUTBOUND: callWebhook steps may reach `http://` and loopback/private addresses
   * (development and tests only); link-local and metadata addresses stay refused.
   */
  allowPrivateOutbound: boolean;
  /** Opens named outbound secrets (`secrets.<name>` in callWebhook headers); without it such a header fails its step. */
  secretBox?: SecretBox;
  /** The run engine on the worker's Temporal client: the lanes of flow control, acting on runs for bulk actions. */
  engine: RunEngine;
  /** BASE_URL: the origin of provisioning webhooks' callback URLs (without it a call offers no callback). */
  baseUrl?: string;
}

/** Every activity the workflows call; `satisfies` fails the build when a declared effect has none. */
export function createActivities(deps: ActivityDeps) {
  return {
    ...createStepActivities({ db: deps.db }),
    ...createLaneActivities({ engine: deps.engine, db: deps.db }),
    ...createOwnershipActivities({ db: deps.db }),
    ...createUserActivities({ db: deps.db }),
    ...createAccessActivities({ db: deps.db, engine: deps.engine }),
    ...createCallWebhookActivities({
      allowPrivateOutbound: deps.allowPrivateOutbound,
      db: deps.db,
      ...(deps.secretBox ? { secretBox: deps.secretBox } : {}),
    }),
    ...createNotifyActivities({
      allowPrivateOutbound: deps.allowPrivateOutbound,
      db: deps.db,
      ...(deps.secretBox ? { secretBox: deps.secretBox } : {}),
    }),
    ...createBulkActionActivities({ db: deps.db, engine: deps.engine }),
    ...createGrantActivities({ db: deps.db, engine: deps.engine }),
    ...createScheduleActivities({ db: deps.db, engine: deps.engine }),
    ...createProvisioningWebhookActivities({
      db: deps.db,
      engine: deps.engine,
      allowPrivateOutbound: deps.allowPrivateOutbound,
      ...(deps.secretBox ? { secretBox: deps.secretBox } : {}),
      ...(deps.baseUrl ? { baseUrl: deps.baseUrl } : {}),
    }),
  } satisfies AutomationActivities;
}
