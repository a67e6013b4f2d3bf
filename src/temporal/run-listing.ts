/**
 * Runs across automations and the lanes of an automation, from visibility alone (no worker, no
 * history read): the filters of the runs list become one visibility query over the search
 * attributes every run carries (AutomationId; FlowQueue while QUEUED; ApprovalWait while a step
 * waits for approval) and Temporal's own ExecutionStatus and StartTime. A run's memo holds its
 * automation's name and, for a run admitted through a lane, its concurrency key (`queueKey`), which
 * the lanes read: the keys with queued runs, counted from the automation's running runs.
 */
import type { temporal } from '@temporalio/proto';
import type { RunFilter, RunStatus, LaneView } from '../domain/run-listing';

/** The memo field that holds a run's concurrency key value (set when it is started: src/temporal/runs.ts). */
export const QUEUE_KEY_MEMO = 'queueKey';

/** Visibility's ExecutionStatus values behind each status the API shows (a QUEUED run is Running with FlowQueue set). */
const STATUS_CLAUSES: Record<RunStatus, string> = {
  QUEUED: '(ExecutionStatus = "Running" AND FlowQueue = "QUEUED")',
  PAUSED: '(ExecutionStatus = "Running" AND FlowQueue = "PAUSED")',
  RUNNING: '(ExecutionStatus = "Running" AND FlowQueue IS NULL)',
  COMPLETED: 'ExecutionStatus = "Completed"',
  FAILED: 'ExecutionStatus IN ("Failed", "TimedOut")',
  CANCELED: 'ExecutionStatus = "Canceled"',
  TERMINATED: 'ExecutionStatus = "Terminated"',
};

/** A visibility query string literal. */
export function quote(value: string): string {
  return `"${value.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

/** The visibility query of a runs-list filter (automation runs only). */
export function runQuery(workflowType: string, filter: RunFilter): string {
  const clauses = [`WorkflowType = ${quote(workflowType)}`];
  if (filter.automationId !== undefined) clauses.push(`AutomationId = ${quote(filter.automationId)}`);
  if (filter.statuses && filter.statuses.length > 0)
    clauses.push(`(${filter.statuses.map((status) => STATUS_CLAUSES[status]).join(' OR ')})`);
  if (filter.waitingForApproval) clauses.push('ExecutionStatus = "Running" AND ApprovalWait IS NOT NULL');
  if (filter.startedAfter !== undefined) clauses.push(`StartTime >= ${quote(filter.startedAfter)}`);
  if (filter.startedBefore !== undefined) clauses.push(`StartTime < ${quote(filter.startedBefore)}`);
  return clauses.join(' AND ');
}

/** The query of an automation's running runs (the lanes count them by key). */
export function runningRunsQuery(workflowType: string, automationId: string): string {
  return `WorkflowType = ${quote(workflowType)} AND AutomationId = ${quote(automationId)} AND ExecutionStatus = "Running"`;
}

/** What the lanes need of one running run: its key (from its memo) and whether it is queued. */
export interface RunningRun {
  key: string | undefined;
  queued: boolean;
  startedAt: string;
}

/** The lanes of the keys that have queued runs, by key. */
export function lanesOf(runs: readonly RunningRun[]): LaneView[] {
  const lanes = new Map<string, LaneView>();
  for (const run of runs) {
    if (run.key === undefined) continue;
    const lane = lanes.get(run.key) ?? { key: run.key, running: 0, queued: 0, oldestQueuedAt: '' };
    if (run.queued) {
      lane.queued += 1;
      if (lane.oldestQueuedAt === '' || run.startedAt < lane.oldestQueuedAt) lane.oldestQueuedAt = run.startedAt;
    } else {
      lane.running += 1;
    }
    lanes.set(run.key, lane);
  }
  return [...lanes.values()]
    .filter((lane) => lane.queued > 0)
    .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}

export type WorkflowInfo = temporal.api.workflow.v1.IWorkflowExecutionInfo;
