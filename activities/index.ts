/**
 * Activities of the automation workflow, built from their dependencies so tests can pass a real
 * or a fake store: `worker.create({ activities: createActivities({ db }) })`.
 */
import type { Db } from '../src/store/db';
import { createOwnershipActivities } from './ownership';
import { createStepActivities } from './steps';

export type { EvaluateStepInput } from './steps';
export type { OwnershipRef, CreatedOwnership } from './ownership';
export { CEL_EVALUATION_FAILURE } from './steps';
export { OWNERSHIP_NOT_FOUND, OWNERSHIP_INVALID } from './ownership';

export function createActivities(deps: { db: Db }) {
  return {
    ...createStepActivities(),
    ...createOwnershipActivities(deps),
  };
}

export type AutomationActivities = ReturnType<typeof createActivities>;
