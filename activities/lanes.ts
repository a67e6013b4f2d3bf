/**
 * Activities of flow control: a run asks its lane for a permit (when the API could not, or for a
 * rerun), a lane asks which of its holders have closed (both through the run engine, on the
 * worker's Temporal client), and a run that ends gives back its place in the queue's bound (the
 * store). All are idempotent.
 */
import type { LaneRequest } from '../src/contract/lanes';
import type { RunEngine } from '../src/domain/engine';
import type { Db } from '../src/store/db';
import { freeLanePlaces } from '../src/store/lane-places';

export function createLaneActivities(deps: { engine: RunEngine; db: Db }) {
  return {
    /** Signal-with-start of the run's lane: `acquire` for this run. */
    async requestLanePermit(request: LaneRequest): Promise<void> {
      await deps.engine.requestLanePermit(request);
    },
    /** The ids among `runIds` of runs that have closed. */
    async closedRuns(input: { runIds: string[] }): Promise<{ closed: string[] }> {
      return { closed: await deps.engine.closedRuns(input.runIds) };
    },
    /** Frees the run's place in its lane (src/store/lane-places.ts); a place already freed changes nothing. */
    async releaseLanePlace(input: { lane: string; runId: string }): Promise<void> {
      await freeLanePlaces(deps.db, input.lane, [input.runId]);
    },
  };
}
