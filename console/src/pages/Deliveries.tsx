/**
 * The delivery log of an automation, with reasons: why a sender got the answer it got; for a
 * schedule or event automation, each action or directory event (source schedule or event, no answer
 * or address) and whether it started a run.
 */
import { useInfiniteQuery } from '@tanstack/react-query';
import { api, unwrap } from '../api/client';
import { useAutomationNames } from '../api/reads';
import { DateTime, ErrorMessage, Loading, MoreButton, PageHeading } from '../components';
import { FilterBar, optionsOf, useFilters } from '../FilterBar';
import { Link, usePageTitle } from '../router';

const REASONS = [
  'accepted',
  'filtered',
  'rate_limited',
  'signature_mismatch',
  'timestamp_out_of_window',
  'duplicate_event',
  'body_too_large',
  'source_not_allowed',
  'missing_header',
  'invalid_json',
  'jwt_expired',
  'started',
  'paused',
  'skipped',
  'own_event',
  'event_depth',
];

const SOURCES: Record<string, string> = { webhook: 'Webhook', schedule: 'Schedule', event: 'Event' };

const ANSWERS = [200, 400, 401, 403, 404, 409, 413, 429, 503];

export function DeliveriesPage() {
  usePageTitle('Deliveries');
  const [filters, setFilters] = useFilters('/deliveries', ['automation', 'status', 'reason']);
  const automations = useAutomationNames();
  const automationId = filters.automation || automations.data?.[0]?.id || '';
  const { status, reason } = filters;
  const deliveries = useInfiniteQuery({
    queryKey: ['deliveries', { automationId, status, reason }],
    enabled: automationId !== '',
    queryFn: ({ pageParam }) =>
      unwrap(
        api.GET('/api/v1/automations/{id}/deliveries', {
          params: {
            path: { id: automationId },
            query: {
              page_size: 50,
              page_token: pageParam || undefined,
              status: status ? Number(status) : undefined,
              reason: reason || undefined,
            },
          },
        }),
      ),
    initialPageParam: '',
    getNextPageParam: (last) => last.nextPageToken || undefined,
    refetchInterval: 5_000,
  });
  const items = deliveries.data?.pages.flatMap((page) => page.list) ?? [];
  return (
    <>
      <PageHeading>Deliveries</PageHeading>
      <FilterBar
        label="Filter deliveries"
        values={{ ...filters, automation: automationId }}
        // The automation chosen by default is written down with the first filter set.
        onChange={(next) => setFilters({ ...next, automation: next.automation || automationId })}
        fields={[
          {
            kind: 'select',
            name: 'automation',
            label: 'Automation',
            options: automations.data?.map((a) => ({ value: a.id, label: a.name })) ?? [],
          },
          { kind: 'select', name: 'status', label: 'Answer', any: 'Any answer', options: optionsOf(ANSWERS) },
          { kind: 'select', name: 'reason', label: 'Reason', any: 'Any reason', options: optionsOf(REASONS) },
        ]}
      />
      <ErrorMessage error={automations.error ?? deliveries.error} />
      {automations.data?.length === 0 ? <p>No automation yet: deliveries are recorded per automation.</p> : null}
      {deliveries.isLoading ? <Loading label="Loading deliveries" /> : null}
      {deliveries.isSuccess && items.length === 0 ? <p className="muted">No deliveries match.</p> : null}
      {items.length > 0 ? (
        <table>
          <caption className="visually-hidden">Deliveries, newest first</caption>
          <thead>
            <tr>
              <th scope="col">Received</th>
              <th scope="col">Answer</th>
              <th scope="col">Reason</th>
              <th scope="col">Source</th>
              <th scope="col">Event id or time</th>
              <th scope="col">Source address</th>
              <th scope="col">Run</th>
              <th scope="col">Latency</th>
            </tr>
          </thead>
          <tbody>
            {items.map(({ delivery: d }, index) => (
              <tr key={`${d.receivedAt}-${index}`}>
                <td>
                  <DateTime value={d.receivedAt} />
                </td>
                <td>{d.status ?? <span className="muted">—</span>}</td>
                <td>
                  <code>{d.reason}</code>
                </td>
                <td>{SOURCES[d.source] ?? d.source}</td>
                <td>{d.eventId ?? <span className="muted">—</span>}</td>
                <td>{d.sourceAddress ?? <span className="muted">—</span>}</td>
                <td>
                  {d.executionId ? <Link to={`/runs/${encodeURIComponent(d.executionId)}`}>Open run</Link> : null}
                </td>
                <td>{d.latencyMs} ms</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      <MoreButton
        hasMore={!!deliveries.hasNextPage}
        loading={deliveries.isFetchingNextPage}
        onMore={() => void deliveries.fetchNextPage()}
      />
    </>
  );
}
