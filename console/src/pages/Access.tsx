/**
 * Access: who holds what. A user's grants (state, expiry, Revoke and Extend, each asked in a
 * dialog), "Grant access" for that user, an entitlement's grants, and a grant's page with its
 * provisioning timeline. Names come from the users and entitlements the role may read.
 */
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useId, useState, type FormEvent } from 'react';
import { allPages, api, unwrap, type Schemas } from '../api/client';
import { ConfirmButton, DateTime, ErrorMessage, Loading, PageHeading, StatusBadge } from '../components';
import { Link, navigate, usePageTitle, useLocation } from '../router';
import { hasRole, useSession } from '../session';

type Grant = Schemas['Grant'];

/** Durations offered for a grant and an extension (protobuf-JSON, as the API takes them). */
const DURATIONS: Array<[string, string]> = [
  ['3600s', '1 hour'],
  ['86400s', '1 day'],
  ['604800s', '7 days'],
  ['2592000s', '30 days'],
];

/** Every user the role may read (100 a page, at most 10 pages). */
export function useUsers() {
  return useQuery({
    queryKey: ['users'],
    queryFn: () =>
      allPages(
        (token) =>
          unwrap(api.GET('/api/v1/users', { params: { query: { page_size: 100, page_token: token || undefined } } })),
        10,
      ),
  });
}

/** Every entitlement the role may read (search, 100 a page), by id. */
function useEntitlements() {
  return useQuery({
    queryKey: ['entitlements'],
    queryFn: async () => {
      const list = await allPages(
        (token) =>
          unwrap(api.POST('/api/v1/search/entitlements', { body: { page_size: 100, page_token: token || undefined } })),
        10,
      );
      return new Map(list.map(({ appEntitlement }) => [appEntitlement.id, appEntitlement]));
    },
  });
}

function useCanWrite(): boolean {
  const session = useSession();
  return hasRole(session.data, 'admin', 'super_admin');
}

async function refreshGrants(queryClient: ReturnType<typeof useQueryClient>): Promise<void> {
  await queryClient.invalidateQueries({ queryKey: ['grants'] });
  await queryClient.invalidateQueries({ queryKey: ['grant'] });
  await queryClient.invalidateQueries({ queryKey: ['tasks'] });
}

/** Revoke and Extend of one grant, each asked in a dialog. */
export function GrantActions({ grant, name }: { grant: Grant; name: string }) {
  const queryClient = useQueryClient();
  const [reason, setReason] = useState('');
  const [extendBy, setExtendBy] = useState(DURATIONS[0]![0]);
  const ids = useId();
  const live = grant.state === 'PROVISIONING' || grant.state === 'GRANTED';
  return (
    <div className="actions">
      {live ? (
        <ConfirmButton
          label="Revoke"
          title={`Revoke ${name}?`}
          description="The access is taken back by the entitlement's deprovisioning policy."
          onConfirm={async () => {
            await unwrap(
              api.POST('/api/v1/grants/{id}/revoke', {
                params: { path: { id: grant.id } },
                body: { reason: reason.trim() || 'revoked in the console' },
              }),
            );
            setReason('');
            await refreshGrants(queryClient);
          }}
        >
          <label>
            Reason
            <input value={reason} maxLength={500} onChange={(e) => setReason(e.target.value)} />
          </label>
        </ConfirmButton>
      ) : null}
      {grant.state === 'GRANTED' && grant.expiresAt ? (
        <ConfirmButton
          label="Extend"
          danger={false}
          title={`Extend ${name}?`}
          description="The grant then ends this long from now (at most the entitlement's maximum duration)."
          onConfirm={async () => {
            await unwrap(
              api.POST('/api/v1/grants/{id}/extend', {
                params: { path: { id: grant.id } },
                body: { duration: extendBy },
              }),
            );
            await refreshGrants(queryClient);
          }}
        >
          <label htmlFor={`${ids}-extend`}>Ends in</label>
          <select id={`${ids}-extend`} value={extendBy} onChange={(e) => setExtendBy(e.target.value)}>
            {DURATIONS.map(([value, label]) => (
              <option key={value} value={value}>
                {label}
              </option>
            ))}
          </select>
        </ConfirmButton>
      ) : null}
    </div>
  );
}

