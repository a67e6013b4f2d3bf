/**
 * Runs as Temporal's visibility answers them (no worker, no history read): the filters of the runs
 * list and of a bulk action become one visibility query over the search attributes every run
 * carries (AutomationId, WebhookEventId; FlowQueue while QUEUED or PAUSED; ApprovalWait while a
 * step waits for approval) and Temporal's own ExecutionStatus and StartTime; an entry becomes a
 * run summary. A run's memo holds its automation's name, its version and, for a run admitted
 * through a lane, its concurrency key (`queueKey`), which the lanes read: the keys with queued
 * runs, counted from the automation's running runs; and, by step id, what the approver of each
 * waitForApproval step reads (`approvals`, from the `approval-context` patch).
 */
import { temporal } from '@temporalio/proto';
import { ApprovalWaitKey, AUTOMATION_WORKFLOW, FlowQueueKey } from '../contract/workflows';
import { APPROVALS_MEMO } from '../contract/run';
import type { ApprovalContext } from '../steps';
import type { LaneView, RunFilter } from '../domain/run-listing';
import type { RunMatch } from '../domain/engine';
import type { RunListEntry, RunStatus, RunSummary } from '../domain/runs';
import { AutomationIdKey, WebhookEventIdKey } from './search-attributes';
import { decode, numberOrNull, timestamp } from './payloads';

export type WorkflowInfo = temporal.api.workflow.v1.IWorkflowExecutionInfo;

/** The memo field that holds a run's concurrency key value (set when it is started: src/temporal/engine.ts). */
export const QUEUE_KEY_MEMO = 'queueKey';

/** The approvals a run's memo holds, by step id; a malformed entry is left out. */
export function approvalsOf(memo: unknown): Map<string, ApprovalContext> {
  const approvals = new Map<string, ApprovalContext>();
  if (typeof memo !== 'object' || memo === null) return approvals;
  const time = (value: unknown): value is string => typeof value === 'string' && !Number.isNaN(Date.parse(value));
  for (const [stepId, raw] of Object.entries(memo as Record<string, unknown>)) {
    if (typeof raw !== 'object' || raw === null) continue;
    const { title, details, requestedAt, deadline } = raw as Record<string, unknown>;
    if (typeof title !== 'string' || !Array.isArray(details) || !time(requestedAt)) continue;
    if (deadline !== null && !time(deadline)) continue;
    const shown = details.filter(
      (d): d is { label: string; value: string } =>
        typeof d === 'object' && d !== null && typeof d.label === 'string' && typeof d.value === 'string',
    );
    approvals.set(stepId, {
      title,
      details: shown.map(({ label, value }) => ({ label, value })),
      requestedAt,
      deadline,
    });
  }
  return approvals;
}

