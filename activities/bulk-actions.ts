/**
 * Activities of a bulk action's workflow: act on the next page of its stored set, and end it.
 * Both are idempotent: a run's outcome is written once (a retried page acts only on runs without
 * one, and each act is itself safe to repeat: src/domain/bulk-actions.ts), and ending an ended
 * action writes the same counts again.
 */
import { Context } from '@temporalio/activity';
import type { Db } from '../src/store/db';
import { actOnNextPage, finishBulkAction } from '../src/domain/bulk-actions';
import type { RunEngine } from '../src/domain/engine';

export function createBulkActionActivities(deps: { db: Db; engine: RunEngine }) {
  return {
    async bulkActionPage(input: {
      bulkActionId: string;
      pageSize: number;
      concurrency: number;
    }): Promise<{ done: boolean; acted: number }> {
      // Heartbeats tell Temporal the page is alive; a worker that dies mid-page is noticed by the timeout.
      const context = Context.current();
      return actOnNextPage(deps.db, deps.engine, input.bulkActionId, {
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
