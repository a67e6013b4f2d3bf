/**
 * Runs across automations (open runs first, newest first), filtered by automation, status and start
 * time; polled while shown, so statuses change without a reload. A queued run shows its key.
 * "Bulk action" opens a form that acts on the runs these filters select (BulkAction.tsx).
 */
import { useInfiniteQuery } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import { listRuns } from '../api/runs';
import { RUN_STATUSES, useAutomationNames } from '../api/reads';
import { DateTime, duration, ErrorMessage, Loading, MoreButton, PageHeading, StatusBadge } from '../components';
import { Link, navigate, useLocation, usePageTitle } from '../router';
import { BulkActionForm } from './BulkAction';

export function RunsPage() {
  usePageTitle('Runs');
  const { search } = useLocation();
  const automationId = search.get('automation') ?? '';
  const status = search.get('status') ?? '';
  const startedAfter = search.get('after') ?? '';
  const startedBefore = search.get('before') ?? '';
  const automations = useAutomationNames();
  const [bulkOpen, setBulkOpen] = useState(false);
  const runs = useInfiniteQuery({
    queryKey: ['runs', { automationId, status, startedAfter, startedBefore }],
    queryFn: ({ pageParam }) =>
      listRuns({
        automationId: automationId || undefined,
        status: (RUN_STATUSES as readonly string[]).includes(status) ? [status as RunStatus] : undefined,
        startedAfter: isoOf(startedAfter),
        startedBefore: isoOf(startedBefore),
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

  const setFilter = (name: string, value: string) => {
    const next = new URLSearchParams(search);
    if (value) next.set(name, value);
    else next.delete(name);
    const query = next.toString();
    navigate(`/runs${query ? `?${query}` : ''}`, { replace: true });
  };

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
      <form className="filters" aria-label="Filter runs" onSubmit={(e) => e.preventDefault()}>
        <label>
          Automation
          <select value={automationId} onChange={(e) => setFilter('automation', e.target.value)}>
            <option value="">All automations</option>
            {automations.data?.map((a) => (
              <option key={a.id} value={a.id}>
                {a.name}
              </option>
            ))}
          </select>
        </label>
        <label>
          Status
          <select value={status} onChange={(e) => setFilter('status', e.target.value)}>
            <option value="">Any status</option>
            {RUN_STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
        <label>
          Started after
          <input type="datetime-local" value={startedAfter} onChange={(e) => setFilter('after', e.target.value)} />
        </label>
        <label>
          Started before
          <input type="datetime-local" value={startedBefore} onChange={(e) => setFilter('before', e.target.value)} />
        </label>
      </form>
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
              {duration(
                run.startedAt,
                run.closedAt ?? (run.status === 'RUNNING' || run.status === 'QUEUED' ? null : now),
              )}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
