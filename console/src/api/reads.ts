/** The list reads the console's pages share, over the typed client. */
import { useQuery } from '@tanstack/react-query';
import { allPages, api, unwrap } from './client';

/** Every automation (id → display name), for filters and names. */
export function useAutomationNames() {
  return useQuery({
    queryKey: ['automations', 'names'],
    queryFn: async () => {
      const list = await allPages((token) =>
        unwrap(
          api.GET('/api/v1/automations', { params: { query: { page_size: 100, page_token: token || undefined } } }),
        ),
      );
      return list.map(({ automation }) => ({ id: automation.id, name: automation.displayName }));
    },
    staleTime: 30_000,
  });
}

export const RUN_STATUSES = ['QUEUED', 'PAUSED', 'RUNNING', 'COMPLETED', 'FAILED', 'CANCELED', 'TERMINATED'] as const;
