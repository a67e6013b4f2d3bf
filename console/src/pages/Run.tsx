/**
 * One run: its steps as a timeline (status, output, error), the decisions of a step waiting for a
 * person, and run control (cancel, terminate, rerun), polled while the run is open.
 */
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Fragment, useEffect, useId, useRef, useState } from 'react';
import { api, unwrap, type Schemas } from '../api/client';
import {
  ConfirmButton,
  CopyButton,
  DateTime,
  Duration,
  duration,
  ErrorMessage,
  Loading,
  PageHeading,
  relative,
  StatusBadge,
} from '../components';
import { CONFIG } from '../config';
import { Link, navigate, usePageTitle } from '../router';
import { hasRole, useSession } from '../session';

const OPEN = new Set(['RUNNING', 'QUEUED']);

export function temporalUrl(runId: string): string {
  return `${CONFIG.temporalUiUrl.replace(/\/$/, '')}/namespaces/${encodeURIComponent(CONFIG.namespace)}/workflows/${encodeURIComponent(runId)}`;
}

/** The trace backend's page of a traced run (TRACE_UI_URL, `{traceId}` replaced), or undefined. */
export function traceUrl(traceId: string | undefined): string | undefined {
  if (!CONFIG.traceUiUrl || !traceId) return undefined;
  return CONFIG.traceUiUrl.split('{traceId}').join(encodeURIComponent(traceId));
}

export function useRun(id: string) {
  return useQuery({
    queryKey: ['run', id],
    queryFn: () =>
      unwrap(api.GET('/api/v1/automation_executions/{id}', { params: { path: { id } } })).then((r) => r.execution),
    refetchInterval: (query) => (query.state.data && !OPEN.has(query.state.data.status) ? false : 2_000),
  });
}

export function RunPage({ id }: { id: string }) {
  usePageTitle('Run');
  const run = useRun(id);
  const session = useSession();
  const queryClient = useQueryClient();
  const superAdmin = hasRole(session.data, 'super_admin');
  const [reason, setReason] = useState('');
  const reasonId = useId();
  const [cancelReason, setCancelReason] = useState('');
  const cancelReasonId = useId();
  const [decided, setDecided] = useState<(Decided & { stepId: string }) | null>(null);
  const refresh = () => queryClient.invalidateQueries({ queryKey: ['run', id] });

  if (run.isPending) return <Loading label="Loading the run" />;
  if (run.isError) return <ErrorMessage error={run.error} />;
  const r = run.data;
  const open = OPEN.has(r.status);
  const rerun = async (fromFailedStep: boolean) => {
    const result = await unwrap(
      api.POST('/api/v1/automation_executions/{id}/rerun', { params: { path: { id } }, body: { fromFailedStep } }),
    );
    await queryClient.invalidateQueries({ queryKey: ['runs'] });
    navigate(`/runs/${encodeURIComponent(result.execution.id)}`);
  };

  return (
    <>
      <PageHeading
        actions={
          <>
            <a href={temporalUrl(r.id)} target="_blank" rel="noreferrer noopener">
              Open in Temporal
            </a>
            {traceUrl(r.traceId) ? (
              <a href={traceUrl(r.traceId)} target="_blank" rel="noreferrer noopener">
                Open trace
              </a>
            ) : null}
          </>
        }
      >
        Run {r.eventId ?? r.id}
      </PageHeading>
      <Ending run={r} />
      <dl className="facts">
        <dt>Status</dt>
        <dd>
          <StatusBadge status={r.status} />
          {r.queue ? <span className="muted"> queued under key “{r.queue.key}”</span> : null}
        </dd>
        <dt>Automation</dt>
        <dd>
          <Link to={`/automations/${encodeURIComponent(r.automationId)}`} title={r.automationId}>
            {r.automationName ?? r.automationId}
          </Link>
          {r.version !== null ? ` (version ${r.version})` : ''}
        </dd>
        <dt>Started</dt>
        <dd>
          <DateTime value={r.startedAt} />
        </dd>
        <dt>Closed</dt>
        <dd>
          <DateTime value={r.closedAt} /> {r.closedAt ? `(${duration(r.startedAt, r.closedAt)})` : null}
        </dd>
        <dt>Run id</dt>
        <dd>
          <code>{r.id}</code>
        </dd>
        {r.rerunOf ? (
          <>
            <dt>Rerun of</dt>
            <dd>
              <Link to={`/runs/${encodeURIComponent(r.rerunOf)}`}>{r.rerunOf}</Link>
            </dd>
          </>
        ) : null}
        {r.reruns.length > 0 ? (
          <>
            <dt>Reruns</dt>
            <dd>
              {r.reruns.map((rid) => (
                <Link key={rid} to={`/runs/${encodeURIComponent(rid)}`}>
                  {rid}
                </Link>
              ))}
            </dd>
          </>
        ) : null}
      </dl>
      {r.error ? (
        <p className="error">
          <strong>Error:</strong> {r.error}
        </p>
      ) : null}

      {superAdmin ? (
        <section aria-label="Run control" className="actions">
          <ConfirmButton
            label="Cancel run"
            title="Cancel this run?"
            description="The run is asked to stop: the step in progress ends and no further step starts."
            disabled={!open}
            onConfirm={async () => {
              const body = cancelReason.trim() ? { reason: cancelReason.trim() } : {};
              await unwrap(api.POST('/api/v1/automation_executions/{id}/cancel', { params: { path: { id } }, body }));
              await refresh();
            }}
          >
            <label htmlFor={cancelReasonId}>Reason (optional)</label>
            <input id={cancelReasonId} value={cancelReason} onChange={(e) => setCancelReason(e.target.value)} />
          </ConfirmButton>
          <ConfirmButton
            label="Terminate run"
            title="Terminate this run?"
            description="The run ends at once; no cleanup code runs."
            disabled={!open}
            onConfirm={async () => {
              await unwrap(
                api.POST('/api/v1/automation_executions/{id}/terminate', {
                  params: { path: { id } },
                  body: { reason },
                }),
              );
              await refresh();
            }}
          >
            <label htmlFor={reasonId}>Reason</label>
            <input id={reasonId} value={reason} onChange={(e) => setReason(e.target.value)} />
          </ConfirmButton>
          <ConfirmButton
            label="Rerun"
            title="Rerun with the same payload?"
            description="A new run starts with this run's payload on the automation's published version."
            danger={false}
            disabled={open}
            onConfirm={() => rerun(false)}
          />
          {r.status === 'FAILED' ? (
            <ConfirmButton
              label="Rerun from the failed step"
              title="Retry from the failed step?"
              description="A new run on the original version reuses the results of the steps before the failed one."
              danger={false}
              onConfirm={() => rerun(true)}
            />
          ) : null}
        </section>
      ) : null}

      <h2>Steps</h2>
      {decided ? <DecidedNote {...decided} what={`Step ${decided.stepId}`} /> : null}
      <StepTimeline runId={r.id} steps={r.steps} onDecided={setDecided} />
      {r.trigger !== undefined ? <Payload value={r.trigger} /> : null}
    </>
  );
}

