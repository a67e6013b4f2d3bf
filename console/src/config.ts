/**
 * What the server tells the console about itself, in a `<meta name="console-config">` it writes
 * into index.html when serving it (no inline script: the CSP forbids them).
 */
export interface ConsoleConfig {
  /** OIDC sign-in is configured: show "Sign in with SSO". */
  oidc: boolean;
  /** Local sign-in with an API client's id and secret is on. */
  localSignin: boolean;
  /** The Temporal Web UI, for "Open in Temporal". */
  temporalUiUrl: string;
  /** The Temporal namespace runs live in. */
  namespace: string;
  /** TRACE_UI_URL: where "Open trace" links, `{traceId}` replaced; absent: no link. */
  traceUiUrl?: string;
}

function read(): ConsoleConfig {
  const fallback: ConsoleConfig = {
    oidc: false,
    localSignin: true,
    temporalUiUrl: 'http://localhost:8233',
    namespace: 'default',
  };
  const content = document.querySelector('meta[name="console-config"]')?.getAttribute('content');
  if (!content) return fallback;
  try {
    return { ...fallback, ...(JSON.parse(content) as Partial<ConsoleConfig>) };
  } catch {
    return fallback;
  }
}

export const CONFIG = read();