/** A table of grants, each row linked to its grant's page. */
function GrantTable({
  grants,
  caption,
  nameOf,
  whoOf,
}: {
  grants: Grant[];
  caption: string;
  nameOf: (grant: Grant) => string;
  whoOf?: (grant: Grant) => string;
}) {
  const canWrite = useCanWrite();
  if (grants.length === 0) return <p className="muted">No grants.</p>;
  return (
    <table>
      <caption className="visually-hidden">{caption}</caption>
      <thead>
        <tr>
          <th scope="col">{whoOf ? 'User' : 'Entitlement'}</th>
          <th scope="col">State</th>
          <th scope="col">Granted</th>
          <th scope="col">Expires</th>
          {canWrite ? <th scope="col">Actions</th> : null}
        </tr>
      </thead>
      <tbody>
        {grants.map((grant) => (
          <tr key={grant.id}>
            <td>
              <Link to={`/access/grants/${encodeURIComponent(grant.id)}`}>{whoOf ? whoOf(grant) : nameOf(grant)}</Link>
            </td>
            <td>
              <StatusBadge status={grant.state} />
            </td>
            <td>
              <DateTime value={grant.grantedAt} />
            </td>
            <td>{grant.expiresAt ? <DateTime value={grant.expiresAt} /> : <span className="muted">standing</span>}</td>
            {canWrite ? (
              <td>
                <GrantActions grant={grant} name={nameOf(grant)} />
              </td>
            ) : null}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** "Grant access": one entitlement for the chosen user, with an optional duration and justification. */
function GrantAccessForm({ userId, entitlements }: { userId: string; entitlements: Schemas['AppEntitlement'][] }) {
  const queryClient = useQueryClient();
  const [entitlementId, setEntitlementId] = useState('');
  const [duration, setDuration] = useState('');
  const [justification, setJustification] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const ids = useId();
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const entitlement = entitlements.find((e) => e.id === entitlementId);
    if (!entitlement) return;
    setBusy(true);
    setError(null);
    try {
      await unwrap(
        api.POST('/api/v1/grants', {
          body: {
            userId,
            appId: entitlement.appId,
            appEntitlementId: entitlement.id,
            ...(duration ? { duration } : {}),
            ...(justification.trim() ? { justification: justification.trim() } : {}),
          },
        }),
      );
      setEntitlementId('');
      setJustification('');
      await refreshGrants(queryClient);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <form onSubmit={(e) => void submit(e)} aria-labelledby="grant-access" className="panel">
      <h2 id="grant-access">Grant access</h2>
      <label htmlFor={`${ids}-entitlement`}>Entitlement</label>
      <select
        id={`${ids}-entitlement`}
        required
        value={entitlementId}
        onChange={(e) => setEntitlementId(e.target.value)}
      >
        <option value="">Choose an entitlement</option>
        {entitlements.map((e) => (
          <option key={e.id} value={e.id}>
            {e.displayName}
          </option>
        ))}
      </select>
      <label htmlFor={`${ids}-duration`}>Duration</label>
      <select id={`${ids}-duration`} value={duration} onChange={(e) => setDuration(e.target.value)}>
        <option value="">The entitlement's maximum, or standing</option>
        {DURATIONS.map(([value, label]) => (
          <option key={value} value={value}>
            {label}
          </option>
        ))}
      </select>
      <label>
        Justification
        <input value={justification} maxLength={1000} onChange={(e) => setJustification(e.target.value)} />
      </label>
      <ErrorMessage error={error} />
      <button type="submit" className="primary" disabled={busy}>
        Grant access
      </button>
    </form>
  );
}

/** /access: pick a user, see and change their grants. */
export function AccessPage() {
  usePageTitle('Access');
  const { search } = useLocation();
  const userId = search.get('user') ?? '';
  const users = useUsers();
  const entitlements = useEntitlements();
  const canWrite = useCanWrite();
  const grants = useQuery({
    queryKey: ['grants', 'user', userId],
    enabled: userId !== '',
    queryFn: () =>
      allPages((token) =>
        unwrap(
          api.GET('/api/v1/grants', { params: { query: { userId, page_size: 100, page_token: token || undefined } } }),
        ),
      ),
    refetchInterval: 5_000,
  });
  const user = users.data?.find((u) => u.user.id === userId)?.user;
  const userField = useId();
  const nameOf = (grant: Grant) =>
    entitlements.data?.get(grant.appEntitlementId)?.displayName ?? grant.appEntitlementId;
  return (
    <>
      <PageHeading>Access</PageHeading>
      <p className="muted">
        Who holds which entitlement. Open tasks and failed deprovisions are on <Link to="/tasks">Tasks</Link>.
      </p>
      <ErrorMessage error={users.error ?? entitlements.error} />
      {users.isPending ? <Loading label="Loading users" /> : null}
      <div className="filters">
        <label htmlFor={userField}>User</label>
        <select
          id={userField}
          value={userId}
          onChange={(e) =>
            navigate(e.target.value ? `/access?user=${encodeURIComponent(e.target.value)}` : '/access', {
              replace: true,
            })
          }
        >
          <option value="">Choose a user</option>
          {users.data?.map(({ user: u }) => (
            <option key={u.id} value={u.id}>
              {u.displayName} ({u.email || u.id})
            </option>
          ))}
        </select>
      </div>
      {userId ? (
        <section aria-labelledby="user-grants">
          <h2 id="user-grants">Grants of {user?.displayName ?? userId}</h2>
          <ErrorMessage error={grants.error} />
          {grants.isPending ? <Loading label="Loading grants" /> : null}
          {grants.data ? (
            <GrantTable
              grants={grants.data.map(({ grant }) => grant)}
              caption={`Grants of ${user?.displayName ?? userId}`}
              nameOf={nameOf}
            />
          ) : null}
          {canWrite && entitlements.data ? (
            <GrantAccessForm userId={userId} entitlements={[...entitlements.data.values()]} />
          ) : null}
        </section>
      ) : null}
      {entitlements.data && entitlements.data.size > 0 ? (
        <section aria-labelledby="by-entitlement">
          <h2 id="by-entitlement">By entitlement</h2>
          <ul>
            {[...entitlements.data.values()].map((e) => (
              <li key={e.id}>
                <Link to={`/access/entitlements/${encodeURIComponent(e.appId)}/${encodeURIComponent(e.id)}`}>
                  {e.displayName}
                </Link>{' '}
                <span className="muted">{e.grantCount} open</span>
              </li>
            ))}
          </ul>
        </section>
      ) : null}
    </>
  );
}

/** /access/entitlements/<appId>/<id>: the entitlement's grants. */
export function EntitlementAccessPage({ appId, id }: { appId: string; id: string }) {
  const users = useUsers();
  const entitlement = useQuery({
    queryKey: ['entitlement', appId, id],
    queryFn: () =>
      unwrap(api.GET('/api/v1/apps/{app_id}/entitlements/{id}', { params: { path: { app_id: appId, id } } })),
  });
  const name = entitlement.data?.appEntitlement.displayName ?? id;
  usePageTitle(`Access: ${name}`);
  const grants = useQuery({
    queryKey: ['grants', 'entitlement', id],
    queryFn: () =>
      allPages((token) =>
        unwrap(
          api.GET('/api/v1/grants', {
            params: { query: { appEntitlementId: id, page_size: 100, page_token: token || undefined } },
          }),
        ),
      ),
    refetchInterval: 5_000,
  });
  const userName = (grant: Grant) =>
    users.data?.find((u) => u.user.id === grant.userId)?.user.displayName ?? grant.userId;
  return (
    <>
      <PageHeading>{name}</PageHeading>
      <p>
        <Link to="/access">All access</Link>
      </p>
      <ErrorMessage error={entitlement.error ?? grants.error} />
      {entitlement.data ? (
        <dl className="facts">
          <dt>Open grants</dt>
          <dd>{entitlement.data.appEntitlement.grantCount}</dd>
          <dt>Maximum duration</dt>
          <dd>{entitlement.data.appEntitlement.durationGrant ?? 'none'}</dd>
        </dl>
      ) : null}
      <h2>Grants</h2>
      {grants.isPending ? <Loading label="Loading grants" /> : null}
      {grants.data ? (
        <GrantTable
          grants={grants.data.map(({ grant }) => grant)}
          caption={`Grants of ${name}`}
          nameOf={() => name}
          whoOf={userName}
        />
      ) : null}
    </>
  );
}

/** /access/grants/<id>: one grant, its provisioning as a timeline. */
export function GrantPage({ id }: { id: string }) {
  const entitlements = useEntitlements();
  const users = useUsers();
  const grant = useQuery({
    queryKey: ['grant', id],
    queryFn: () => unwrap(api.GET('/api/v1/grants/{id}', { params: { path: { id } } })),
    refetchInterval: 3_000,
  });
  const g = grant.data?.grant;
  const name = g ? (entitlements.data?.get(g.appEntitlementId)?.displayName ?? g.appEntitlementId) : id;
  const user = g ? (users.data?.find((u) => u.user.id === g.userId)?.user.displayName ?? g.userId) : '';
  const canWrite = useCanWrite();
  usePageTitle(`Grant: ${name}`);
  return (
    <>
      <PageHeading>{g ? `${name} for ${user}` : 'Grant'}</PageHeading>
      <p>{g ? <Link to={`/access?user=${encodeURIComponent(g.userId)}`}>Grants of {user}</Link> : null}</p>
      <ErrorMessage error={grant.error} />
      {grant.isPending ? <Loading label="Loading the grant" /> : null}
      {g ? (
        <>
          <dl className="facts">
            <dt>State</dt>
            <dd>
              <StatusBadge status={g.state} />
            </dd>
            <dt>Requested by</dt>
            <dd>
              <code>{g.requestedBy}</code>
            </dd>
            {g.justification ? (
              <>
                <dt>Justification</dt>
                <dd>{g.justification}</dd>
              </>
            ) : null}
            <dt>Granted</dt>
            <dd>
              <DateTime value={g.grantedAt} />
            </dd>
            <dt>Expires</dt>
            <dd>{g.expiresAt ? <DateTime value={g.expiresAt} /> : 'standing access'}</dd>
            {g.revokedAt || g.revokedBy ? (
              <>
                <dt>Revoked</dt>
                <dd>
                  <DateTime value={g.revokedAt} /> by <code>{g.revokedBy}</code>: {g.revokeReason}
                </dd>
              </>
            ) : null}
            {g.error ? (
              <>
                <dt>Error</dt>
                <dd className="error">{g.error}</dd>
              </>
            ) : null}
          </dl>
          {canWrite ? <GrantActions grant={g} name={name} /> : null}
          <h2>Provisioning</h2>
          {g.provisioning.length === 0 ? <p className="muted">Nothing has run yet.</p> : null}
          <ol className="timeline" aria-label="Provisioning timeline">
            {g.provisioning.map((entry) => (
              <li key={`${entry.phase}:${entry.step}`}>
                <p>
                  <strong>
                    {entry.detail.undo ? 'undo' : entry.phase}
                    {entry.step ? ` ${entry.step}` : ''}
                  </strong>{' '}
                  by {entry.policy} <StatusBadge status={entry.state} />
                </p>
                <p className="muted">
                  Started <DateTime value={entry.startedAt} />
                  {entry.finishedAt ? (
                    <>
                      , finished <DateTime value={entry.finishedAt} />
                    </>
                  ) : null}
                  ; {entry.attempts} {entry.attempts === 1 ? 'attempt' : 'attempts'}
                </p>
                {entry.error ? <p className="error">{entry.error}</p> : null}
                {typeof entry.detail.grantId === 'string' ? (
                  <p>
                    <Link to={`/access/grants/${encodeURIComponent(entry.detail.grantId)}`}>
                      {entry.detail.linked ? 'Linked grant' : 'Delegated grant'}
                    </Link>
                  </p>
                ) : null}
              </li>
            ))}
          </ol>
        </>
      ) : null}
    </>
  );
}
