/**
 * Activities of flow control: a run asks its lane for a permit (when the API could not, or for a
 * rerun), and a lane asks which of its holders have closed. Both go through the lanes port
 * (src/contract/lanes.ts, implemented on the worker's Temporal client); both are idempotent.
 */
import type { LaneRequest, Lanes } from '../src/contract/lanes';

export function createLaneActivities(deps: { lanes?: Lanes }) {
  const lanes = (): Lanes => {
    if (!deps.lanes) throw new Error('this worker has no Temporal client for lanes');
    return deps.lanes;
  };
  return {
    /** Signal-with-start of the run's lane: `acquire` for this run. */
    async requestLanePermit(request: LaneRequest): Promise<void> {
      await lanes().requestPermit(request);
    },
    /** The ids among `runIds` of runs that have closed. */
    async closedRuns(input: { runIds: string[] }): Promise<{ closed: string[] }> {
      return { closed: await lanes().closedRuns(input.runIds) };
    },
  };
}
