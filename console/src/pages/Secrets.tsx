/** Named outbound secrets: names and allowed origins, never values. */
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { allPages, api, unwrap } from '../api/client';
import { ConfirmButton, DateTime, ErrorMessage, Loading, PageHeading } from '../components';
import { usePageTitle } from '../router';
import { hasRole, useSession } from '../session';

export function SecretsPage() {
  usePageTitle('Secrets');
  const queryClient = useQueryClient();
  const session = useSession();
  const canWrite = hasRole(session.data, 'super_admin');
  const secrets = useQuery({
    queryKey: ['secrets'],
    queryFn: () =>
      allPages((token) =>
        unwrap(api.GET('/api/v1/secrets', { params: { query: { page_size: 100, page_token: token || undefined } } })),
      ),
  });
  const [name, setName] = useState('');
  const [value, setValue] = useState('');
  const [origins, setOrigins] = useState('');
  const create = useMutation({
    mutationFn: () =>
      unwrap(
        api.POST('/api/v1/secrets', { body: { name, value, allowedOrigins: origins.split(/\s+/).filter(Boolean) } }),
      ),
    onSuccess: async () => {
      setName('');
      setValue('');
      setOrigins('');
      await queryClient.invalidateQueries({ queryKey: ['secrets'] });
    },
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    create.mutate();
  };
  return (
    <>
      <PageHeading>Secrets</PageHeading>
      <p className="muted">
        Read as secrets.&lt;name&gt; in callWebhook headers. Values are write-only: the console never shows them.
      </p>
      <ErrorMessage error={secrets.error} />
      {secrets.isPending ? <Loading label="Loading secrets" /> : null}
      {secrets.data?.length === 0 ? <p>No secrets yet.</p> : null}
      {secrets.data && secrets.data.length > 0 ? (
        <table>
          <caption className="visually-hidden">Secrets</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Allowed origins</th>
              <th scope="col">Value set</th>
              {canWrite ? <th scope="col">Actions</th> : null}
            </tr>
          </thead>
          <tbody>
            {secrets.data.map(({ secret }) => (
              <tr key={secret.name}>
                <td>
                  <code>{secret.name}</code>
                </td>
                <td>{secret.allowedOrigins.join(', ') || <span className="muted">none (sent nowhere)</span>}</td>
                <td>
                  <DateTime value={secret.updatedAt} />
                </td>
                {canWrite ? (
                  <td>
                    <ConfirmButton
                      label={`Delete ${secret.name}`}
                      title={`Delete the secret ${secret.name}?`}
                      description="Steps that read it fail until a secret of this name exists again."
                      onConfirm={async () => {
                        await unwrap(api.DELETE('/api/v1/secrets/{name}', { params: { path: { name: secret.name } } }));
                        await queryClient.invalidateQueries({ queryKey: ['secrets'] });
                      }}
                    />
                  </td>
                ) : null}
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      {canWrite ? (
        <form onSubmit={submit} aria-labelledby="new-secret" className="panel">
          <h2 id="new-secret">New secret</h2>
          <label>
            Name
            <input required pattern="[a-z][a-z0-9_]{0,62}" value={name} onChange={(e) => setName(e.target.value)} />
          </label>
          <label>
            Value
            <input
              required
              type="password"
              autoComplete="off"
              value={value}
              onChange={(e) => setValue(e.target.value)}
            />
          </label>
          <label>
            Allowed origins (one per line)
            <textarea
              required
              rows={2}
              value={origins}
              onChange={(e) => setOrigins(e.target.value)}
              placeholder="https://crm.example"
            />
          </label>
          <ErrorMessage error={create.error} />
          <button type="submit" className="primary" disabled={create.isPending}>
            Create secret
          </button>
        </form>
      ) : null}
    </>
  );
}
