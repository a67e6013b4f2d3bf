/**
 * The API's view of automation runs on Temporal. The webhook receiver starts runs through it; the
 * executions API reads them. `TemporalRuns` is the real implementation.
 */
import {
  WorkflowExecutionAlreadyStartedError,
  WorkflowNotFoundError,
  type Client,
  type WorkflowStartOptions,
} from '@temporalio/client';
import { raceDeadline } from './deadline';
import { laneQueueFull, requestLanePermit } from './lanes';
import { decodePayloadsInPlace } from './executions';
import { AUTOMATION_WORKFLOW, type AutomationWorkflow } from '../contract/workflows';
import { runWorkflowId, type AutomationRunInput, type RunQueue } from '../contract/run';
import {
  DuplicateEventError,
  WorkflowEngineUnavailableError,
  type AutomationRuns,
  type RunDisplay,
  type StartedRun,
} from '../domain/runs';
import type { LaneRequest } from '../contract/lanes';
import { AutomationIdKey, ListenerIdKey, WebhookEventIdKey } from './search-attributes';
import { QUEUE_KEY_MEMO } from './run-listing';

export { runWorkflowId } from '../contract/run';

/** Starts runs on a real Temporal server. */
export class TemporalRuns implements AutomationRuns {
  constructor(
    readonly client: Client,
    readonly taskQueue: string,
    /** Upper bound for one start call, so an unreachable server answers 503 quickly. */
    private readonly startTimeoutMs = 5000,
    /**
     * Ask for eager workflow start: the server hands the run's first workflow task back in the
     * start response, to a worker of this process, skipping one dispatch through matching. Only
     * when `client` is on the NativeConnection of a worker polling `taskQueue` in this process
     * (`npm start`); the server falls back to a normal start when no slot is free.
     */
    private readonly options: { eagerStart?: boolean; laneQueueLimit?: number } = {},
  ) {}

  /** The most runs a key's lane may have waiting (LANE_QUEUE_LIMIT); undefined: the lane's own bound is not checked here. */
  get laneQueueLimit(): number | undefined {
    return this.options.laneQueueLimit;
  }

  async ping(): Promise<void> {
    await raceDeadline(Date.now() + this.startTimeoutMs, () =>
      this.client.withDeadline(Date.now() + this.startTimeoutMs, () => this.client.workflowService.getSystemInfo({})),
    );
  }

  async requestLanePermit(request: Omit<LaneRequest, 'taskQueue'>): Promise<void> {
    try {
      const deadline = Date.now() + this.startTimeoutMs;
      const maxWaiting = this.options.laneQueueLimit;
      await raceDeadline(deadline, () =>
        this.client.withDeadline(deadline, () =>
          requestLanePermit(this.client, {
            ...request,
            taskQueue: this.taskQueue,
            ...(maxWaiting ? { maxWaiting } : {}),
          }),
        ),
      );
    } catch (err) {
      throw new WorkflowEngineUnavailableError(
        `workflow engine unavailable: ${(err as Error).message ?? 'unknown error'}`,
      );
    }
  }

  async laneQueueFull(lane: string): Promise<boolean> {
    try {
      const deadline = Date.now() + this.startTimeoutMs;
      return await raceDeadline(deadline, () =>
        this.client.withDeadline(deadline, () => laneQueueFull(this.client, lane)),
      );
    } catch (err) {
      throw new WorkflowEngineUnavailableError(
        `workflow engine unavailable: ${(err as Error).message ?? 'unknown error'}`,
      );
    }
  }