/** A visibility query string literal. */
export function quote(value: string): string {
  return `"${value.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

// ---------------------------------------------------------------- queries

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

/** The query of one automation's runs (the executions list of an automation). */
export function automationRunsQuery(automationId: string): string {
  return `AutomationId = ${quote(automationId)}`;
}

/** The visibility query of a runs-list filter (automation runs only). */
export function runQuery(filter: RunFilter): string {
  const clauses = [`WorkflowType = ${quote(AUTOMATION_WORKFLOW)}`];
  if (filter.automationId !== undefined) clauses.push(`AutomationId = ${quote(filter.automationId)}`);
  if (filter.statuses && filter.statuses.length > 0)
    clauses.push(`(${filter.statuses.map((status) => STATUS_CLAUSES[status]).join(' OR ')})`);
  if (filter.waitingForApproval) clauses.push('ExecutionStatus = "Running" AND ApprovalWait IS NOT NULL');
  if (filter.startedAfter !== undefined) clauses.push(`StartTime >= ${quote(filter.startedAfter)}`);
  if (filter.startedBefore !== undefined) clauses.push(`StartTime < ${quote(filter.startedBefore)}`);
  if (filter.eventId !== undefined) clauses.push(`WebhookEventId = ${quote(filter.eventId)}`);
  if (filter.q !== undefined) {
    // Visibility compares as written: the prefix as typed and in lower case (ids are mostly lower case).
    const prefixes = [...new Set([filter.q, filter.q.toLowerCase()])];
    const matches = prefixes.flatMap((p) => [
      `WorkflowId STARTS_WITH ${quote(p)}`,
      `WebhookEventId STARTS_WITH ${quote(p)}`,
    ]);
    clauses.push(`(${matches.join(' OR ')})`);
  }
  return clauses.join(' AND ');
}

/** The query of an automation's running runs (the lanes count them by key). */
export function runningRunsQuery(automationId: string): string {
  return `WorkflowType = ${quote(AUTOMATION_WORKFLOW)} AND AutomationId = ${quote(automationId)} AND ExecutionStatus = "Running"`;
}

/** Temporal's statuses behind each status a bulk action may match (QUEUED, PAUSED and RUNNING are told apart after). */
const TEMPORAL_STATUSES: Record<RunStatus, string[]> = {
  QUEUED: ['Running'],
  PAUSED: ['Running'],
  RUNNING: ['Running'],
  COMPLETED: ['Completed'],
  FAILED: ['Failed', 'TimedOut'],
  CANCELED: ['Canceled'],
  TERMINATED: ['Terminated'],
};

/** The visibility query of a bulk action's match (statuses folded into Temporal's; QUEUED/PAUSED/RUNNING told apart after). */
export function matchQuery(match: RunMatch): string {
  const parts = [
    `WorkflowType = ${quote(AUTOMATION_WORKFLOW)}`,
    `${AutomationIdKey.name} = ${quote(match.automationId)}`,
  ];
  const statuses = [...new Set(match.statuses.flatMap((status) => TEMPORAL_STATUSES[status]))];
  if (statuses.length > 0)
    parts.push(`(${statuses.map((status) => `ExecutionStatus = ${quote(status)}`).join(' OR ')})`);
  if (match.startedAfter) parts.push(`StartTime > ${quote(new Date(match.startedAfter).toISOString())}`);
  if (match.startedBefore) parts.push(`StartTime < ${quote(new Date(match.startedBefore).toISOString())}`);
  return parts.join(' AND ');
}

// ---------------------------------------------------------------- statuses

/**
 * Temporal's workflow statuses in the API's: a paused or continued-as-new run goes on (RUNNING), a
 * timed-out one failed (FAILED); cancelled (CANCELED) and terminated (TERMINATED) runs were
 * stopped from outside.
 */
export function executionStatus(name: string): 'RUNNING' | 'COMPLETED' | 'FAILED' | 'CANCELED' | 'TERMINATED' {
  switch (name) {
    case 'COMPLETED':
      return 'COMPLETED';
    case 'FAILED':
    case 'TIMED_OUT':
      return 'FAILED';
    case 'CANCELLED':
      return 'CANCELED';
    case 'TERMINATED':
      return 'TERMINATED';
    default:
      return 'RUNNING';
  }
}

/** A running run's FlowQueue search attribute: QUEUED in its lane, PAUSED by the circuit breaker. */
export function heldStatus(value: unknown): 'QUEUED' | 'PAUSED' | undefined {
  return value === 'QUEUED' || value === 'PAUSED' ? value : undefined;
}

const STATUS_NAMES: Record<number, string> = {
  [temporal.api.enums.v1.WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_RUNNING]: 'RUNNING',
  [temporal.api.enums.v1.WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_COMPLETED]: 'COMPLETED',
  [temporal.api.enums.v1.WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_FAILED]: 'FAILED',
  [temporal.api.enums.v1.WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_TIMED_OUT]: 'TIMED_OUT',
  [temporal.api.enums.v1.WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_TERMINATED]: 'TERMINATED',
  [temporal.api.enums.v1.WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_CANCELED]: 'CANCELLED',
  [temporal.api.enums.v1.WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW]: 'CONTINUED_AS_NEW',
};

/** A visibility entry's status as the API names it (before QUEUED and PAUSED are told apart by FlowQueue). */
export function visibilityStatus(code: temporal.api.enums.v1.WorkflowExecutionStatus | null | undefined) {
  return executionStatus(STATUS_NAMES[Number(code ?? 0)] ?? 'RUNNING');
}

// ---------------------------------------------------------------- entries

export function summaryFromVisibility(raw: WorkflowInfo): RunSummary {
  const eventId = decode(raw.searchAttributes?.indexedFields?.[WebhookEventIdKey.name]);
  const status = visibilityStatus(raw.status);
  const held =
    status === 'RUNNING' ? heldStatus(decode(raw.searchAttributes?.indexedFields?.[FlowQueueKey.name])) : undefined;
  return {
    id: raw.execution?.workflowId ?? '',
    eventId: typeof eventId === 'string' ? eventId : null,
    status: held ?? status,
    startedAt: timestamp(raw.startTime) ?? '',
    closedAt: timestamp(raw.closeTime) ?? null,
    version: numberOrNull(decode(raw.memo?.fields?.automationVersion)),
  };
}

/**
 * A run as the list across automations shows it: its automation (id; the name from its memo, which
 * the domain replaces with the store's), its key while QUEUED (from its memo), the step that waits
 * for approval (the ApprovalWait search attribute of a running run).
 */
export function entryFromVisibility(raw: WorkflowInfo): RunListEntry {
  const summary = summaryFromVisibility(raw);
  const automationId = decode(raw.searchAttributes?.indexedFields?.[AutomationIdKey.name]);
  const automationName = decode(raw.memo?.fields?.automationName);
  const key = decode(raw.memo?.fields?.[QUEUE_KEY_MEMO]);
  const waitingStep = decode(raw.searchAttributes?.indexedFields?.[ApprovalWaitKey.name]);
  const approval =
    typeof waitingStep === 'string'
      ? approvalsOf(decode(raw.memo?.fields?.[APPROVALS_MEMO])).get(waitingStep)
      : undefined;
  return {
    ...summary,
    automationId: typeof automationId === 'string' ? automationId : '',
    automationName: typeof automationName === 'string' ? automationName : '',
    ...(summary.status === 'QUEUED' && typeof key === 'string' ? { queue: { key } } : {}),
    ...(summary.status === 'RUNNING' && typeof waitingStep === 'string'
      ? { waitingForApproval: { stepId: waitingStep }, ...(approval ? { approval } : {}) }
      : {}),
  };
}

// ---------------------------------------------------------------- lanes

/** What the lanes need of one running run: its key (from its memo) and whether it is queued. */
export interface RunningRun {
  key: string | undefined;
  queued: boolean;
  startedAt: string;
}

/** One running run of an automation, as the lanes count it. */
export function runningRunOf(raw: WorkflowInfo): RunningRun {
  const key = decode(raw.memo?.fields?.[QUEUE_KEY_MEMO]);
  const summary = summaryFromVisibility(raw);
  return {
    key: typeof key === 'string' ? key : undefined,
    queued: summary.status === 'QUEUED',
    startedAt: summary.startedAt,
  };
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
