/**
 * Activities of a bulk action's workflow: act on the next page of its stored set, and end it.
 * Both are idempotent: a run's outcome is written once (a retried page acts only on runs without
 * one, and each act is itself safe to repeat: src/domain/bulk-actions.ts), and ending an ended
 * action writes the same counts again.
 */
import { Context } from '@temporalio/activity';
import type { Db } from '../src/store/db';
import { actOnNextPage, finishBulkAction, type BulkRunActor } from '../src/domain/bulk-actions';

export function createBulkActionActivities(deps: { db: Db; bulkRuns?: BulkRunActor }) {
  const actor = (): BulkRunActor => {
    if (!deps.bulkRuns) throw new Error('this worker has no Temporal client for bulk actions');
    return deps.bulkRuns;
  };
  return {
    async bulkActionPage(input: {
      bulkActionId: string;
      pageSize: number;
      concurrency: number;
    }): Promise<{ done: boolean; acted: number }> {
      // Heartbeats tell Temporal the page is alive; a worker that dies mid-page is noticed by the timeout.
      const context = Context.current();
      return actOnNextPage(deps.db, actor(), input.bulkActionId, {
        pageSize: input.pageSize,
        concurrency: input.concurrency,
        progress: () => context.heartbeat(),
      });
    },
    async finishBulkAction(input: { bulkActionId: string }): Promise<{ state: string }> {
      return finishBulkAction(deps.db, input.bulkActionId);
    },
  };
}
