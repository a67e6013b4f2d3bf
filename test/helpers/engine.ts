/**
 * A run engine for tests that run without Temporal: every call answers as an unreachable engine
 * does (WorkflowEngineUnavailableError: the API's 503). A test that needs one call to answer
 * otherwise spreads this and replaces that call.
 */
import type { RunEngine } from '../../src/domain/engine';
import { WorkflowEngineUnavailableError } from '../../src/errors';

const unavailable = async (): Promise<never> => {
  throw new WorkflowEngineUnavailableError('no workflow engine in this test');
};

export function unavailableEngine(): RunEngine {
  return {
    ping: unavailable,
    start: unavailable,
    requestLanePermit: unavailable,
    runsGone: unavailable,
    recordedQueue: unavailable,
    runOf: unavailable,
    get: unavailable,
    input: unavailable,
    state: unavailable,
    list: unavailable,
    search: unavailable,
    lanes: unavailable,
    decide: unavailable,
    cancel: unavailable,
    terminate: unavailable,
    resume: unavailable,
    closedRuns: unavailable,
    count: unavailable,
    matchIds: unavailable,
    payloads: unavailable,
    startBulkAction: unavailable,
    startGrant: unavailable,
    signalGrant: unavailable,
    putSchedule: unavailable,
    deleteSchedule: unavailable,
    describeSchedule: unavailable,
    scheduledAutomations: unavailable,
    scheduleTimes: unavailable,
    startScheduleActions: unavailable,
    childRunOptions: () => {
      throw new WorkflowEngineUnavailableError('no workflow engine in this test');
    },
  };
}

/** Used where a test runs without Temporal. */
export const NO_TEMPORAL: RunEngine = unavailableEngine();
