/**
 * Run control for operators: decide a waitForApproval step (a Temporal Update on the run), cancel
 * a run (graceful: a pending wait or approval ends, later steps do not run), terminate it, and
 * start a rerun (same payload, the currently published version) or a retry from the failed step
 * (the original version; the recorded results of the steps before it are reused; its callWebhook
 * requests carry the original run's keys, see src/contract/run.ts `resume.keysOf`). Failures come
 * back as domain errors: unknown run or step → NotFoundError, a step that is not waiting or a
 * closed run → FailedPreconditionError, Temporal unreachable → UnavailableError.
 */
import { decodePayloadsInPlace } from './executions';
import {
  isGrpcServiceError,
  ServiceError,
  WorkflowExecutionAlreadyStartedError,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
  type Client,
} from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { AUTOMATION_WORKFLOW, decideUpdate, type AutomationWorkflow } from '../contract/workflows';
import { STEP_NOT_WAITING, UNKNOWN_STEP, type AutomationRunInput, type DecideInput } from '../contract/run';
import { raceDeadline } from './deadline';
import { runStartOptions } from './runs';
import type { RunReader } from './executions';
import type { RerunOptions, RunController } from '../domain/executions';
import { runFlowOf } from '../flow';
import { FailedPreconditionError, NotFoundError, UnavailableError } from '../errors';
import { bulkActionOfRerunId, bulkRerunId } from '../domain/bulk-actions';

/** A rerun's id: the original's, with `:rerun-<n>`; the first free n is taken. */
export function rerunWorkflowId(originalId: string, n: number): string {
  return `${originalId}:rerun-${n}`;
}

/** Most reruns of one run (ids `…:rerun-1` to `…:rerun-100`). */
const MAX_RERUNS = 100;
const GRPC_NOT_FOUND = 5;
const GRPC_FAILED_PRECONDITION = 9;

export class TemporalRunControl implements RunController {
  constructor(
    private readonly client: Client,
    private readonly taskQueue: string,
    private readonly executions: RunReader,
    /** Upper bound for one call; an update waits for a worker to take it, so it gets longer. */
    private readonly callTimeoutMs = 10_000,
    private readonly updateTimeoutMs = 30_000,
  ) {}

  /** Records a person's decision on a waiting step; resolves once the run has moved past the step. */
  async decide(executionId: string, input: DecideInput): Promise<void> {
    // An admin may decide without reading runs: no message here names a run's or a step's status.
    await this.requireOpen(executionId, false);
    const handle = this.client.workflow.getHandle<AutomationWorkflow>(executionId);
    try {
      await this.call(this.updateTimeoutMs, () => handle.executeUpdate(decideUpdate, { args: [input] }));
    } catch (err) {
      if (err instanceof WorkflowUpdateFailedError && err.cause instanceof ApplicationFailure) {
        if (err.cause.type === UNKNOWN_STEP) throw new NotFoundError('step', input.stepId);
        if (err.cause.type === STEP_NOT_WAITING)
          throw new FailedPreconditionError(
            `step ${JSON.stringify(input.stepId)} is not waiting for approval`,
            'STEP_NOT_WAITING',
          );
      }
      throw this.closedOrUnavailable(err);
    }
  }

  /** Asks the run to stop: a pending wait or approval ends, later steps do not run; status CANCELED. */
  async cancel(executionId: string): Promise<void> {
    await this.requireOpen(executionId);
    try {
      await this.call(this.callTimeoutMs, () => this.client.workflow.getHandle(executionId).cancel());
    } catch (err) {
      throw this.closedOrUnavailable(err);
    }
  }

  /** Ends the run at once, recording `reason`; status TERMINATED. */
  async terminate(executionId: string, reason: string): Promise<void> {
    await this.requireOpen(executionId);
    try {
      await this.call(this.callTimeoutMs, () => this.client.workflow.getHandle(executionId).terminate(reason));
    } catch (err) {
      throw this.closedOrUnavailable(err);
    }
  }

