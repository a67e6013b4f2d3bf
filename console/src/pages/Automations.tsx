/** Automations: name, published version, auth method, trigger state. */
import { useQuery } from '@tanstack/react-query';
import { allPages, api, unwrap } from '../api/client';
import { DateTime, ErrorMessage, Loading, PageHeading } from '../components';
import { Link, navigate, usePageTitle } from '../router';
import { hasRole, useSession } from '../session';

export function AutomationsPage() {
  usePageTitle('Automations');
  const session = useSession();
  const automations = useQuery({
    queryKey: ['automations', 'list'],
    queryFn: () =>
      allPages((token) =>
        unwrap(
          api.GET('/api/v1/automations', { params: { query: { page_size: 100, page_token: token || undefined } } }),
        ),
      ),
  });
  return (
    <>
      <PageHeading
        actions={
          hasRole(session.data, 'super_admin') ? (
            <button type="button" className="primary" onClick={() => navigate('/automations/new')}>
              New automation
            </button>
          ) : null
        }
      >
        Automations
      </PageHeading>
      <ErrorMessage error={automations.error} />
      {automations.isPending ? <Loading label="Loading automations" /> : null}
      {automations.data?.length === 0 ? <p>No automation yet.</p> : null}
      {automations.data && automations.data.length > 0 ? (
        <table>
          <caption className="visually-hidden">Automations</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Published</th>
              <th scope="col">Auth method</th>
              <th scope="col">Trigger</th>
              <th scope="col">Flow control</th>
              <th scope="col">Updated</th>
            </tr>
          </thead>
          <tbody>
            {automations.data.map(({ automation: a }) => (
              <tr key={a.id}>
                <td>
                  <Link to={`/automations/${encodeURIComponent(a.id)}`}>{a.displayName}</Link>
                </td>
                <td>
                  {a.published ? (
                    `version ${a.publishedVersion ?? a.version}`
                  ) : (
                    <span className="muted">draft only</span>
                  )}
                </td>
                <td>{a.trigger.incomingWebhook?.authMethod ?? (a.trigger.schedule ? 'schedule' : 'event')}</td>
                <td>
                  {(a.trigger.incomingWebhook ?? a.trigger.schedule ?? a.trigger.event)?.enabled
                    ? 'enabled'
                    : 'disabled'}
                </td>
                <td>
                  {[
                    a.filter ? 'filter' : '',
                    a.concurrency ? `concurrency ${a.concurrency.limit}` : '',
                    a.rateLimit ? `rate ${a.rateLimit.limit}/${a.rateLimit.period}` : '',
                  ]
                    .filter(Boolean)
                    .join(', ') || <span className="muted">none</span>}
                </td>
                <td>
                  <DateTime value={a.updatedAt} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
    </>
  );
}
