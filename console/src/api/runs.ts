/** `GET /api/v1/automation_executions`: runs across automations, newest first. */
import { consoleFetch } from './client';
import type { Schemas } from './client';

export interface RunListItem {
  execution: Schemas['ExecutionSummary'] & { automationId: string; automationName: string };
}

export interface RunQuery {
  automationId?: string;
  status?: string[];
  waitingForApproval?: boolean;
  startedAfter?: string;
  startedBefore?: string;
  pageToken?: string;
  pageSize?: number;
}

export async function listRuns(query: RunQuery): Promise<{ list: RunListItem[]; nextPageToken: string }> {
  const params = new URLSearchParams();
  if (query.automationId) params.set('automationId', query.automationId);
  for (const status of query.status ?? []) params.append('status', status);
  if (query.waitingForApproval) params.set('waitingForApproval', 'true');
  if (query.startedAfter) params.set('startedAfter', query.startedAfter);
  if (query.startedBefore) params.set('startedBefore', query.startedBefore);
  if (query.pageToken) params.set('page_token', query.pageToken);
  params.set('page_size', String(query.pageSize ?? 50));
  return consoleFetch(`/api/v1/automation_executions?${params}`);
}
