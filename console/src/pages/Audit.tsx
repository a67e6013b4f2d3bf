/** The audit trail: who did what, when, newest first. */
import { useInfiniteQuery } from '@tanstack/react-query';
import { listAudit } from '../api/audit';
import { DateTime, ErrorMessage, Loading, MoreButton, PageHeading } from '../components';
import { navigate, useLocation, usePageTitle } from '../router';

export function AuditPage() {
  usePageTitle('Audit');
  const { search } = useLocation();
  const actor = search.get('actor') ?? '';
  const action = search.get('action') ?? '';
  const audit = useInfiniteQuery({
    queryKey: ['audit', { actor, action }],
    queryFn: ({ pageParam }) => listAudit({ actor, action, pageToken: pageParam }),
    initialPageParam: '',
    getNextPageParam: (last) => last.nextPageToken || undefined,
  });
  const setFilter = (name: string, value: string) => {
    const next = new URLSearchParams(search);
    if (value) next.set(name, value);
    else next.delete(name);
    navigate(`/audit${next.size ? `?${next}` : ''}`, { replace: true });
  };
  const items = audit.data?.pages.flatMap((page) => page.list) ?? [];
  return (
    <>
      <PageHeading>Audit</PageHeading>
      <form
        className="filters"
        aria-label="Filter the audit trail"
        onSubmit={(e) => {
          e.preventDefault();
          const data = new FormData(e.currentTarget);
          const next = new URLSearchParams();
          for (const key of ['actor', 'action']) {
            const value = String(data.get(key) ?? '');
            if (value) next.set(key, value);
          }
          navigate(`/audit${next.size ? `?${next}` : ''}`, { replace: true });
        }}
      >
        <label>
          Actor
          <input name="actor" defaultValue={actor} placeholder="client:… or person:…" />
        </label>
        <label>
          Action
          <input name="action" defaultValue={action} />
        </label>
        <button type="submit">Filter</button>
        {actor || action ? (
          <button type="button" onClick={() => setFilter('actor', '')}>
            Clear
          </button>
        ) : null}
      </form>
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
