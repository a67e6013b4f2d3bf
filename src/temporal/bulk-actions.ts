/**
 * The engine side of bulk actions (src/domain/bulk-actions.ts): matching runs from visibility
 * (`AutomationId`, `ExecutionStatus`, `StartTime`), reading each candidate's payload from the first
 * event of its history (for `where`), starting the bulkAction workflow, and acting on one run.
 * Acting is idempotent: a cancel carries a request id derived from the bulk action and the run
 * (Temporal dedupes it), a terminate of a run an earlier attempt had claimed and that is now
 * TERMINATED (or CANCELED, for a cancel) was that attempt's, and a rerun has a derived id (a
 * second start is refused and answers the same run). A cancel or terminate is sent without
 * asking first: a terminate of a run that is not running is refused, and only then is the run
 * described, to say why it was skipped; a cancel is accepted either way, and the run's close
 * event, which the cancel waits for (its pacing), says whether the cancel ended it.
 */
import { createHash } from 'node:crypto';
import {
  isGrpcServiceError,
  WorkflowExecutionAlreadyStartedError,
  WorkflowNotFoundError,
  type Client,
} from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { AUTOMATION_WORKFLOW, BULK_ACTION_WORKFLOW, type BulkActionWorkflow } from '../contract/workflows';
import type { AutomationRunInput } from '../contract/run';
import type {
  BulkActRequest,
  BulkActResult,
  BulkRunActor,
  BulkRunMatcher,
  BulkVisibilityFilter,
} from '../domain/bulk-actions';
import { FailedPreconditionError, NotFoundError, ServiceError, WorkflowEngineUnavailableError } from '../errors';
import { raceDeadline } from './deadline';
import { decodePayloadsInPlace, executionStatus, visibilityStatus } from './executions';
import type { TemporalRunControl } from './run-control';
import { AutomationIdKey } from './search-attributes';

/** Visibility page size when listing a matched set. */
const LIST_PAGE = 1000;
/** History reads at once when `where` reads payloads. */
const PAYLOAD_READS_AT_ONCE = 8;
/** At most this long a cancel waits for its run to close (untilClosed). */
export const CLOSE_WAIT_MS = 10_000;
/**
 * A run whose close event is at most this much older than the cancel request was closed by it:
 * the event's time is Temporal's clock, the request's this process's.
 */
export const CLOCK_TOLERANCE_MS = 1000;
const GRPC_NOT_FOUND = 5;
const GRPC_FAILED_PRECONDITION = 9;

/** The workflow id of a bulk action's workflow. */
export function bulkActionWorkflowId(bulkActionId: string): string {
  return `bulk-action:${bulkActionId}`;
}

const TEMPORAL_STATUSES: Record<BulkVisibilityFilter['statuses'][number], string[]> = {
  QUEUED: ['Running'],
  PAUSED: ['Running'],
  RUNNING: ['Running'],
  COMPLETED: ['Completed'],
  FAILED: ['Failed', 'TimedOut'],
  CANCELED: ['Canceled'],
  TERMINATED: ['Terminated'],
};

/** The visibility query of a filter (statuses folded into Temporal's; QUEUED/PAUSED/RUNNING told apart after). */
export function bulkVisibilityQuery(filter: BulkVisibilityFilter): string {
  const parts = [
    `WorkflowType = ${quote(AUTOMATION_WORKFLOW)}`,
    `${AutomationIdKey.name} = ${quote(filter.automationId)}`,
  ];
  const statuses = [...new Set(filter.statuses.flatMap((status) => TEMPORAL_STATUSES[status]))];
  if (statuses.length > 0)
    parts.push(`(${statuses.map((status) => `ExecutionStatus = ${quote(status)}`).join(' OR ')})`);
  if (filter.startedAfter) parts.push(`StartTime > ${quote(new Date(filter.startedAfter).toISOString())}`);
  if (filter.startedBefore) parts.push(`StartTime < ${quote(new Date(filter.startedBefore).toISOString())}`);
  return parts.join(' AND ');
}

export class TemporalBulkRuns implements BulkRunMatcher, BulkRunActor {
  constructor(
    private readonly client: Client,
    private readonly taskQueue: string,
    /** Acting on runs (the worker's side); the API's side only matches and starts. */
    private readonly control?: TemporalRunControl,
    private readonly callTimeoutMs = 10_000,
    /** How long a cancel waits for its run to close (CLOSE_WAIT_MS). */
    private readonly closeWaitMs = CLOSE_WAIT_MS,
  ) {}

  async count(filter: BulkVisibilityFilter): Promise<number> {
    const response = await this.call(() =>
      this.client.workflowService.countWorkflowExecutions({
        namespace: this.client.options.namespace,
        query: bulkVisibilityQuery(filter),
      }),
    );
    return Number(response.count ?? 0);
  }