  async recordedQueue(runId: string): Promise<RunQueue | undefined> {
    try {
      const deadline = Date.now() + this.startTimeoutMs;
      // The run's first history event holds its input as it was started: the lane it was recorded for.
      const response = await raceDeadline(deadline, () =>
        this.client.withDeadline(deadline, () =>
          this.client.workflowService.getWorkflowExecutionHistory({
            namespace: this.client.options.namespace,
            execution: { workflowId: runId },
            maximumPageSize: 1,
          }),
        ),
      );
      const payload = response.history?.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0];
      if (!payload) return undefined;
      const converter = this.client.options.loadedDataConverter;
      await decodePayloadsInPlace(payload, converter.payloadCodecs);
      return (converter.payloadConverter.fromPayload(payload) as AutomationRunInput).flow?.queue;
    } catch (err) {
      throw new WorkflowEngineUnavailableError(
        `workflow engine unavailable: ${(err as Error).message ?? 'unknown error'}`,
      );
    }
  }

  async runOf(listenerId: string, eventId: string): Promise<string | undefined> {
    const workflowId = runWorkflowId(listenerId, eventId);
    try {
      const deadline = Date.now() + this.startTimeoutMs;
      await raceDeadline(deadline, () =>
        this.client.withDeadline(deadline, () => this.client.workflow.getHandle(workflowId).describe()),
      );
      return workflowId;
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return undefined;
      throw new WorkflowEngineUnavailableError(
        `workflow engine unavailable: ${(err as Error).message ?? 'unknown error'}`,
      );
    }
  }

  async start(input: AutomationRunInput, display: RunDisplay): Promise<StartedRun> {
    const workflowId = runWorkflowId(input.listenerId, input.eventId);
    try {
      const deadline = Date.now() + this.startTimeoutMs;
      // withDeadline bounds the call; the race also bounds connecting to an unreachable server.
      await raceDeadline(deadline, () =>
        this.client.withDeadline(deadline, () =>
          this.client.workflow.start<AutomationWorkflow>(AUTOMATION_WORKFLOW, {
            ...runStartOptions(this.taskQueue, workflowId, input, { ...display, summary: `event ${input.eventId}` }),
            ...(this.options.eagerStart ? { requestEagerStart: true } : {}),
          }),
        ),
      );
      return { runId: workflowId };
    } catch (err) {
      if (err instanceof WorkflowExecutionAlreadyStartedError) throw new DuplicateEventError(workflowId);
      throw new WorkflowEngineUnavailableError(
        `workflow engine unavailable: ${(err as Error).message ?? 'unknown error'}`,
      );
    }
  }
}

/**
 * How every run is started: the id refused when it was used before (REJECT_DUPLICATE, kept for the
 * namespace retention), the search attributes operators find it by, its memo and its summary.
 */
export function runStartOptions(
  taskQueue: string,
  workflowId: string,
  input: AutomationRunInput,
  display: RunDisplay & {
    summary: string;
    rerunOf?: string;
    keysOf?: { workflowId: string; runId: string };
    bulkActionId?: string;
  },
): WorkflowStartOptions<AutomationWorkflow> {
  return {
    taskQueue,
    workflowId,
    args: [input],
    workflowIdReusePolicy: 'REJECT_DUPLICATE',
    workflowIdConflictPolicy: 'FAIL',
    typedSearchAttributes: [
      { key: AutomationIdKey, value: input.automationId },
      { key: ListenerIdKey, value: input.listenerId },
      { key: WebhookEventIdKey, value: input.eventId },
    ],
    memo: {
      automationName: display.automationName,
      automationVersion: input.version,
      ...(display.rerunOf ? { rerunOf: display.rerunOf } : {}),
      ...(display.bulkActionId ? { bulkActionId: display.bulkActionId } : {}),
      // A retry from the failed step: the run whose call keys it sends (for the executions view).
      ...(display.keysOf ? { callKeysOf: display.keysOf } : {}),
      // A run admitted through a lane: its key, which the lanes of the automation count by (src/temporal/run-listing.ts).
      ...(input.flow?.queue ? { [QUEUE_KEY_MEMO]: input.flow.queue.key } : {}),
    },
    staticSummary: `${display.automationName} (v${input.version}) — ${display.summary}`,
  };
}
