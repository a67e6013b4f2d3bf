/**
 * Letting the circuit breaker's paused runs go (the domain's `PausedRunControl`,
 * src/domain/circuit-breaker.ts): `look` reads whether a paused run still waits and the lane its
 * input names; resume asks that lane for a permit first (when it has one, so that per key the paused
 * runs are admitted in the order they are resumed) and then signals the run; cancel
 * asks the run to stop (it ends CANCELED before any step). A run not found yet may be a delivery
 * whose start is still on its way: asked again until the start's own deadline has passed.
 */
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { breakerResumeSignal } from '../contract/workflows';
import type { PausedRun, PausedRunControl } from '../domain/circuit-breaker';
import type { RunQueue } from '../contract/run';
import type { TemporalRuns } from './runs';
import { raceDeadline } from './deadline';
import { grpcCode } from './run-control';
import { UnavailableError } from '../errors';

const GRPC_NOT_FOUND = 5;
const GRPC_FAILED_PRECONDITION = 9;
/** How often a run not found yet is asked again while a start may still be on its way. */
const NOT_FOUND_RETRY_MS = 200;

export class TemporalPausedRunControl implements PausedRunControl {
  constructor(
    private readonly client: Client,
    private readonly runs: Pick<TemporalRuns, 'requestLanePermit' | 'recordedQueue'>,
    /** The intake's start timeout: a start still on its way ends within it. */
    private readonly startTimeoutMs = 5000,
    private readonly callTimeoutMs = 10_000,
  ) {}

  async look(runId: string): Promise<PausedRun | undefined> {
    const found = await this.whenFound(runId, async () => {
      // Only an open run is let go: a closed one (canceled on its own) needs no permit.
      const description = await this.client.workflow.getHandle(runId).describe();
      if (description.status.name !== 'RUNNING') return undefined;
      // The lane the run was recorded for (its input), asked before the run is let go.
      const queue = await this.runs.recordedQueue(runId);
      return { runId, lane: queue?.lane, queue };
    });
    return found || undefined;
  }

  async resume(run: PausedRun, automation: { id: string; name: string }): Promise<boolean> {
    const queue = run.queue as RunQueue | undefined;
    return this.whenFound(run.runId, async () => {
      if (queue)
        await this.runs.requestLanePermit({
          automationId: automation.id,
          lane: queue.lane,
          runId: run.runId,
          limit: queue.limit,
          automationName: automation.name,
        });
      await this.client.workflow
        .getHandle(run.runId)
        .signal(breakerResumeSignal, { laneRequested: queue !== undefined });
      return true;
    });
  }

  async cancel(runId: string): Promise<boolean> {
    return this.whenFound(runId, async () => {
      const handle = this.client.workflow.getHandle(runId);
      if ((await handle.describe()).status.name !== 'RUNNING') return false;
      await handle.cancel();
      return true;
    });
  }

  /** Runs `act` on the run; false when it is closed, or still not found once a start on its way would have ended. */
  private async whenFound<T>(runId: string, act: () => Promise<T>): Promise<T | false> {
    const givesUpAt = Date.now() + this.startTimeoutMs;
    for (;;) {
      try {
        const deadline = Date.now() + this.callTimeoutMs;
        return await raceDeadline(deadline, () => this.client.withDeadline(deadline, act));
      } catch (err) {
        const code = grpcCode(err);
        if (code === GRPC_FAILED_PRECONDITION) return false;
        if (!(err instanceof WorkflowNotFoundError || code === GRPC_NOT_FOUND))
          throw new UnavailableError('the workflow engine is unavailable; retry later', 5);
        if (Date.now() >= givesUpAt) return false;
        await new Promise((resolve) => setTimeout(resolve, NOT_FOUND_RETRY_MS));
      }
    }
  }
}
