/**
 * The run engine: everything the service asks of the workflow engine, in one port. The domain
 * declares it; src/temporal implements it once (`createTemporalEngine`), and the composition root
 * and the worker both build it there. Its calls are mechanics — start a workflow, read one back,
 * signal, cancel — and their answers are records of the domain (src/domain/runs.ts), never HTTP
 * views; the rules about runs (what a rerun starts, how many, which outcome a bulk action records)
 * are the domain's, in the modules that use these calls.
 *
 * Every call throws WorkflowEngineUnavailableError when the engine cannot be reached in time.
 * Sections, in the order a run meets them: starting, the delivery's own calls (flow control's
 * part, `FlowEngine`), reading, controlling, lanes, bulk actions. Grants and schedules add their
 * engine calls here, as sections of their own.
 */
import type { AutomationRunInput, DecideInput } from '../contract/run';
import type { LaneRequest } from '../contract/lanes';
import type { GrantSignal } from '../contract/workflows';
import type { PreparedScheduledRun } from '../contract/activities';
import type { OverlapPolicy, ScheduleTrigger } from '../triggers';
import type { FlowEngine } from '../flow';
import type { LaneView, RunFilter } from './run-listing';
import type { RunListEntry, RunRecord, RunStatus, RunSummary } from './runs';

/** How a run is started: its id, its input, and what operators see of it in the Web UI. */
export interface RunStart {
  /** The run's id (its workflow id; the HTTP API's `executionId`): refused when used before, within retention. */
  runId: string;
  input: AutomationRunInput;
  /** The automation's display name (the run's memo and summary). */
  automationName: string;
  /** The Web UI's line for the run, after the automation and version (`event …`, `rerun 2 of …`). */
  summary: string;
  /** A rerun or retry: the run it repeats (shown in its detail). */
  rerunOf?: string;
  /** A retry from the failed step: the run whose call keys its calls carry. */
  callKeysOf?: { workflowId: string; runId: string };
  /** A bulk action's rerun: the bulk action. */
  bulkActionId?: string;
}

/** One page of runs and the engine's token of the next (undefined on the last page). */
export interface RunPage<T> {
  runs: T[];
  nextPageToken: Uint8Array | undefined;
}

/** A run's state as the engine tells it: open (RUNNING, whether held or not) or how it closed. */
export type RunState = Extract<RunStatus, 'RUNNING' | 'COMPLETED' | 'FAILED' | 'CANCELED' | 'TERMINATED'>;

/** What a cancel request did: refused (the run is not running), or accepted, and how the run closed when it was waited for. */
export type CancelOutcome =
  | { accepted: false }
  | {
      accepted: true;
      /** With `waitMs`: how and when (engine time, epoch ms) the run closed, or undefined when it did not close in time. */
      closed?: { state: RunState; atMs: number };
    };

/** What visibility can match of one automation's runs: statuses and start time. */
export interface RunMatch {
  automationId: string;
  statuses: readonly RunStatus[];
  startedAfter: string | undefined;
  startedBefore: string | undefined;
}

export interface RunEngine extends FlowEngine {
  /** Resolves when the engine answers (readiness checks); rejects otherwise. */
  ping(): Promise<void>;

  // ---------------------------------------------------------------- starting runs

  /** Starts the run once the engine has durably accepted it; 'exists' when its id was used before. */
  start(run: RunStart): Promise<'started' | 'exists'>;

  // ---------------------------------------------------------------- reading runs

  /** One run with its steps, or undefined when no automation run has this id (unknown, another type, past retention). */
  get(runId: string): Promise<RunRecord | undefined>;
  /** The input a run was started with (the first event of its history); undefined for an unknown run. */
  input(runId: string): Promise<AutomationRunInput | undefined>;
  /** Whether the run is open or how it closed; undefined for an unknown run. */
  state(runId: string): Promise<RunState | undefined>;
  /** The runs of one automation, newest first. */
  list(automationId: string, pageSize: number, pageToken: Uint8Array | undefined): Promise<RunPage<RunSummary>>;
  /** The runs of every automation that match the filter (open runs first, newest first). */
  search(filter: RunFilter, pageSize: number, pageToken: Uint8Array | undefined): Promise<RunPage<RunListEntry>>;
  /** The lanes of the automation's concurrency keys that have queued runs, by key. */
  lanes(automationId: string): Promise<LaneView[]>;

  // ---------------------------------------------------------------- controlling runs

