/**
 * Activities of flow control: a run asks its lane for a permit (when the API could not, or for a
 * rerun), and a lane asks which of its holders have closed. Both go through the run engine (on the
 * worker's Temporal client); both are idempotent.
 */
import type { LaneRequest } from '../src/contract/lanes';
import type { RunEngine } from '../src/domain/engine';

export function createLaneActivities(deps: { engine: RunEngine }) {
  return {
    /** Signal-with-start of the run's lane: `acquire` for this run. */
    async requestLanePermit(request: LaneRequest): Promise<void> {
      await deps.engine.requestLanePermit(request);
    },
    /** The ids among `runIds` of runs that have closed. */
    async closedRuns(input: { runIds: string[] }): Promise<{ closed: string[] }> {
      return { closed: await deps.engine.closedRuns(input.runIds) };
    },
  };
}
