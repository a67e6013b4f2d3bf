/**
 * Activities of a grant's workflow (workflows/grant.ts): provision, expire, deprovision. Each reads
 * the grant's row under its lock and acts only from the state it expects, so a retry after a
 * worker crash (the call made, its record not yet written) changes nothing twice.
 *
 * The API starts a grant's workflow inside the transaction that writes the grant (so that a start
 * the engine refused writes nothing): the first activity can run before that transaction commits.
 * A grant not found yet is retried for a while; one still missing then was never committed.
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { Db } from '../src/store/db';
import { findGrant } from '../src/store/grants';
import {
  delegationOutcome,
  deprovisionGrant,
  expireGrant,
  provisionGrant,
  type GrantEngine,
} from '../src/domain/grants';
import type { GrantActivities } from '../src/contract/activities';

/** Attempts (1 s doubling to 1 min apart: about 10 minutes) before a grant not found counts as never committed. */
const UNCOMMITTED_ATTEMPTS = 15;
export const GRANT_NOT_COMMITTED = 'GrantNotCommitted';

export function createGrantActivities(deps: {
  db: Db;
  engine: GrantEngine;
}): Pick<GrantActivities, 'provisionGrant' | 'expireGrant' | 'deprovisionGrant' | 'checkDelegation'> {
  return {
    async provisionGrant(input) {
      if (!(await findGrant(deps.db, input.grantId)) && Context.current().info.attempt < UNCOMMITTED_ATTEMPTS) {
        throw ApplicationFailure.create({
          type: GRANT_NOT_COMMITTED,
          message: `grant ${input.grantId} is not in the store (yet)`,
        });
      }
      return provisionGrant(deps.db, deps.engine, input.grantId);
    },
    expireGrant: (input) => expireGrant(deps.db, deps.engine, input.grantId),
    deprovisionGrant: (input) => deprovisionGrant(deps.db, deps.engine, input.grantId, input.attempt ?? 1),
    checkDelegation: async ({ grantId, ...call }) => ({ outcome: await delegationOutcome(deps.db, grantId, call) }),
  };
}
