/**
 * Runs across automations (open runs first, newest first), searched by an event or run id's first
 * characters and filtered by automation, status and start time; polled while shown, so statuses change without a reload. A queued run shows its key.
 * "Bulk action" opens a form that acts on the runs these filters select (BulkAction.tsx).
 */
import { useInfiniteQuery } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import { listRuns } from '../api/runs';
import { RUN_STATUSES, useAutomationNames } from '../api/reads';
import { DateTime, Duration, ErrorMessage, Loading, MoreButton, PageHeading, StatusBadge } from '../components';
import { FilterBar, optionsOf, useFilters } from '../FilterBar';
import { Link, usePageTitle } from '../router';
import { BulkActionForm } from './BulkAction';

export function RunsPage() {
  usePageTitle('Runs');
  const [filters, setFilters] = useFilters('/runs', ['q', 'automation', 'status', 'after', 'before']);
  const { q, automation: automationId, status, after: startedAfter, before: startedBefore } = filters;
  const automations = useAutomationNames();
  const [bulkOpen, setBulkOpen] = useState(false);
  const runs = useInfiniteQuery({
    queryKey: ['runs', { q, automationId, status, startedAfter, startedBefore }],
    queryFn: ({ pageParam }) =>
      listRuns({
        automationId: automationId || undefined,
        status: (RUN_STATUSES as readonly string[]).includes(status) ? [status as RunStatus] : undefined,
        startedAfter: isoOf(startedAfter),
        startedBefore: isoOf(startedBefore),
        q,
        pageToken: pageParam,
      }),
    initialPageParam: '',
    getNextPageParam: (last) => last.nextPageToken || undefined,
    // Live status: the open page is polled; a closed tab is not.
    refetchInterval: 3_000,
  });
  const items = runs.data?.pages.flatMap((page) => page.list) ?? [];

  useEffect(() => {
    if (runs.isSuccess) performance.mark('console:runs-list-drawn');
  }, [runs.isSuccess]);

  return (
    <>
      <PageHeading
        actions={
          <button
            type="button"
            aria-expanded={bulkOpen}
            aria-controls="bulk-action"
            onClick={() => setBulkOpen((open) => !open)}
          >
            Bulk action
          </button>
        }
      >
        Runs
      </PageHeading>
      <FilterBar
        label="Filter runs"
        values={filters}
        onChange={setFilters}
        fields={[
          { kind: 'text', name: 'q', label: 'Event or run id', placeholder: 'the first characters' },
          {
            kind: 'select',
            name: 'automation',
            label: 'Automation',
            any: 'All automations',
            options: automations.data?.map((a) => ({ value: a.id, label: a.name })) ?? [],
          },
          { kind: 'select', name: 'status', label: 'Status', any: 'Any status', options: optionsOf(RUN_STATUSES) },
          { kind: 'datetime', name: 'after', label: 'Started after' },
          { kind: 'datetime', name: 'before', label: 'Started before' },
        ]}
      />
      <div id="bulk-action">
        {bulkOpen ? (
          automationId ? (
            <BulkActionForm
              // A preview belongs to the filters it was made with.
              key={`${automationId}|${status}|${startedAfter}|${startedBefore}`}
              filters={{
                automationId,
                automationName: automations.data?.find((a) => a.id === automationId)?.name ?? automationId,
                status: (RUN_STATUSES as readonly string[]).includes(status) ? [status as RunStatus] : undefined,
                startedAfter: isoOf(startedAfter),
                startedBefore: isoOf(startedBefore),
              }}
            />
          ) : (
            <p role="status" className="panel">
              Choose an automation in the filters: a bulk action acts on the runs of one automation.
            </p>
          )
        ) : null}
      </div>
      <ErrorMessage error={runs.error} />
      {runs.isPending ? (
        <Loading label="Loading runs" />
      ) : (
        <RunsTable items={items} caption="Runs, open runs first, newest first" />
      )}
      <MoreButton
        hasMore={!!runs.hasNextPage}
        loading={runs.isFetchingNextPage}
        onMore={() => void runs.fetchNextPage()}
      />
    </>
  );
}

type RunStatus = (typeof RUN_STATUSES)[number];

/** A datetime-local value as RFC 3339 (the browser's time zone), or undefined when empty or invalid. */
function isoOf(local: string): string | undefined {
  const ms = local ? Date.parse(local) : NaN;
  return Number.isNaN(ms) ? undefined : new Date(ms).toISOString();
}

export function RunsTable({
  items,
  caption,
}: {
  items: Awaited<ReturnType<typeof listRuns>>['list'];
  caption: string;
}) {
  const [now] = useState(() => new Date().toISOString());
  if (items.length === 0) return <p className="muted">No runs match.</p>;
  return (
    <table>
      <caption className="visually-hidden">{caption}</caption>
      <thead>
        <tr>
          <th scope="col">Run</th>
          <th scope="col">Automation</th>
          <th scope="col">Status</th>
          <th scope="col">Started</th>
          <th scope="col">Duration</th>
        </tr>
      </thead>
      <tbody>
        {items.map(({ execution: run }) => (
          <tr key={run.id}>
            <td>
              <Link to={`/runs/${encodeURIComponent(run.id)}`} aria-label={`Run ${run.eventId ?? run.id}`}>
                {run.eventId ?? run.id}
              </Link>
            </td>
            <td>
              <Link to={`/automations/${encodeURIComponent(run.automationId)}`}>{run.automationName}</Link>
            </td>
            <td>
              <StatusBadge status={run.status} />
              {run.queue ? <span className="muted"> key {JSON.stringify(run.queue.key)}</span> : null}
              {run.waitingForApproval ? (
                <span className="muted"> waiting for approval ({run.waitingForApproval.stepId})</span>
              ) : null}
            </td>
            <td>
              <DateTime value={run.startedAt} />
            </td>
            <td>
              <Duration
                start={run.startedAt}
                end={
                  run.closedAt ??
                  (run.status === 'RUNNING' || run.status === 'QUEUED' || run.status === 'PAUSED' ? null : now)
                }
              />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
