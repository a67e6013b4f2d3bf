/**
 * Activities of flow control: a run asks its lane for a permit (when the API could not, or for a
 * rerun), and a lane asks which of its holders have closed. Both talk to Temporal through the
 * worker's own client; both are idempotent.
 */
import type { Client } from '@temporalio/client';
import { closedRuns, requestLanePermit, type LaneRequest } from '../src/temporal/lanes';

export function createLaneActivities(deps: { client?: Client }) {
  const client = (): Client => {
    if (!deps.client) throw new Error('this worker has no Temporal client for lanes');
    return deps.client;
  };
  return {
    /** Signal-with-start of the run's lane: `acquire` for this run. */
    async requestLanePermit(request: LaneRequest): Promise<void> {
      await requestLanePermit(client(), request);
    },
    /** The ids among `runIds` of runs that have closed. */
    async closedRuns(input: { runIds: string[] }): Promise<{ closed: string[] }> {
      return { closed: await closedRuns(client(), input.runIds) };
    },
  };
}
