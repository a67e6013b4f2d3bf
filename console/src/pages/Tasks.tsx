/**
 * Tasks: the work provisioning gives people. Open provisioning tasks, oldest first, each completed
 * or failed in a dialog (with a comment); and the grants whose deprovision failed (access still in
 * place), each retried in a dialog.
 */
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { allPages, api, unwrap, type Schemas } from '../api/client';
import { ConfirmButton, DateTime, ErrorMessage, Loading, PageHeading } from '../components';
import { Link, usePageTitle } from '../router';
import { useUsers } from './Access';

type Task = Schemas['ProvisioningTask'];

function TaskCard({ task, userName }: { task: Task; userName: (id: string) => string }) {
  const queryClient = useQueryClient();
  const [comment, setComment] = useState('');
  const label = `${task.phase === 'provision' ? 'Provision' : 'Deprovision'} task ${task.id.slice(0, 8)}`;
  const close = (verb: 'complete' | 'fail') => async () => {
    await unwrap(
      api.POST(
        verb === 'complete' ? '/api/v1/provisioning_tasks/{id}/complete' : '/api/v1/provisioning_tasks/{id}/fail',
        {
          params: { path: { id: task.id } },
          body: comment.trim() ? { comment: comment.trim() } : {},
        },
      ),
    );
    setComment('');
    await queryClient.invalidateQueries({ queryKey: ['tasks'] });
    await queryClient.invalidateQueries({ queryKey: ['grants'] });
  };
  const commentField = (
    <label>
      Comment
      <input value={comment} maxLength={1000} onChange={(e) => setComment(e.target.value)} />
    </label>
  );
  return (
    <li>
      <section aria-label={label} className="card">
        <h2>
          <Link to={`/access/grants/${encodeURIComponent(task.grantId)}`}>{label}</Link>
        </h2>
        <p>{task.instructions || <span className="muted">No instructions.</span>}</p>
        <p className="muted">
          {task.step ? `Step ${task.step}. ` : ''}Opened <DateTime value={task.createdAt} />. Assigned to{' '}
          {task.assigneeUserIds.length > 0 ? task.assigneeUserIds.map(userName).join(', ') : 'nobody in particular'}.
        </p>
        <div className="actions">
          <ConfirmButton
            label="Complete"
            danger={false}
            title="Complete this task?"
            description="Say it is done: the grant's provisioning goes on."
            onConfirm={close('complete')}
          >
            {commentField}
          </ConfirmButton>
          <ConfirmButton
            label="Fail"
            title="Fail this task?"
            description="Say it cannot be done: the grant fails, and the steps done before it are undone."
            onConfirm={close('fail')}
          >
            {commentField}
          </ConfirmButton>
        </div>
      </section>
    </li>
  );
}

export function TasksPage() {
  usePageTitle('Tasks');
  const queryClient = useQueryClient();
  const users = useUsers();
  const userName = (id: string) => users.data?.find((u) => u.user.id === id)?.user.displayName ?? id;
  const tasks = useQuery({
    queryKey: ['tasks'],
    queryFn: () =>
      allPages((token) =>
        unwrap(
          api.GET('/api/v1/provisioning_tasks', {
            params: { query: { state: ['OPEN'], page_size: 100, page_token: token || undefined } },
          }),
        ),
      ),
    refetchInterval: 5_000,
  });
  const stuck = useQuery({
    queryKey: ['grants', 'deprovision-failed'],
    queryFn: async () =>
      (
        await allPages((token) =>
          unwrap(
            api.GET('/api/v1/grants', {
              params: { query: { state: ['DEPROVISIONING'], page_size: 100, page_token: token || undefined } },
            }),
          ),
        )
      )
        .map(({ grant }) => grant)
        .filter((g) => g.provisioning.some((e) => e.phase === 'deprovision' && e.state === 'FAILED')),
    refetchInterval: 5_000,
  });
  return (
    <>
      <PageHeading>Tasks</PageHeading>
      <p className="muted">Provisioning work for people, oldest first, and access that could not be taken back.</p>
      <h2>Open provisioning tasks</h2>
      <ErrorMessage error={tasks.error} />
      {tasks.isPending ? <Loading label="Loading tasks" /> : null}
      {tasks.data?.length === 0 ? <p>No open tasks.</p> : null}
      <ul className="cards">
        {tasks.data?.map(({ provisioningTask }) => (
          <TaskCard key={provisioningTask.id} task={provisioningTask} userName={userName} />
        ))}
      </ul>
      <h2>Failed deprovisions</h2>
      <ErrorMessage error={stuck.error} />
      {stuck.data?.length === 0 ? <p>No failed deprovisions.</p> : null}
      <ul className="cards">
        {stuck.data?.map((grant) => {
          const failed = grant.provisioning.find((e) => e.phase === 'deprovision' && e.state === 'FAILED');
          const label = `Grant ${grant.id.slice(0, 8)} of ${userName(grant.userId)}`;
          return (
            <li key={grant.id}>
              <section aria-label={label} className="card">
                <h3>
                  <Link to={`/access/grants/${encodeURIComponent(grant.id)}`}>{label}</Link>
                </h3>
                <p className="error">{failed?.error}</p>
                <ConfirmButton
                  label="Retry"
                  danger={false}
                  title="Retry the deprovision?"
                  description="The deprovisioning runs again from the step that failed, as a new attempt."
                  onConfirm={async () => {
                    await unwrap(
                      api.POST('/api/v1/grants/{id}/revoke', {
                        params: { path: { id: grant.id } },
                        body: { reason: grant.revokeReason ?? 'retry' },
                      }),
                    );
                    await queryClient.invalidateQueries({ queryKey: ['grants'] });
                  }}
                />
              </section>
            </li>
          );
        })}
      </ul>
    </>
  );
}
