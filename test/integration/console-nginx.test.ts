/**
 * The console behind the production shape's entry: the real nginx of `npm run stack:prod`
 * (deploy/nginx/api.conf.template, set up by scripts/stack-prod.ts's `nginxSetup`) in front of a
 * real API whose BASE_URL is https (TLS ends in front of nginx), signing people in through a real
 * OpenID provider (oidc-provider, in this process). Through the entry: the SSO round trip, the
 * `__Host-` cookies with Secure, the console's pages with their CSP and framing headers as the API
 * sets them, the backend-for-frontend with the session, and the CSRF and Origin checks.
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { ProviderAgent, startOidcProvider, type TestProvider } from '../fixtures/oidc-provider';
import { startTestService, type TestService } from '../helpers/test-service';
import { startNginxEntry, type NginxEntry } from '../helpers/nginx-entry';

const BASE_URL = 'https://console.example';
const REDIRECT_URI = `${BASE_URL}/console/auth/callback`;
const APPROVERS = 'cn=idm-approvers,ou=groups,dc=example';
const INDEX = '<!doctype html><html><head><!-- console-config --></head><body><div id="root"></div></body></html>';

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** One request to the entry, as a browser at BASE_URL sends it (node:http: any header, no redirects followed). */
function send(
  entry: string,
  pathname: string,
  o: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      `${entry}${pathname}`,
      { method: o.method ?? 'GET', headers: { host: 'console.example', ...o.headers } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString() }),
        );
      },
    );
    req.on('error', reject);
    req.end(o.body);
  });
}

function setCookie(res: Answer, name: string): string {
  const line = (res.headers['set-cookie'] ?? []).find((l) => l.startsWith(`${name}=`) && !l.startsWith(`${name}=;`));
  if (!line) throw new Error(`no ${name} cookie in ${JSON.stringify(res.headers['set-cookie'])}`);
  return line;
}

function expectConsoleHeaders(res: Answer): void {
  const directives = new Map(
    String(res.headers['content-security-policy'])
      .split(';')
      .map((d) => d.trim().split(/\s+/))
      .map(([name, ...values]) => [name, values]),
  );
  expect([directives.get('script-src'), directives.get('frame-ancestors')]).toEqual([["'self'"], ["'none'"]]);
  expect([res.headers['x-frame-options'], res.headers['referrer-policy']]).toEqual(['DENY', 'no-referrer']);
}

describe('the console through the production entry (nginx), signed in with SSO', () => {
  let provider: TestProvider;
  let service: TestService;
  let nginx: NginxEntry | undefined;
  let entry: string;
  let dir: string;

  beforeAll(async () => {
    provider = await startOidcProvider(REDIRECT_URI);
    provider.accounts.set('ada', {
      sub: 'ada',
      name: 'Ada Lovelace',
      email: 'ada@example.com',
      groups: ['staff', APPROVERS],
    });
    provider.accounts.set('eve', { sub: 'eve', name: 'Eve Outsider', email: 'eve@example.com', groups: ['staff'] });
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'console-nginx-'));
    fs.mkdirSync(path.join(dir, 'console', 'assets'), { recursive: true });
    fs.writeFileSync(path.join(dir, 'console', 'index.html'), INDEX);
    service = await startTestService({
      deps: { consoleDir: path.join(dir, 'console') },
      env: {
        BASE_URL,
        TRUST_PROXY: '1',
        OIDC_ISSUER: provider.issuer,
        OIDC_CLIENT_ID: provider.clientId,
        OIDC_CLIENT_SECRET: provider.clientSecret,
        OIDC_ALLOW_INSECURE: 'true',
        OIDC_ROLE_MAP: JSON.stringify({ [APPROVERS]: 'admin' }),
      },
    });
    nginx = await startNginxEntry((service.server.address() as { port: number }).port, dir);
    entry = nginx.url;
  });
  afterAll(async () => {
    await nginx?.stop();
    await service?.close();
    await provider?.close();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  /** The SSO round trip through the entry; answers the callback's answer. */
  async function signInWithSso(sub: string): Promise<Answer> {
    const login = await send(entry, '/console/auth/login', { headers: { accept: 'text/html' } });
    expect([login.status, new URL(login.headers.location!).origin]).toEqual([303, provider.issuer]);
    const loginCookie = setCookie(login, '__Host-console_login');
    expect(loginCookie).toMatch(/; Path=\/; HttpOnly; SameSite=Lax; Max-Age=600; Secure$/);
    const back = await new ProviderAgent().signIn(login.headers.location!, sub, REDIRECT_URI);
    return send(entry, `${back.pathname}${back.search}`, {
      headers: { accept: 'text/html', cookie: loginCookie.split(';')[0]! },
    });
  }

  it('signs a person of a mapped group in: a __Host- session cookie, Secure, and the console and its API with it', async () => {
    const callback = await signInWithSso('ada');
    expect([callback.status, callback.headers.location]).toEqual([303, '/console']);
    const session = setCookie(callback, '__Host-console_session');
    expect(session).toMatch(/^__Host-console_session=[^;]+; Path=\/; HttpOnly; SameSite=Lax; Max-Age=\d+; Secure$/);
    const cookie = session.split(';')[0]!;

    const me = await send(entry, '/console/auth/me', { headers: { cookie } });
    expect(me.status).toBe(200);
    const { person, csrfToken } = JSON.parse(me.body) as {
      person: { id: string; name: string; roles: string[] };
      csrfToken: string;
    };
    expect(person).toMatchObject({ id: `person:${provider.issuer}#ada`, name: 'Ada Lovelace', roles: ['admin'] });
    expect(me.body).not.toContain(provider.clientSecret);

    const runs = await send(entry, '/console/runs', { headers: { cookie } });
    expect([runs.status, runs.headers['content-type']]).toEqual([200, 'text/html; charset=utf-8']);
    expect(runs.body).toContain('<div id="root">');
    expectConsoleHeaders(runs);

    const automations = await send(entry, '/console/api/v1/automations', { headers: { cookie } });
    expect(automations.status).toBe(200);
    expectConsoleHeaders(automations);
    // Without the session, the backend-for-frontend answers 401; /api stays bearer-only.
    expect((await send(entry, '/console/api/v1/automations')).status).toBe(401);
    expect((await send(entry, '/api/v1/automations', { headers: { cookie } })).status).toBe(401);

    // An unsafe request: refused from a second origin or without the CSRF token, before anything is read.
    const create = (headers: Record<string, string>) =>
      send(entry, '/console/api/v1/secrets', {
        method: 'POST',
        headers: { cookie, 'content-type': 'application/json', ...headers },
        body: '{}',
      });
    expect((await create({ origin: 'https://evil.example', 'x-csrf-token': csrfToken })).status).toBe(403);
    expect((await create({ origin: BASE_URL })).status).toBe(403);
    // With both, the request reaches the API (admin may not write secrets: 403 for the role, said so).
    const allowed = await create({ origin: BASE_URL, 'x-csrf-token': csrfToken });
    expect(JSON.parse(allowed.body).message).not.toMatch(/origin|CSRF/i);
  });

  it('gives a person of no mapped group the page saying why, and no session', async () => {
    const refused = await signInWithSso('eve');
    expect(refused.status).toBe(403);
    expect(refused.body).toContain('<h1>Sign-in refused</h1>');
    expect(refused.body).toContain('Eve Outsider is signed in at the identity provider, but none of their groups');
    expect(refused.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect((refused.headers['set-cookie'] ?? []).filter((l) => l.startsWith('__Host-console_session='))).toEqual([]);
  });
});