  /**
   * Records a person's decision on a waiting step; resolves once the run has moved past it.
   * NotFoundError for an unknown step, FailedPreconditionError when it is not waiting or the run closed.
   */
  decide(runId: string, decision: DecideInput): Promise<void>;
  /**
   * Asks the run to stop (a pending wait ends, later steps do not run). `requestId` makes a repeat
   * the same request; with `waitMs` the answer says how the run closed, waiting at most that long.
   */
  cancel(runId: string, options?: { requestId?: string; reason?: string; waitMs?: number }): Promise<CancelOutcome>;
  /** Ends the run at once; false when it is not running (closed or unknown). */
  terminate(runId: string, reason: string): Promise<boolean>;
  /** Lets a run the circuit breaker paused go; 'closed' when it is not running, 'unknown' when no such run (yet). */
  resume(runId: string, signal: { laneRequested: boolean }): Promise<'sent' | 'closed' | 'unknown'>;

  // ---------------------------------------------------------------- lanes of flow control

  /** Of `runIds`, those that are closed (or unknown: past retention, never started). */
  closedRuns(runIds: string[]): Promise<string[]>;

  // ---------------------------------------------------------------- bulk actions

  /** How many runs visibility matches (QUEUED and PAUSED count as running there). */
  count(match: RunMatch): Promise<number>;
  /** The ids of the matched runs, newest first, at most `max` + 1 (one more says "too many"). */
  matchIds(match: RunMatch, max: number): Promise<string[]>;
  /** Each run's payload (`ctx.trigger`); a run whose input cannot be read is missing. */
  payloads(runIds: readonly string[]): Promise<Map<string, unknown>>;
  /** Starts the bulk action's workflow (once per id: a second start changes nothing). */
  startBulkAction(bulkActionId: string): Promise<void>;

  // ---------------------------------------------------------------- grants

  /** Starts the grant's workflow (its id derived from the grant's; a second start changes nothing). */
  startGrant(grantId: string): Promise<void>;
  /**
   * Tells the grant's workflow of a change (signal-with-start: a workflow that is not running is
   * started again, and reads the grant's state from the store).
   */
  signalGrant(grantId: string, signal: GrantSignal): Promise<void>;

  // ---------------------------------------------------------------- schedules

  /** Makes the automation's Schedule what the definition says (created, updated, paused, resumed); a repeat changes nothing. */
  putSchedule(definition: ScheduleDefinition): Promise<void>;
  /** Removes the automation's Schedule (none: nothing happens). */
  deleteSchedule(automationId: string): Promise<void>;
  /** The Schedule's next times and pause, or undefined when the automation has none. */
  describeSchedule(automationId: string, count: number): Promise<ScheduleState | undefined>;
  /** The automations that have a Schedule (reconciliation). */
  scheduledAutomations(): Promise<string[]>;
  /**
   * The times the Schedule fires at `startAt` ≤ t < `endAt` (the server's computation; RFC 3339,
   * ascending); with `limit`, it may stop reading once it has more than that many.
   */
  scheduleTimes(automationId: string, startAt: Date, endAt: Date, limit?: number): Promise<string[]>;
  /**
   * Starts the actions of a backfill or a manual trigger, one per time (its id as the Schedule's
   * own action of that time would have): with an overlap other than ALLOW_ALL, one after another.
   */
  startScheduleActions(
    automationId: string,
    times: readonly string[],
    kind: 'backfill' | 'manual',
    overlap: OverlapPolicy,
  ): Promise<void>;
  /** The start options of a run that a schedule's action starts as its child (as `start` would start it). */
  childRunOptions(run: RunStart): PreparedScheduledRun;
}

/** A wall-clock minute in a schedule's time zone (a daylight-saving correction leaves it out). */
export interface WallTime {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
}

/**
 * What an automation's Temporal Schedule is made of: the trigger, and the corrections that make a
 * daylight-saving change fire as the contract says (src/domain/schedule-dst.ts): wall-clock times
 * the zone's Schedule leaves out, and instants a second Schedule (in UTC) fires instead.
 */
export interface ScheduleDefinition {
  automationId: string;
  automationName: string;
  trigger: ScheduleTrigger;
  corrections: { skip: WallTime[]; add: string[] };
}

/** What the engine tells of a Schedule: the next times it fires (both Schedules merged) and whether it is paused. */
export interface ScheduleState {
  nextRuns: string[];
  paused: boolean;
}

export type { LaneRequest };