  /** Starts a rerun (or a retry from the failed step) of a run; answers the new run's id. */
  async rerun(executionId: string, options: RerunOptions): Promise<{ executionId: string }> {
    const original = await this.executions.get(executionId);
    if (!original) throw new NotFoundError('automation execution', executionId);
    const input = await this.originalInput(executionId);
    let runInput: AutomationRunInput;
    let automationName: string;
    let keysOf: { workflowId: string; runId: string } | undefined;
    if (options.fromFailedStep) {
      const failedIndex = original.steps.findIndex((step) => step.status === 'FAILED');
      if (original.status !== 'FAILED' || failedIndex < 0 || original.version === null) {
        throw new FailedPreconditionError(
          'only a FAILED run with a failed step can be retried from that step',
          'NOT_FAILED',
        );
      }
      const earlier = original.steps
        .slice(0, failedIndex)
        .filter((step) => step.status === 'DONE' || step.status === 'SKIPPED');
      const described = await this.describe(executionId);
      // The failed call may have reached its target: repeated here, it carries the key it had.
      keysOf = input.resume?.keysOf ?? { workflowId: executionId, runId: described.runId };
      // The original version's lane, asked by the retry itself (a rerun has no acceptance order to keep).
      const queue = input.flow?.queue;
      runInput = {
        ...baseInput(input, original.version),
        ...(queue ? { flow: { queue: { ...queue, requested: false } } } : {}),
        rerunOf: executionId,
        resume: {
          fromStepId: original.steps[failedIndex]!.id,
          steps: earlier.map((step) => ({
            id: step.id,
            status: step.status as 'DONE' | 'SKIPPED',
            output: step.output,
          })),
          keysOf,
        },
      };
      automationName = described.automationName;
    } else {
      if (!options.published)
        throw new FailedPreconditionError(
          'the automation is not published: publish it before a rerun',
          'NOT_PUBLISHED',
        );
      // A person asked for this run: the filter does not apply; the concurrency limit does.
      const flow = runFlowOf(options.published.flow, {
        automationId: input.automationId,
        payload: input.trigger,
        requested: false,
      });
      runInput = { ...baseInput(input, options.published.version), ...(flow ? { flow } : {}), rerunOf: executionId };
      automationName = options.published.automationName;
    }
    if (options.bulkActionId !== undefined && !options.fromFailedStep) {
      // A bulk action's rerun has one id per bulk action and run: a second start is refused and
      // answers the run the first one started, so no retry starts another.
      const workflowId = bulkRerunId(executionId, options.bulkActionId);
      if (original.reruns.filter((id) => id !== workflowId).length >= MAX_RERUNS) {
        throw new FailedPreconditionError(`a run can be rerun at most ${MAX_RERUNS} times`, 'TOO_MANY_RERUNS');
      }
      try {
        await this.call(this.callTimeoutMs, () =>
          this.client.workflow.start<AutomationWorkflow>(
            AUTOMATION_WORKFLOW,
            runStartOptions(this.taskQueue, workflowId, runInput, {
              automationName,
              rerunOf: executionId,
              summary: `bulk action ${options.bulkActionId} rerun of ${executionId}`,
              bulkActionId: options.bulkActionId,
            }),
          ),
        );
      } catch (err) {
        if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw unavailable(err);
      }
      return { executionId: workflowId };
    }
    // Bulk reruns count towards the cap as well.
    const bulkReruns = original.reruns.filter((id) => bulkActionOfRerunId(id, executionId) !== undefined).length;
    for (let n = 1; n <= MAX_RERUNS - bulkReruns; n++) {
      const workflowId = rerunWorkflowId(executionId, n);
      try {
        await this.call(this.callTimeoutMs, () =>
          this.client.workflow.start<AutomationWorkflow>(
            AUTOMATION_WORKFLOW,
            runStartOptions(this.taskQueue, workflowId, runInput, {
              automationName,
              rerunOf: executionId,
              summary: `${options.fromFailedStep ? 'retry' : 'rerun'} ${n} of ${executionId}`,
              ...(keysOf ? { keysOf } : {}),
            }),
          ),
        );
        return { executionId: workflowId };
      } catch (err) {
        if (err instanceof WorkflowExecutionAlreadyStartedError) continue;
        throw unavailable(err);
      }
    }
    throw new FailedPreconditionError(`a run can be rerun at most ${MAX_RERUNS} times`, 'TOO_MANY_RERUNS');
  }

