/** The approvals inbox: every run waiting on a person, oldest first, each with its decision. */
import { useQuery } from '@tanstack/react-query';
import { allPages } from '../api/client';
import { listRuns, type RunListItem } from '../api/runs';
import { DateTime, ErrorMessage, Loading, PageHeading } from '../components';
import { Link, usePageTitle } from '../router';
import { Decision } from './Run';

export function ApprovalsPage() {
  usePageTitle('Approvals');
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
      {inbox.data?.length === 0 ? <p>Nothing is waiting for approval.</p> : null}
      <ul className="cards">
        {inbox.data?.map((item) => (
          <Approval key={item.execution.id} item={item} />
        ))}
      </ul>
    </>
  );
}

/** One run's card: the step the list says waits, decided here (no read of the run itself). */
function Approval({ item }: { item: RunListItem }) {
  const step = item.execution.waitingForApproval;
  const label = `${item.execution.automationName}, run ${item.execution.eventId ?? item.execution.id}`;
  return (
    <li>
      <section aria-label={label} className="card">
        <h2>
          <Link to={`/runs/${encodeURIComponent(item.execution.id)}`}>{label}</Link>
        </h2>
        <p className="muted">
          Started <DateTime value={item.execution.startedAt} />
        </p>
        {step ? (
          <div>
            <p>
              Step <strong>{step.stepId}</strong> waits for approval.
            </p>
            <Decision runId={item.execution.id} stepId={step.stepId} />
          </div>
        ) : null}
      </section>
    </li>
  );
}
