/** The audit trail: who did what, when, newest first. */
import { useInfiniteQuery } from '@tanstack/react-query';
import { Fragment } from 'react';
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
                  <Named name={e.actorDisplayName} id={e.actor} />
                </td>
                <td>{e.action}</td>
                <td>
                  <Named name={e.subjectDisplayName} id={e.subject} />
                </td>
                <td>
                  {e.details && Object.keys(e.details).length > 0 ? (
                    <dl className="details">
                      {Object.entries(e.details).map(([key, value]) => (
                        <Fragment key={key}>
                          <dt>{key}</dt>
                          <dd>{typeof value === 'string' ? value : JSON.stringify(value)}</dd>
                        </Fragment>
                      ))}
                    </dl>
                  ) : null}
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

/** A name, with its id below it (the id alone when there is no name). */
function Named({ name, id }: { name: string | null; id: string }) {
  if (!name) return <code>{id}</code>;
  return (
    <>
      {name}
      <br />
      <code className="muted">{id}</code>
    </>
  );
}
