/** `GET /api/v1/automation_executions` (runs across automations) and an automation's lanes, over the typed client. */
import { api, unwrap, type Schemas } from './client';

export interface RunListItem {
  execution: Schemas['ExecutionListEntry'];
}

export interface RunQuery {
  automationId?: string;
  status?: Schemas['ExecutionListEntry']['status'][];
  waitingForApproval?: boolean;
  startedAfter?: string;
  startedBefore?: string;
  /** A prefix of the run id or of the event id. */
  q?: string;
  pageToken?: string;
  pageSize?: number;
}

export function listRuns(query: RunQuery): Promise<{ list: RunListItem[]; nextPageToken: string }> {
  return unwrap(
    api.GET('/api/v1/automation_executions', {
      params: {
        query: {
          automationId: query.automationId || undefined,
          status: query.status && query.status.length > 0 ? query.status : undefined,
          waitingForApproval: query.waitingForApproval ? 'true' : undefined,
          startedAfter: query.startedAfter || undefined,
          startedBefore: query.startedBefore || undefined,
          q: query.q || undefined,
          page_token: query.pageToken || undefined,
          page_size: query.pageSize ?? 50,
        },
      },
    }),
  );
}

/** One page of the automation's lanes (the keys with queued runs), by key. */
export function listLanes(
  automationId: string,
  pageToken?: string,
): Promise<{ list: { lane: Schemas['Lane'] }[]; nextPageToken: string }> {
  return unwrap(
    api.GET('/api/v1/automations/{id}/lanes', {
      params: { path: { id: automationId }, query: { page_size: 100, page_token: pageToken || undefined } },
    }),
  );
}
