/**
 * A bulk action on runs (docs/api.md#bulk-actions-on-runs): walks the action's matched set,
 * which is kept in the store (100,000 ids do not fit a workflow's input), one page at a time
 * through an activity that acts on each run at most once and records its outcome, then ends the
 * action. Its only decisions are the loop's: the next page, a pause, continue-as-new.
 *
 * Pacing: a page is at most PAGE_SIZE runs, CONCURRENCY of them acted on at once, and the workflow
 * pauses PAUSE between pages, so a large action adds a bounded load on Temporal's frontend and
 * the store while webhooks keep being accepted (docs/operations.md#bulk-actions-pacing-and-a-bulk-rerun-after-an-outage
 * says the rate).
 */
import { continueAsNew, proxyActivities, sleep, workflowInfo } from '@temporalio/workflow';
import type { BulkActionActivities } from '../src/contract/activities';
import type { BulkActionInput, BulkActionWorkflow } from '../src/contract/workflows';

/** Runs per page (one activity). */
export const BULK_PAGE_SIZE = 50;
/**
 * Runs of a page acted on at once. A cancel waits for its run's end, so on a busy machine this
 * number, not what a run costs, sets a bulk cancel's share of it
 * (docs/operations.md#bulk-actions-pacing-and-a-bulk-rerun-after-an-outage). It is an
 * activity argument, which replay does not compare: changing it needs no patch.
 */
export const BULK_CONCURRENCY = 3;
/** The pause between two pages. */
export const BULK_PAUSE = '1 second';
/** Continue-as-new beyond this many history events even when the server does not suggest it yet. */
const MAX_HISTORY_EVENTS = 2000;

const activities = proxyActivities<BulkActionActivities>({
  startToCloseTimeout: '10 minutes',
  // A page heartbeats after each run: a worker that dies mid-page is noticed within a minute.
  heartbeatTimeout: '1 minute',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds' },
});

export async function bulkAction(input: BulkActionInput): Promise<{ state: string }> {
  for (;;) {
    const page = await activities.bulkActionPage({
      bulkActionId: input.bulkActionId,
      pageSize: BULK_PAGE_SIZE,
      concurrency: BULK_CONCURRENCY,
    });
    if (page.done) break;
    const info = workflowInfo();
    if (info.continueAsNewSuggested || info.historyLength > MAX_HISTORY_EVENTS)
      await continueAsNew<typeof bulkAction>(input);
    await sleep(BULK_PAUSE);
  }
  return activities.finishBulkAction({ bulkActionId: input.bulkActionId });
}

/** The adapter starts this workflow by name with the contract's signature: the compiler holds the two together. */
type Holds<T extends true> = T;
export type BulkActionMatchesContract = Holds<typeof bulkAction extends BulkActionWorkflow ? true : false>;
