/**
 * Actions of a schedule automation (docs/api.md#schedule-triggers): one started by the automation's
 * Temporal Schedule (its id `schedule:<automationId>-<scheduled time>`; the time is the Schedule's
 * `TemporalScheduledStartTime` search attribute), or those of a backfill or a manual trigger (with
 * `kind` and the `times`, run in order). For each time an activity records the action and answers
 * the run to start; the run is this workflow's child, its id derived from the automation and the
 * time, so a time never runs twice (a second start of the same id is refused). This workflow stays
 * open while its run is: the Schedule's overlap policy (skip, buffer, cancel or terminate the
 * other) acts on it, and a cancel or terminate of it reaches the run.
 */
import { isCancellation, ParentClosePolicy, proxyActivities, startChild, workflowInfo } from '@temporalio/workflow';
import {
  defineSearchAttributeKey,
  SearchAttributeType,
  WorkflowExecutionAlreadyStartedError,
} from '@temporalio/common';
import type { ScheduleActivities } from '../src/contract/activities';
import { AUTOMATION_WORKFLOW, type ScheduledRunInput, type ScheduledRunResult } from '../src/contract/workflows';

const activities = proxyActivities<ScheduleActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

/** The search attribute a Schedule sets on its action: the time it was scheduled for. */
const ScheduledStartTimeKey = defineSearchAttributeKey('TemporalScheduledStartTime', SearchAttributeType.DATETIME);

/**
 * The action's scheduled time: the Schedule's search attribute (in the start event, so replay reads
 * it too), else the time the Schedule appended to the action's id (`-2027-03-28T01:00:00Z`).
 */
function scheduledTimeOf(info: ReturnType<typeof workflowInfo>): string {
  const attribute = info.typedSearchAttributes.get(ScheduledStartTimeKey);
  if (attribute) return new Date(attribute).toISOString();
  const match = /-(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2}))$/.exec(info.workflowId);
  if (!match) throw new Error(`the action "${info.workflowId}" names no scheduled time`);
  return new Date(match[1]!).toISOString();
}

export async function scheduledRun(input: ScheduledRunInput): Promise<ScheduledRunResult> {
  const info = workflowInfo();
  const times = input.times ?? [scheduledTimeOf(info)];
  const result: ScheduledRunResult = { started: 0, existed: 0, gone: 0 };
  for (const scheduledAt of times) {
    const prepared = await activities.prepareScheduledRun({
      automationId: input.automationId,
      scheduledAt,
      firedAt: new Date(Date.now()).toISOString(),
      kind: input.kind ?? 'scheduled',
    });
    if ('skip' in prepared) {
      result.gone += 1;
      continue;
    }
    const { run } = prepared;
    let child;
    try {
      child = await startChild(AUTOMATION_WORKFLOW, {
        workflowId: run.executionId,
        args: run.args,
        memo: run.memo,
        searchAttributes: run.searchAttributes,
        staticSummary: run.staticSummary,
        workflowIdReusePolicy: 'REJECT_DUPLICATE',
        parentClosePolicy: ParentClosePolicy.TERMINATE,
      });
    } catch (err) {
      if (err instanceof WorkflowExecutionAlreadyStartedError) {
        result.existed += 1;
        continue;
      }
      throw err;
    }
    result.started += 1;
    // The run's outcome is the run's own: the action is done when the run closed, however it did.
    await child.result().catch((err: unknown) => {
      if (isCancellation(err)) throw err;
    });
  }
  return result;
}
