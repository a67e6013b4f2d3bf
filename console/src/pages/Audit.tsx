/** The audit trail: who did what, when, newest first. */
import { useInfiniteQuery } from '@tanstack/react-query';
import { listAudit } from '../api/audit';
import { DateTime, ErrorMessage, Loading, MoreButton, PageHeading } from '../components';
import { FilterBar, useFilters } from '../FilterBar';
import { usePageTitle } from '../router';

export function AuditPage() {
  usePageTitle('Audit');
  const [filters, setFilters] = useFilters('/audit', ['actor', 'action']);
  const { actor, action } = filters;
  const audit = useInfiniteQuery({
    queryKey: ['audit', { actor, action }],
    queryFn: ({ pageParam }) => listAudit({ actor, action, pageToken: pageParam }),
    initialPageParam: '',
    getNextPageParam: (last) => last.nextPageToken || undefined,
  });
  const items = audit.data?.pages.flatMap((page) => page.list) ?? [];
  return (
    <>
      <PageHeading>Audit</PageHeading>
      <FilterBar
        label="Filter the audit trail"
        values={filters}
        onChange={setFilters}
        fields={[
          { kind: 'text', name: 'actor', label: 'Actor', placeholder: 'client:… or person:…' },
          { kind: 'text', name: 'action', label: 'Action' },
        ]}
      />
      <ErrorMessage error={audit.error} />
      {audit.isPending ? <Loading label="Loading the audit trail" /> : null}
      {audit.isSuccess && items.length === 0 ? <p className="muted">No audit records match.</p> : null}
      {items.length > 0 ? (
        <table>
          <caption className="visually-hidden">Audit records, newest first</caption>
          <thead>
            <tr>
              <th scope="col">When</th>
              <th scope="col">Actor</th>
              <th scope="col">Action</th>
              <th scope="col">Subject</th>
              <th scope="col">Details</th>
            </tr>
          </thead>
          <tbody>
            {items.map(({ auditEvent: e }, index) => (
              <tr key={`${e.at}-${index}`}>
                <td>
                  <DateTime value={e.at} />
                </td>
                <td>
                  <code>{e.actor}</code>
                </td>
                <td>{e.action}</td>
                <td>
                  <code>{e.subject}</code>
                </td>
                <td>
                  {e.details && Object.keys(e.details).length > 0 ? <code>{JSON.stringify(e.details)}</code> : null}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      <MoreButton
        hasMore={!!audit.hasNextPage}
        loading={audit.isFetchingNextPage}
        onMore={() => void audit.fetchNextPage()}
      />
    </>
  );
}