  async list(filter: BulkVisibilityFilter, max: number): Promise<string[]> {
    const query = bulkVisibilityQuery(filter);
    const wanted = new Set(filter.statuses);
    const ids: string[] = [];
    let token: Uint8Array | undefined;
    do {
      const response = await this.call(() =>
        this.client.workflowService.listWorkflowExecutions({
          namespace: this.client.options.namespace,
          pageSize: LIST_PAGE,
          query,
          ...(token ? { nextPageToken: token } : {}),
        }),
      );
      for (const raw of response.executions ?? []) {
        const status = visibilityStatus(raw.status);
        const held = status === 'RUNNING' ? decode(raw.searchAttributes?.indexedFields?.FlowQueue) : undefined;
        const shown = held === 'QUEUED' || held === 'PAUSED' ? held : status;
        if (wanted.size > 0 && !wanted.has(shown as (typeof filter.statuses)[number])) continue;
        const id = raw.execution?.workflowId;
        if (id) ids.push(id);
      }
      token = response.nextPageToken && response.nextPageToken.length > 0 ? response.nextPageToken : undefined;
    } while (token && ids.length <= max);
    return ids.slice(0, max + 1);
  }

  async payloads(runIds: readonly string[]): Promise<Map<string, unknown>> {
    const found = new Map<string, unknown>();
    const queue = [...runIds];
    const reader = async (): Promise<void> => {
      for (let id = queue.shift(); id !== undefined; id = queue.shift()) {
        const input = await this.firstInput(id);
        if (input) found.set(id, input.trigger);
      }
    };
    await Promise.all(Array.from({ length: Math.min(PAYLOAD_READS_AT_ONCE, queue.length) }, reader));
    return found;
  }

  async start(bulkActionId: string): Promise<void> {
    try {
      await this.call(() =>
        this.client.workflow.start<BulkActionWorkflow>(BULK_ACTION_WORKFLOW, {
          taskQueue: this.taskQueue,
          workflowId: bulkActionWorkflowId(bulkActionId),
          args: [{ bulkActionId }],
          workflowIdReusePolicy: 'REJECT_DUPLICATE',
          staticSummary: `bulk action ${bulkActionId}`,
        }),
      );
    } catch (err) {
      if (err instanceof WorkflowExecutionAlreadyStartedError) return;
      throw unavailable(err);
    }
  }

  async act(request: BulkActRequest): Promise<BulkActResult> {
    if (request.action === 'rerun') return this.rerun(request);
    const ours = request.action === 'cancel' ? 'CANCELED' : 'TERMINATED';
    try {
      if (request.action === 'cancel') {
        const sentAt = Date.now();
        await this.call(() =>
          this.client.workflowService.requestCancelWorkflowExecution({
            namespace: this.client.options.namespace,
            workflowExecution: { workflowId: request.runId },
            identity: this.client.options.identity,
            // One request id per bulk action and run: a repeated cancel is the same request to Temporal.
            requestId: requestIdOf(request.bulkActionId, request.runId),
            reason: request.reason,
          }),
        );
        // Temporal accepts a cancel of a run that has closed already: how and when the run closed
        // says whether this cancel ended it (the same answer a describe would give, for no call more).
        const closed = await this.untilClosed(request.runId);
        if (!closed) return { outcome: 'succeeded' }; // requested; the run ends on its own time
        if (closed.status === 'CANCELED' && (closed.atMs >= sentAt - CLOCK_TOLERANCE_MS || request.claimedBefore))
          return { outcome: 'succeeded' };
        return { outcome: 'skipped', reason: `the run is closed (${closed.status})` };
      }
      await this.call(() => this.client.workflow.getHandle(request.runId).terminate(request.reason));
      return { outcome: 'succeeded' };
    } catch (err) {
      const code = grpcCode(err);
      if (!(err instanceof WorkflowNotFoundError || code === GRPC_NOT_FOUND || code === GRPC_FAILED_PRECONDITION))
        throw unavailable(err);
    }
    // Refused because the run is not running (closed, or unknown): only now is it described, for
    // the outcome and its reason. A running run costs the one call.
    const status = await this.status(request.runId);
    if (status === undefined) return { outcome: 'skipped', reason: 'the run no longer exists' };
    if (status === 'RUNNING') return { outcome: 'skipped', reason: 'the run closed before the action reached it' };
    // An earlier attempt claimed the run and may have stopped it before it died: that was this action.
    if (request.claimedBefore && status === ours) return { outcome: 'succeeded' };
    return { outcome: 'skipped', reason: `the run is closed (${status})` };
  }

  private async rerun(request: BulkActRequest): Promise<BulkActResult> {
    if (!this.control) throw new Error('TemporalBulkRuns: acting on runs needs the run controller');
    try {
      const started = await this.control.rerun(request.runId, {
        fromFailedStep: false,
        published: request.published,
        bulkActionId: request.bulkActionId,
      });
      return { outcome: 'succeeded', newExecutionId: started.executionId };
    } catch (err) {
      if (err instanceof NotFoundError) return { outcome: 'skipped', reason: 'the run no longer exists' };
      if (err instanceof FailedPreconditionError) return { outcome: 'failed', reason: err.message };
      throw err;
    }
  }

