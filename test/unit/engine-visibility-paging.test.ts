/**
 * The run engine reads visibility a page at a time (src/temporal/engine.ts): a bulk action's match
 * follows the next-page token to the last page, however many pages there are, and stops reading
 * once it has one id more than it may take. The client is a fake answering pages of 1,000, 1,000
 * and 500 runs, as Temporal's visibility does at its page size: what is under test is the engine's
 * walk over the pages, which the real server cannot be made to page at will.
 */
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { createTemporalEngine } from '../../src/temporal/engine';
import { openDb } from '../../src/store/db';
import type { RunMatch } from '../../src/domain/engine';

const RUNNING = temporal.api.enums.v1.WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_RUNNING;

/** A client whose visibility answers `pages` in turn, each page's runs numbered on from the last. */
function pagedClient(pages: number[]) {
  const requests: Array<{ pageSize: number; token: string | undefined; query: string }> = [];
  let first = 0;
  const client = {
    options: { namespace: 'default', loadedDataConverter: { payloadCodecs: [] } },
    withDeadline: <T>(_deadline: number, fn: () => Promise<T>) => fn(),
    workflowService: {
      async listWorkflowExecutions(request: { pageSize: number; nextPageToken?: Uint8Array; query: string }) {
        const token = request.nextPageToken ? Buffer.from(request.nextPageToken).toString() : undefined;
        requests.push({ pageSize: request.pageSize, token, query: request.query });
        const index = token === undefined ? 0 : Number(token);
        const size = pages[index] ?? 0;
        const executions = Array.from({ length: size }, (_, i) => ({
          execution: { workflowId: `run-${first + i}` },
          status: RUNNING,
        }));
        first += size;
        const last = index + 1 >= pages.length;
        return { executions, nextPageToken: last ? new Uint8Array() : Buffer.from(String(index + 1)) };
      },
    },
  };
  return { client: client as unknown as Client, requests };
}

const match: RunMatch = { automationId: 'a-1', statuses: [], startedAfter: undefined, startedBefore: undefined };

describe("the engine's walk over visibility's pages", () => {
  let db: Awaited<ReturnType<typeof openDb>>;
  beforeAll(async () => {
    db = await openDb({});
  });
  afterAll(async () => db.close());

  it('a match follows the pages to the last one: 1,000 + 1,000 + 500 runs are 2,500 ids, in order', async () => {
    const { client, requests } = pagedClient([1000, 1000, 500]);
    const engine = createTemporalEngine({ client, taskQueue: 'q', db });
    const ids = await engine.matchIds(match, 100_000);
    expect(ids).toHaveLength(2500);
    expect(new Set(ids).size).toBe(2500);
    expect([ids[0], ids[999], ids[1000], ids[2499]]).toEqual(['run-0', 'run-999', 'run-1000', 'run-2499']);
    expect(requests.map((r) => r.token)).toEqual([undefined, '1', '2']);
    expect(new Set(requests.map((r) => r.query)).size).toBe(1);
  });

  it('stops reading once it has one id more than it may take', async () => {
    const { client, requests } = pagedClient([1000, 1000, 500]);
    const engine = createTemporalEngine({ client, taskQueue: 'q', db });
    const ids = await engine.matchIds(match, 1200);
    expect(ids).toHaveLength(1201);
    expect(requests).toHaveLength(2);
  });
});
