/** `GET /api/v1/audit`: who did what, when (super_admin). */
import { api, unwrap } from './client';

export function listAudit(query: { actor?: string; action?: string; pageToken?: string }) {
  return unwrap(
    api.GET('/api/v1/audit', {
      params: {
        query: {
          page_size: 50,
          actor: query.actor || undefined,
          action: query.action || undefined,
          page_token: query.pageToken || undefined,
        },
      },
    }),
  );
}
