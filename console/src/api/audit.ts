/** `GET /api/v1/audit`: who did what, when (super_admin). */
import { consoleFetch } from './client';

export interface AuditEvent {
  at: string;
  actor: string;
  action: string;
  subject: string;
  details: Record<string, unknown> | null;
}

export async function listAudit(query: { actor?: string; action?: string; pageToken?: string }): Promise<{ list: Array<{ auditEvent: AuditEvent }>; nextPageToken: string }> {
  const params = new URLSearchParams({ page_size: '50' });
  if (query.actor) params.set('actor', query.actor);
  if (query.action) params.set('action', query.action);
  if (query.pageToken) params.set('page_token', query.pageToken);
  return consoleFetch(`/api/v1/audit?${params}`);
}