  /** The input the run was started with (the first event of its history). */
  private async originalInput(executionId: string): Promise<AutomationRunInput> {
    let history;
    try {
      history = await this.call(this.callTimeoutMs, () => this.client.workflow.getHandle(executionId).fetchHistory());
    } catch (err) {
      if (err instanceof WorkflowNotFoundError || grpcCode(err) === GRPC_NOT_FOUND)
        throw new NotFoundError('automation execution', executionId);
      throw unavailable(err);
    }
    const payload = history.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0];
    if (!payload) throw new NotFoundError('automation execution', executionId);
    // The history holds the payload as the codec left it (encrypted): decode it first.
    await decodePayloadsInPlace(payload, this.client.options.loadedDataConverter.payloadCodecs);
    return this.client.options.loadedDataConverter.payloadConverter.fromPayload(payload) as AutomationRunInput;
  }

  /** The run's automation name (from its memo) and run id. */
  private async describe(executionId: string): Promise<{ automationName: string; runId: string }> {
    const description = await this.call(this.callTimeoutMs, () =>
      this.client.workflow.getHandle(executionId).describe(),
    ).catch((err: unknown) => {
      throw unavailable(err);
    });
    const name = description.memo?.automationName;
    return { automationName: typeof name === 'string' ? name : 'automation', runId: description.runId };
  }

  /** NotFoundError for an unknown run, FailedPreconditionError for a closed one (naming its status when `showStatus`). */
  private async requireOpen(executionId: string, showStatus = true): Promise<void> {
    const execution = await this.executions.get(executionId);
    if (!execution) throw new NotFoundError('automation execution', executionId);
    if (execution.status !== 'RUNNING' && execution.status !== 'QUEUED' && execution.status !== 'PAUSED')
      throw new FailedPreconditionError(
        showStatus ? `the run is closed (${execution.status})` : 'the run is closed',
        'RUN_CLOSED',
      );
  }

  /** A run that closed between our check and the call is a closed run; anything else: Temporal is unavailable. */
  private closedOrUnavailable(err: unknown): Error {
    const code = grpcCode(err);
    if (err instanceof WorkflowNotFoundError || code === GRPC_NOT_FOUND || code === GRPC_FAILED_PRECONDITION) {
      return new FailedPreconditionError('the run is closed', 'RUN_CLOSED');
    }
    return unavailable(err);
  }

  private call<T>(timeoutMs: number, fn: () => Promise<T>): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    return raceDeadline(deadline, () => this.client.withDeadline(deadline, fn));
  }
}

function baseInput(input: AutomationRunInput, version: number): AutomationRunInput {
  return {
    automationId: input.automationId,
    version,
    listenerId: input.listenerId,
    eventId: input.eventId,
    receivedAt: input.receivedAt,
    trigger: input.trigger,
  };
}

export function grpcCode(err: unknown): number | undefined {
  if (isGrpcServiceError(err)) return err.code;
  if (err instanceof ServiceError && isGrpcServiceError(err.cause)) return err.cause.code;
  const cause = (err as { cause?: unknown })?.cause;
  if (isGrpcServiceError(cause)) return cause.code;
  return undefined;
}

function unavailable(_err: unknown): UnavailableError {
  return new UnavailableError('the workflow engine is unavailable; retry later', 5);
}