  /**
   * Waits until the run has closed, at most `closeWaitMs`. A cancel's cost is mostly paid after its
   * call returns: Temporal hands the run a workflow task, a worker replays the run and ends it. A
   * page acts on `concurrency` runs at once; by waiting here, those are runs between their cancel
   * and their end, so the action's pace follows what its cancels cost (its share of a loaded
   * Temporal and worker stays that of `concurrency` requests among everyone else's). Pacing only: a
   * run that has not closed by then (no worker, a stuck run) is left to close on its own.
   */
  private async untilClosed(runId: string): Promise<{ status: string; atMs: number } | undefined> {
    const deadline = Date.now() + this.closeWaitMs;
    try {
      // A long poll: Temporal answers with the close event when the run closes, or empty when its own poll time is up.
      while (Date.now() < deadline) {
        const response = await raceDeadline(deadline, () =>
          this.client.withDeadline(deadline, () =>
            this.client.workflowService.getWorkflowExecutionHistory({
              namespace: this.client.options.namespace,
              execution: { workflowId: runId },
              skipArchival: true,
              waitNewEvent: true,
              historyEventFilterType:
                temporal.api.enums.v1.HistoryEventFilterType.HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT,
            }),
          ),
        );
        const event = response.history?.events?.at(-1);
        if (event) return { status: closeStatus(event), atMs: eventMs(event) };
      }
    } catch {
      // The wait itself failed: the cancel stands either way.
    }
    return undefined;
  }

  /** The run's status as the API names it (QUEUED folds into RUNNING); undefined for an unknown run. */
  private async status(runId: string): Promise<string | undefined> {
    try {
      const description = await this.call(() => this.client.workflow.getHandle(runId).describe());
      return executionStatus(description.status.name);
    } catch (err) {
      if (err instanceof WorkflowNotFoundError || grpcCode(err) === GRPC_NOT_FOUND) return undefined;
      throw unavailable(err);
    }
  }

  /** The input a run started with: the first event of its history, decoded. */
  private async firstInput(runId: string): Promise<AutomationRunInput | undefined> {
    let response: temporal.api.workflowservice.v1.IGetWorkflowExecutionHistoryResponse;
    try {
      response = await this.call(() =>
        this.client.workflowService.getWorkflowExecutionHistory({
          namespace: this.client.options.namespace,
          execution: { workflowId: runId },
          maximumPageSize: 1,
        }),
      );
    } catch (err) {
      if (err instanceof WorkflowNotFoundError || grpcCode(err) === GRPC_NOT_FOUND) return undefined;
      throw unavailable(err);
    }
    const payload = response.history?.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0];
    if (!payload) return undefined;
    await decodePayloadsInPlace(payload, this.client.options.loadedDataConverter.payloadCodecs);
    try {
      return this.client.options.loadedDataConverter.payloadConverter.fromPayload(payload) as AutomationRunInput;
    } catch {
      return undefined;
    }
  }

  private call<T>(fn: () => Promise<T>): Promise<T> {
    const deadline = Date.now() + this.callTimeoutMs;
    return raceDeadline(deadline, () => this.client.withDeadline(deadline, fn));
  }
}

/** A stable request id (UUID-shaped) for one bulk action and run. */
function requestIdOf(bulkActionId: string, runId: string): string {
  const hex = createHash('sha256').update(`${bulkActionId}\n${runId}`).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}

/** The status (as the API names it) a close event leaves a run in. */
function closeStatus(event: temporal.api.history.v1.IHistoryEvent): string {
  if (event.workflowExecutionCompletedEventAttributes) return 'COMPLETED';
  if (event.workflowExecutionFailedEventAttributes || event.workflowExecutionTimedOutEventAttributes) return 'FAILED';
  if (event.workflowExecutionCanceledEventAttributes) return 'CANCELED';
  if (event.workflowExecutionTerminatedEventAttributes) return 'TERMINATED';
  return 'COMPLETED'; // continued as new: this run has ended
}

function eventMs(event: temporal.api.history.v1.IHistoryEvent): number {
  return Number(String(event.eventTime?.seconds ?? 0)) * 1000 + (event.eventTime?.nanos ?? 0) / 1e6;
}

function decode(payload: temporal.api.common.v1.IPayload | null | undefined): unknown {
  if (!payload) return undefined;
  try {
    return defaultPayloadConverter.fromPayload(payload as Parameters<typeof defaultPayloadConverter.fromPayload>[0]);
  } catch {
    return undefined;
  }
}

function quote(value: string): string {
  return `"${value.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

function grpcCode(err: unknown): number | undefined {
  if (isGrpcServiceError(err)) return err.code;
  if (err instanceof ServiceError && isGrpcServiceError(err.cause)) return err.cause.code;
  const cause = (err as { cause?: unknown })?.cause;
  if (isGrpcServiceError(cause)) return cause.code;
  return undefined;
}

function unavailable(err: unknown): WorkflowEngineUnavailableError {
  if (err instanceof WorkflowEngineUnavailableError) return err;
  return new WorkflowEngineUnavailableError(
    `workflow engine unavailable: ${(err as Error)?.message ?? 'unknown error'}`,
  );
}
