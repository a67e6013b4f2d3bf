/**
 * Activities of a grant's workflow (workflows/grant.ts): provision, expire, deprovision. Each reads
 * the grant's row under its lock and acts only from the state it expects, so a retry after a
 * worker crash (the call made, its record not yet written) changes nothing twice.
 */
import type { Db } from '../src/store/db';
import { deprovisionGrant, expireGrant, provisionGrant } from '../src/domain/grants';
import type { GrantActivities } from '../src/contract/activities';

export function createGrantActivities(deps: {
  db: Db;
}): Pick<GrantActivities, 'provisionGrant' | 'expireGrant' | 'deprovisionGrant'> {
  return {
    provisionGrant: (input) => provisionGrant(deps.db, input.grantId),
    expireGrant: (input) => expireGrant(deps.db, input.grantId),
    deprovisionGrant: (input) => deprovisionGrant(deps.db, input.grantId, input.attempt ?? 1),
  };
}
