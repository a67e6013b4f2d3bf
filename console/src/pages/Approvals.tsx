/** The approvals inbox: every run waiting on a person, oldest first, each with its decision. */
import { useQuery } from '@tanstack/react-query';
import { allPages, api, unwrap } from '../api/client';
import { listRuns, type RunListItem } from '../api/runs';
import { DateTime, ErrorMessage, Loading, PageHeading } from '../components';
import { Link, usePageTitle } from '../router';
import { useEffect, useRef, useState } from 'react';
import { ApprovalFacts, Decision, DecidedNote, type Decided } from './Run';

export function ApprovalsPage() {
  usePageTitle('Approvals');
  const [decided, setDecided] = useState<(Decided & { label: string; next: string | null }) | null>(null);
  const inbox = useQuery({
    queryKey: ['approvals'],
    queryFn: async () =>
      (await allPages((token) => listRuns({ waitingForApproval: true, pageToken: token, pageSize: 100 }))).sort(
        (a, b) => a.execution.startedAt.localeCompare(b.execution.startedAt),
      ),
    refetchInterval: 5_000,
  });
  return (
    <>
      <PageHeading>Approvals</PageHeading>
      <p className="muted">Runs waiting for a person’s decision, oldest first.</p>
      <ErrorMessage error={inbox.error} />
      {inbox.isPending ? <Loading label="Loading approvals" /> : null}
      {decided ? (
        <DecidedNote key={decided.label} {...decided} what={decided.label} focus={decided.next === null} />
      ) : null}
      {inbox.data?.length === 0 ? <p>Nothing is waiting for approval.</p> : null}
      <ul className="cards">
        {inbox.data?.map((item, index, all) => (
          <Approval
            key={item.execution.id}
            item={item}
            focus={decided?.next === item.execution.id}
            onDecided={(d, label) =>
              // The focus moves on to the next card (or the note, when this was the last).
              setDecided({ ...d, label, next: (all[index + 1] ?? all[index - 1])?.execution.id ?? null })
            }
          />
        ))}
      </ul>
    </>
  );
}

/** One run's card: the step the list says waits, decided here (no read of the run itself). */
function Approval({
  item,
  focus,
  onDecided,
}: {
  item: RunListItem;
  focus: boolean;
  onDecided: (decided: Decided, label: string) => void;
}) {
  const step = item.execution.waitingForApproval;
  const approval = item.execution.approval;
  const label = `${item.execution.automationName}, run ${item.execution.eventId ?? item.execution.id}`;
  const ref = useRef<HTMLElement>(null);
  useEffect(() => {
    if (focus) ref.current?.focus();
  }, [focus]);
  return (
    <li>
      <section aria-label={label} className="card" ref={ref} tabIndex={-1}>
        <h2>
          <Link to={`/runs/${encodeURIComponent(item.execution.id)}`}>{approval?.title ?? label}</Link>
        </h2>
        <p className="muted">
          {approval ? `${label}. ` : ''}Started <DateTime value={item.execution.startedAt} />
        </p>
        {approval ? <ApprovalFacts approval={approval} /> : null}
        <PayloadDetails runId={item.execution.id} />
        {step ? (
          <div>
            <p>
              Step <strong>{step.stepId}</strong> waits for approval.
            </p>
            <Decision runId={item.execution.id} stepId={step.stepId} onDecided={(d) => onDecided(d, label)} />
          </div>
        ) : null}
      </section>
    </li>
  );
}

/** The run's payload, read when the person opens it: one click from the card. */
function PayloadDetails({ runId }: { runId: string }) {
  const [open, setOpen] = useState(false);
  const run = useQuery({
    queryKey: ['run', runId, 'payload'],
    queryFn: () =>
      unwrap(api.GET('/api/v1/automation_executions/{id}', { params: { path: { id: runId } } })).then(
        (r) => r.execution.trigger,
      ),
    enabled: open,
    staleTime: Infinity,
  });
  return (
    <details onToggle={(e) => setOpen(e.currentTarget.open)}>
      <summary>Payload</summary>
      <ErrorMessage error={run.error} />
      {run.isFetching ? <Loading label="Loading the payload" /> : null}
      {run.isSuccess ? (
        <pre tabIndex={0} aria-label="Payload as JSON">
          {JSON.stringify(run.data, null, 2) ?? 'null'}
        </pre>
      ) : null}
    </details>
  );
}