type Execution = Schemas['Execution'];

/** Who canceled or terminated the run and why, or who rejected the approval it failed on, in words. */
function Ending({ run }: { run: Execution }) {
  const who = (actor: string | null, name: string | null) =>
    actor === null ? (
      'someone on the workflow engine directly (not through this service)'
    ) : (
      <abbr title={actor}>{name ?? actor}</abbr>
    );
  if (run.closedBy) {
    const { actor, actorDisplayName, reason, bulkActionId } = run.closedBy;
    return (
      <p className="panel ending">
        {run.status === 'CANCELED' ? 'Canceled' : 'Terminated'} by {who(actor, actorDisplayName)}
        {bulkActionId ? (
          <>
            {' '}
            through bulk action <code>{bulkActionId}</code>
          </>
        ) : null}
        {reason ? `: “${reason}”` : ' (no reason given)'}.
      </p>
    );
  }
  if (run.rejectedBy) {
    const { actor, actorDisplayName, stepId, comment } = run.rejectedBy;
    return (
      <p className="panel ending">
        Rejected by {who(actor, actorDisplayName)} at step {stepId}
        {comment ? `: “${comment}”` : ''}.
      </p>
    );
  }
  return null;
}

/** The payload the run was started with, as received, with Copy. */
function Payload({ value }: { value: unknown }) {
  const text = JSON.stringify(value, null, 2) ?? 'null';
  return (
    <section aria-labelledby="payload-heading">
      <h2 id="payload-heading">Payload</h2>
      <CopyButton value={text} label="Copy payload" />
      <pre tabIndex={0} aria-label="Payload as JSON">
        {text}
      </pre>
    </section>
  );
}

/**
 * What the approver reads before deciding: the step's details, when it was asked and when the
 * timeout decides (absolute, in the browser's zone, and relative). The title is the caller's heading.
 */
export function ApprovalFacts({ approval }: { approval: Schemas['ApprovalContext'] }) {
  return (
    <div className="approval-context">
      {approval.details.length > 0 ? (
        <dl className="facts">
          {approval.details.map((detail) => (
            <Fragment key={detail.label}>
              <dt>{detail.label}</dt>
              <dd>{detail.value}</dd>
            </Fragment>
          ))}
        </dl>
      ) : null}
      <p className="muted">
        Asked <DateTime value={approval.requestedAt} /> ({relative(approval.requestedAt)}).{' '}
        {approval.deadline ? (
          <>
            Deadline <DateTime value={approval.deadline} /> ({relative(approval.deadline)}): then the timeout decides.
          </>
        ) : (
          'No deadline: it waits until someone decides.'
        )}
      </p>
    </div>
  );
}

