/** API clients: list, create (the new secret is shown once), delete. */
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { allPages, api, unwrap, type Schemas } from '../api/client';
import { ConfirmButton, CopyButton, DateTime, ErrorMessage, Loading, PageHeading } from '../components';
import { FilterBar, optionsOf, useFilters } from '../FilterBar';
import { usePageTitle } from '../router';

const ROLES: Schemas['Role'][] = ['super_admin', 'admin', 'read_only'];

export function ClientsPage() {
  usePageTitle('API clients');
  const queryClient = useQueryClient();
  const clients = useQuery({
    queryKey: ['clients'],
    queryFn: () =>
      allPages((token) =>
        unwrap(
          api.GET('/api/v1/iam/clients', { params: { query: { page_size: 100, page_token: token || undefined } } }),
        ),
      ),
  });
  const [filters, setFilters] = useFilters('/clients', ['q', 'role']);
  const shown = clients.data?.filter(({ client }) => matches(client, filters.q, filters.role));
  const [displayName, setDisplayName] = useState('');
  const [role, setRole] = useState<Schemas['Role']>('read_only');
  const create = useMutation({
    mutationFn: () => unwrap(api.POST('/api/v1/iam/clients', { body: { displayName, roles: [role] } })),
    onSuccess: async () => {
      setDisplayName('');
      await queryClient.invalidateQueries({ queryKey: ['clients'] });
    },
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    create.mutate();
  };
  return (
    <>
      <PageHeading>API clients</PageHeading>
      <FilterBar
        label="Filter API clients"
        values={filters}
        onChange={setFilters}
        fields={[
          { kind: 'text', name: 'q', label: 'Name or client ID' },
          { kind: 'select', name: 'role', label: 'Access', any: 'Any access', options: optionsOf(ROLES) },
        ]}
      />
      <ErrorMessage error={clients.error} />
      {clients.isPending ? <Loading label="Loading API clients" /> : null}
      {shown?.length === 0 ? <p className="muted">No API clients match.</p> : null}
      {shown && shown.length > 0 ? (
        <table>
          <caption className="visually-hidden">API clients</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Client ID</th>
              <th scope="col">Roles</th>
              <th scope="col">Created</th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {shown.map(({ client }) => (
              <tr key={client.id}>
                <td>{client.displayName}</td>
                <td>
                  <code>{client.clientId}</code>
                </td>
                <td>{client.roles.join(', ')}</td>
                <td>
                  <DateTime value={client.createdAt} />
                </td>
                <td>
                  <ConfirmButton
                    label={`Delete ${client.displayName || client.clientId}`}
                    title={`Delete the API client ${client.displayName || client.clientId}?`}
                    description="Its credentials stop working at once."
                    onConfirm={async () => {
                      await unwrap(api.DELETE('/api/v1/iam/clients/{id}', { params: { path: { id: client.id } } }));
                      await queryClient.invalidateQueries({ queryKey: ['clients'] });
                    }}
                  />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      <form onSubmit={submit} aria-labelledby="new-client" className="panel">
        <h2 id="new-client">New API client</h2>
        <label>
          Display name
          <input required value={displayName} onChange={(e) => setDisplayName(e.target.value)} />
        </label>
        <label>
          Role
          <select value={role} onChange={(e) => setRole(e.target.value as Schemas['Role'])}>
            {ROLES.map((r) => (
              <option key={r} value={r}>
                {r}
              </option>
            ))}
          </select>
        </label>
        <ErrorMessage error={create.error} />
        <button type="submit" className="primary" disabled={create.isPending}>
          Create API client
        </button>
      </form>
      {create.data ? (
        <section className="panel secret" aria-label="New client secret">
          <p>
            The secret of <code>{create.data.client.clientId}</code> is shown only now:
          </p>
          <p>
            <code className="secret-value">{create.data.clientSecret}</code>{' '}
            <CopyButton value={create.data.clientSecret} label="Copy secret" />
          </p>
        </section>
      ) : null}
    </>
  );
}

/** The client list is read whole (page_size 100, every page), so its filter runs here. */
function matches(client: Schemas['ApiClient'], q: string, role: string): boolean {
  const text = q.trim().toLowerCase();
  if (text && !`${client.displayName}\n${client.clientId}`.toLowerCase().includes(text)) return false;
  return !role || client.roles.includes(role as Schemas['Role']);
}
