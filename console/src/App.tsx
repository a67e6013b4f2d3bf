/** The console's shell: sign-in when there is no session, else the navigation and the page of the URL. */
import { useQueryClient } from '@tanstack/react-query';
import { Component, lazy, Suspense, type ReactNode } from 'react';
import { consoleFetch } from './api/client';
import { ErrorMessage, Loading } from './components';
import { Link, useLocation } from './router';
import { useSession } from './session';
import { SignIn } from './pages/SignIn';
import { RunsPage } from './pages/Runs';
import { AutomationsPage } from './pages/Automations';
import { RunPage } from './pages/Run';
import { ApprovalsPage } from './pages/Approvals';
import { DeliveriesPage } from './pages/Deliveries';
import { SecretsPage } from './pages/Secrets';
import { ClientsPage } from './pages/Clients';
import { AuditPage } from './pages/Audit';
import { AccessPage, EntitlementAccessPage, GrantPage } from './pages/Access';
import { TasksPage } from './pages/Tasks';

// The automation editor brings CodeMirror: loaded only when an automation is opened.
const AutomationPage = lazy(() => import('./pages/Automation'));

const NAV: Array<[string, string]> = [
  ['/automations', 'Automations'],
  ['/runs', 'Runs'],
  ['/approvals', 'Approvals'],
  ['/access', 'Access'],
  ['/tasks', 'Tasks'],
  ['/deliveries', 'Deliveries'],
  ['/secrets', 'Secrets'],
  ['/clients', 'API clients'],
  ['/audit', 'Audit'],
];

function route(path: string): ReactNode {
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  const [section, id] = parts;
  switch (section) {
    case undefined:
    case 'runs':
      return id ? <RunPage id={id} /> : <RunsPage />;
    case 'automations':
      if (id === 'new') return <AutomationPage id={null} />;
      return id ? <AutomationPage id={id} /> : <AutomationsPage />;
    case 'approvals':
      return <ApprovalsPage />;
    case 'access':
      if (id === 'grants' && parts[2]) return <GrantPage id={parts[2]} />;
      if (id === 'entitlements' && parts[2] && parts[3])
        return <EntitlementAccessPage appId={parts[2]} id={parts[3]} />;
      return <AccessPage />;
    case 'tasks':
      return <TasksPage />;
    case 'deliveries':
      return <DeliveriesPage />;
    case 'secrets':
      return <SecretsPage />;
    case 'clients':
      return <ClientsPage />;
    case 'audit':
      return <AuditPage />;
    default:
      return (
        <>
          <h1>Not found</h1>
          <p>
            No page at this address. <Link to="/runs">Go to the runs</Link>.
          </p>
        </>
      );
  }
}

/** A page that fails to draw says so, and the navigation stays usable. */
class PageBoundary extends Component<{ path: string; children: ReactNode }, { error: unknown; path: string }> {
  state = { error: null as unknown, path: this.props.path };

  static getDerivedStateFromError(error: unknown) {
    return { error };
  }

  static getDerivedStateFromProps(props: { path: string }, state: { error: unknown; path: string }) {
    return props.path === state.path ? null : { error: null, path: props.path };
  }

  render() {
    return this.state.error ? <ErrorMessage error={this.state.error} /> : this.props.children;
  }
}

export function App() {
  const session = useSession();
  const { path } = useLocation();
  const queryClient = useQueryClient();
  if (session.isPending) return <Loading label="Opening the console" />;
  if (session.isError)
    return (
      <main className="signin">
        <ErrorMessage error={session.error} />
      </main>
    );
  if (!session.data) return <SignIn />;
  const me = session.data;
  const section = '/' + (path.split('/')[1] || 'runs');
  const signOut = async () => {
    await consoleFetch('/auth/logout', { method: 'POST' });
    // Nobody is signed in now: the sign-in page, and nothing of the session's data kept in memory.
    queryClient.setQueryData(['me'], null);
    queryClient.removeQueries({ predicate: (query) => query.queryKey[0] !== 'me' });
  };
  return (
    <div className="shell">
      <a className="skip" href="#main">
        Skip to content
      </a>
      <header className="topbar">
        <span className="brand">Automations</span>
        <nav aria-label="Main">
          <ul>
            {NAV.map(([to, label]) => (
              <li key={to}>
                <Link to={to} aria-current={section === to ? 'page' : undefined}>
                  {label}
                </Link>
              </li>
            ))}
          </ul>
        </nav>
        <div className="who">
          <span title={me.person.id}>{me.person.name || me.person.id}</span>
          <button type="button" onClick={() => void signOut()}>
            Sign out
          </button>
        </div>
      </header>
      <main id="main" tabIndex={-1}>
        <PageBoundary path={path}>
          <Suspense fallback={<Loading />}>{route(path)}</Suspense>
        </PageBoundary>
      </main>
    </div>
  );
}