export function StepTimeline({
  runId,
  steps,
  onDecided,
}: {
  runId: string;
  steps: Schemas['StepResult'][];
  onDecided?: (decided: Decided & { stepId: string }) => void;
}) {
  if (steps.length === 0) return <p className="muted">No step has started.</p>;
  return (
    <ol className="timeline" aria-label="Steps">
      {steps.map((step) => (
        <li key={step.id} className={`step ${step.status.toLowerCase()}`}>
          <div className="step-head">
            <strong>{step.id}</strong> <span className="muted">{step.kind}</span> <StatusBadge status={step.status} />
          </div>
          {step.startedAt ? (
            <p className="muted step-times">
              Started <DateTime value={step.startedAt} />
              {', '}
              {step.finishedAt ? 'took ' : 'running for '}
              <Duration start={step.startedAt} end={step.finishedAt} />
              {step.attempts !== undefined ? `, ${step.attempts} ${step.attempts === 1 ? 'attempt' : 'attempts'}` : ''}
            </p>
          ) : step.status === 'NOT_RUN' ? (
            <p className="muted">Never ran: the run ended before it.</p>
          ) : null}
          {step.approval ? (
            <>
              <p className="approval-title">{step.approval.title}</p>
              <ApprovalFacts approval={step.approval} />
            </>
          ) : null}
          {step.error ? <p className="error">{step.error}</p> : null}
          {step.output ? (
            <details>
              <summary>Output of {step.id}</summary>
              <pre>{JSON.stringify(step.output, null, 2)}</pre>
            </details>
          ) : null}
          {step.status === 'WAITING_FOR_APPROVAL' ? (
            <Decision runId={runId} stepId={step.id} onDecided={(d) => onDecided?.({ ...d, stepId: step.id })} />
          ) : null}
        </li>
      ))}
    </ol>
  );
}

/**
 * Says what was just decided and by whom, and takes the focus: the decided step's buttons are gone,
 * so the focus would otherwise drop to the page's body.
 */
export function DecidedNote({
  what,
  decision,
  by,
  comment,
  focus = true,
}: Decided & { what: string; focus?: boolean }) {
  const ref = useRef<HTMLParagraphElement>(null);
  useEffect(() => {
    if (focus) ref.current?.focus();
  }, [focus]);
  return (
    <p ref={ref} role="status" tabIndex={-1} className="panel decided">
      {what} {decision} by {by}
      {comment ? `: “${comment}”` : ''}.
    </p>
  );
}

/** What a person decided, as the page says it afterwards. */
export interface Decided {
  decision: 'approved' | 'rejected';
  by: string;
  comment: string;
}

/**
 * Approve or Reject a step waiting for a person: a comment is optional to approve and asked for to
 * reject (the run fails on it; the comment says why). `onDecided` hears what was decided and by whom.
 */
export function Decision({
  runId,
  stepId,
  onDecided,
}: {
  runId: string;
  stepId: string;
  onDecided?: (decided: Decided) => void;
}) {
  const queryClient = useQueryClient();
  const session = useSession();
  const [comment, setComment] = useState('');
  const [missing, setMissing] = useState(false);
  const commentId = useId();
  const commentRef = useRef<HTMLTextAreaElement>(null);
  const decide = useMutation({
    mutationFn: async (decision: 'approve' | 'reject') => {
      const params = { path: { id: runId, stepId } };
      const body = comment ? { comment } : {};
      return decision === 'approve'
        ? unwrap(api.POST('/api/v1/automation_executions/{id}/steps/{stepId}/approve', { params, body }))
        : unwrap(api.POST('/api/v1/automation_executions/{id}/steps/{stepId}/reject', { params, body }));
    },
    onSuccess: async (_data, decision) => {
      const me = session.data?.person;
      onDecided?.({
        decision: decision === 'approve' ? 'approved' : 'rejected',
        by: me?.name || me?.id || 'you',
        comment,
      });
      await queryClient.invalidateQueries({ queryKey: ['run', runId] });
      await queryClient.invalidateQueries({ queryKey: ['approvals'] });
    },
  });
  if (!hasRole(session.data, 'super_admin', 'admin')) return <p className="muted">Waiting for an approver.</p>;
  const reject = () => {
    if (comment.trim() === '') {
      setMissing(true);
      commentRef.current?.focus();
      return;
    }
    decide.mutate('reject');
  };
  const hintId = `${commentId}-hint`;
  return (
    <div className="decision">
      <label htmlFor={commentId}>Comment</label>
      <textarea
        id={commentId}
        ref={commentRef}
        rows={2}
        value={comment}
        aria-invalid={missing || undefined}
        aria-describedby={missing ? hintId : undefined}
        onChange={(e) => {
          setComment(e.target.value);
          if (e.target.value.trim()) setMissing(false);
        }}
      />
      {missing ? (
        <p id={hintId} className="error" role="alert">
          To reject, say why in the comment: the run fails with it.
        </p>
      ) : null}
      <div className="actions">
        <button type="button" className="primary" disabled={decide.isPending} onClick={() => decide.mutate('approve')}>
          Approve
        </button>
        <button type="button" className="danger" disabled={decide.isPending} onClick={reject}>
          Reject
        </button>
      </div>
      <ErrorMessage error={decide.error} />
      {decide.isSuccess ? <p role="status">Decision recorded.</p> : null}
    </div>
  );
}
