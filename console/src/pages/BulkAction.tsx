/**
 * A bulk action on the runs the Runs page's filters select (one automation): first a dry run that
 * shows the matched count and a sample, then, confirmed in a dialog, the action on exactly the runs
 * that preview matched (its previewId), then its progress, polled until it ends, with a stop button.
 */
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useId, useState } from 'react';
import { api, unwrap, type Schemas } from '../api/client';
import { ConfirmButton, ErrorMessage, StatusBadge } from '../components';
import { Link } from '../router';

type Action = Schemas['BulkAction']['action'];
type Preview = Schemas['BulkDryRunResponse'];

export interface BulkFilters {
  automationId: string;
  automationName: string;
  status?: Schemas['BulkFilter']['status'];
  startedAfter?: string;
  startedBefore?: string;
}

const ACTIONS: Array<{ value: Action; label: string }> = [
  { value: 'cancel', label: 'Cancel' },
  { value: 'terminate', label: 'Terminate' },
  { value: 'rerun', label: 'Rerun' },
];

export function BulkActionForm({ filters }: { filters: BulkFilters }) {
  const ids = useId();
  const [action, setAction] = useState<Action>('cancel');
  const [where, setWhere] = useState('');
  const [reason, setReason] = useState('');
  const [preview, setPreview] = useState<Preview | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const [started, setStarted] = useState<string | null>(null);

  // A preview belongs to the form it was made from: any change asks for a new one.
  const change =
    <T,>(set: (value: T) => void) =>
    (value: T) => {
      set(value);
      setPreview(null);
    };

  const dryRun = async () => {
    setBusy(true);
    setError(null);
    setPreview(null);
    try {
      const answer = await unwrap(
        api.POST('/api/v1/automation_executions/bulk', {
          body: {
            action,
            reason,
            dryRun: true,
            filter: {
              automationId: filters.automationId,
              status: filters.status && filters.status.length > 0 ? filters.status : undefined,
              startedAfter: filters.startedAfter,
              startedBefore: filters.startedBefore,
              where: where.trim() || undefined,
            },
          },
        }),
      );
      setPreview(answer as Preview);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };

  const start = async () => {
    if (!preview) throw new Error('Preview the matched runs first.');
    const answer = await unwrap(
      api.POST('/api/v1/automation_executions/bulk', { body: { previewId: preview.previewId, action, reason } }),
    );
    setStarted((answer as Schemas['BulkActionResponse']).bulkAction.id);
    setPreview(null);
  };

  return (
    <section aria-labelledby={`${ids}-h`} className="panel">
      <h2 id={`${ids}-h`}>Bulk action</h2>
      <form
        aria-label="Bulk action"
        noValidate
        onSubmit={(e) => {
          e.preventDefault();
          void dryRun();
        }}
      >
        <p>
          On the runs of <strong>{filters.automationName}</strong>
          {filters.status?.length ? ` with status ${filters.status.join(', ')}` : ''}
          {filters.startedAfter ? `, started after ${new Date(filters.startedAfter).toLocaleString()}` : ''}
          {filters.startedBefore ? `, started before ${new Date(filters.startedBefore).toLocaleString()}` : ''} (the
          filters above).
        </p>
        <div className="row">
          <div className="field">
            <label htmlFor={`${ids}-action`}>Action</label>
            <select id={`${ids}-action`} value={action} onChange={(e) => change(setAction)(e.target.value as Action)}>
              {ACTIONS.map((a) => (
                <option key={a.value} value={a.value}>
                  {a.label}
                </option>
              ))}
            </select>
          </div>
          <div className="field">
            <label htmlFor={`${ids}-where`}>Where</label>
            <input
              id={`${ids}-where`}
              className="mono"
              value={where}
              onChange={(e) => change(setWhere)(e.target.value)}
              aria-describedby={`${ids}-where-hint`}
            />
            <small id={`${ids}-where-hint`} className="muted">
              Optional: CEL over ctx.trigger, the run’s payload.
            </small>
          </div>
          <div className="field">
            <label htmlFor={`${ids}-reason`}>Reason</label>
            <input
              id={`${ids}-reason`}
              value={reason}
              maxLength={500}
              required
              onChange={(e) => change(setReason)(e.target.value)}
            />
          </div>
        </div>
        <div className="actions">
          <button type="submit" disabled={busy}>
            Preview
          </button>
        </div>
      </form>
      <ErrorMessage error={error} />
      {preview ? (
        <div role="region" aria-label="Preview">
          <p role="status">
            {preview.matched} runs match.
            {preview.whereErrors > 0
              ? ` ${preview.whereErrors} runs were left out: the where expression failed on their payload.`
              : ''}
          </p>
          {preview.sample.length > 0 ? (
            <ul aria-label="Sample of the matched runs">
              {preview.sample.map((id) => (
                <li key={id}>
                  <Link to={`/runs/${encodeURIComponent(id)}`}>{id}</Link>
                </li>
              ))}
            </ul>
          ) : null}
          <ConfirmButton
            label={`${ACTIONS.find((a) => a.value === action)?.label ?? action} ${preview.matched} runs`}
            title={`${ACTIONS.find((a) => a.value === action)?.label ?? action} ${preview.matched} runs?`}
            description="The action applies to exactly the runs this preview matched; a run that started since is not touched."
            danger={action !== 'rerun'}
            disabled={preview.matched === 0}
            onConfirm={start}
          />
        </div>
      ) : null}
      {started ? <BulkProgress id={started} /> : null}
    </section>
  );
}

/** A bulk action's progress, polled until it is no longer RUNNING; it can be stopped meanwhile. */
export function BulkProgress({ id }: { id: string }) {
  const queryClient = useQueryClient();
  const headingId = useId();
  const progress = useQuery({
    queryKey: ['bulk-action', id],
    queryFn: async () => (await unwrap(api.GET('/api/v1/bulk_actions/{id}', { params: { path: { id } } }))).bulkAction,
    refetchInterval: (query) => (query.state.data && query.state.data.state !== 'RUNNING' ? false : 1_000),
  });
  const [stopError, setStopError] = useState<unknown>(null);
  const stop = async () => {
    setStopError(null);
    try {
      const answer = await unwrap(api.POST('/api/v1/bulk_actions/{id}/cancel', { params: { path: { id } } }));
      queryClient.setQueryData(['bulk-action', id], answer.bulkAction);
    } catch (err) {
      setStopError(err);
    }
  };
  const b = progress.data;
  return (
    <div role="region" aria-labelledby={headingId}>
      <h3 id={headingId}>Progress of bulk action {id}</h3>
      <ErrorMessage error={progress.error ?? stopError} />
      {b ? (
        <>
          <p role="status">
            <StatusBadge status={b.state} /> {b.action}: {b.matched} matched, {b.succeeded} succeeded, {b.skipped}{' '}
            skipped, {b.failed} failed.
          </p>
          {b.state === 'RUNNING' ? (
            <button type="button" className="danger" onClick={() => void stop()}>
              Stop bulk action
            </button>
          ) : null}
        </>
      ) : null}
    </div>
  );
}
