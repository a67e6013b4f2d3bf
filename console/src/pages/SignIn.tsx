/** Sign-in: an API client's id and secret (local sign-in), or the organisation's OpenID provider. */
import { useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { consoleFetch } from '../api/client';
import { ErrorMessage } from '../components';
import { CONFIG } from '../config';
import { usePageTitle } from '../router';

export function SignIn() {
  usePageTitle('Sign in');
  const queryClient = useQueryClient();
  const [clientId, setClientId] = useState('');
  const [clientSecret, setClientSecret] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const params = new URLSearchParams(window.location.search);
  const refused = params.get('error');

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await consoleFetch('/auth/local', { method: 'POST', body: JSON.stringify({ clientId, clientSecret }) });
      setClientSecret('');
      await queryClient.invalidateQueries({ queryKey: ['me'] });
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };

  return (
    <main className="signin" id="main">
      <h1>Sign in to the automation console</h1>
      {refused ? (
        <p className="error" role="alert">
          {refused}
        </p>
      ) : null}
      {CONFIG.oidc ? (
        <p>
          <a className="button primary" href="/console/auth/login">
            Sign in with SSO
          </a>
        </p>
      ) : null}
      {CONFIG.localSignin ? (
        <form onSubmit={(event) => void submit(event)} aria-label="Sign in with an API client">
          {CONFIG.oidc ? <p className="muted">Or with an API client’s credentials:</p> : null}
          <label>
            Client ID
            <input
              name="clientId"
              autoComplete="username"
              required
              value={clientId}
              onChange={(e) => setClientId(e.target.value)}
            />
          </label>
          <label>
            Client secret
            <input
              name="clientSecret"
              type="password"
              autoComplete="current-password"
              required
              value={clientSecret}
              onChange={(e) => setClientSecret(e.target.value)}
            />
          </label>
          <ErrorMessage error={error} />
          <button type="submit" className="primary" disabled={busy}>
            Sign in
          </button>
        </form>
      ) : null}
    </main>
  );
}
