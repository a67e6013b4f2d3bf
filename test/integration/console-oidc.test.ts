/**
 * Console sign-in through OIDC against a real OpenID provider (oidc-provider, in this process):
 * the authorization-code flow with PKCE, state and nonce; roles from the groups claim through
 * OIDC_ROLE_MAP (group names with commas); a person with no mapped role; a forged, replayed or
 * foreign-browser state; a wrong nonce; an expired ID token (the console's clock two hours ahead);
 * and what a person signed in this way does, attributed to `person:<issuer>#<subject>`.
 */
import request from 'supertest';
import { DATABASES, describeOn, openTestDb } from '../helpers/databases';
import { startTestService, type TestService } from '../helpers/test-service';
import { ProviderAgent, startOidcProvider, type TestProvider } from '../fixtures/oidc-provider';
import { OidcSignIn } from '../../src/auth/oidc';
import { loadConfig } from '../../src/config';
import type { Db } from '../../src/store/db';

const BASE_URL = 'http://console.test';
const REDIRECT_URI = `${BASE_URL}/console/auth/callback`;
const APPROVERS = 'cn=idm-approvers,ou=groups,dc=example';

function cookieOf(res: request.Response, name: string): string | undefined {
  const lines = (res.headers['set-cookie'] as unknown as string[] | undefined) ?? [];
  const line = lines.find((l) => l.startsWith(`${name}=`) && !l.startsWith(`${name}=;`));
  return line?.split(';')[0];
}

for (const target of DATABASES) {
  describeOn(target)(`console OIDC sign-in (${target.label})`, () => {
    let provider: TestProvider;
    let service: TestService;
    let db: Db;
    let env: Record<string, string>;

    beforeAll(async () => {
      provider = await startOidcProvider(REDIRECT_URI);
      provider.accounts.set('u-1', {
        sub: 'u-1',
        name: 'Ada Lovelace',
        email: 'ada@example.com',
        groups: ['staff', APPROVERS],
      });
      provider.accounts.set('u-2', {
        sub: 'u-2',
        name: 'Eve Outsider',
        email: 'eve@example.com',
        groups: ['staff', 'cn=idm-approvers'],
      });
      env = {
        BASE_URL,
        OIDC_ISSUER: provider.issuer,
        OIDC_CLIENT_ID: provider.clientId,
        OIDC_CLIENT_SECRET: provider.clientSecret,
        OIDC_ALLOW_INSECURE: 'true',
        OIDC_ROLE_MAP: JSON.stringify({ [APPROVERS]: 'admin', platform: 'super_admin' }),
      };
      db = await openTestDb(target);
      service = await startTestService({ db, env });
    });
    afterAll(async () => {
      await service?.close();
      await db?.close();
      await provider?.close();
    });

    /** Starts a sign-in at the console: the provider's URL and the browser's login cookie. */
    async function startLogin(on: TestService = service): Promise<{ url: URL; loginCookie: string }> {
      const res = await request(on.server).get('/console/auth/login');
      expect(res.status).toBe(303);
      return { url: new URL(res.headers.location!), loginCookie: cookieOf(res, 'console_login')! };
    }

    async function callback(on: TestService, url: URL, cookie: string | undefined): Promise<request.Response> {
      let test = request(on.server).get(`${url.pathname}${url.search}`);
      if (cookie) test = test.set('Cookie', cookie);
      return test;
    }

    async function signIn(sub: string): Promise<{ res: request.Response; callbackUrl: URL; loginCookie: string }> {
      const { url, loginCookie } = await startLogin();
      const callbackUrl = await new ProviderAgent().signIn(url.href, sub, REDIRECT_URI);
      return { res: await callback(service, callbackUrl, loginCookie), callbackUrl, loginCookie };
    }

    it('turns local sign-in off by default and says OIDC is on', async () => {
      expect((await request(service.server).get('/console/auth/config')).body).toEqual({
        localSignIn: false,
        oidc: true,
        temporalUiUrl: 'http://localhost:8233',
      });
      expect(
        (await request(service.server).post('/console/auth/local').send({ clientId: 'x', clientSecret: 'y' })).status,
      ).toBe(404);
    });

    it('starts the authorization-code flow with PKCE (S256), state and nonce', async () => {
      const { url, loginCookie } = await startLogin();
      expect(url.origin).toBe(provider.issuer);
      const params = Object.fromEntries(url.searchParams);
      expect(params).toMatchObject({
        response_type: 'code',
        client_id: provider.clientId,
        redirect_uri: REDIRECT_URI,
        code_challenge_method: 'S256',
      });
      expect(params.code_challenge).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(params.state!.length).toBeGreaterThanOrEqual(22);
      expect(params.nonce!.length).toBeGreaterThanOrEqual(22);
      expect(params.scope!.split(' ')).toEqual(expect.arrayContaining(['openid', 'groups']));
      expect(loginCookie).toMatch(/^console_login=[A-Za-z0-9_-]{43}$/);
      // Nothing of the verifier or nonce is in the browser's cookie; the state is kept hashed.
      const rows = await db.query<{ state_hash: string }>('SELECT state_hash FROM console_logins');
      expect(rows.map((row) => row.state_hash)).not.toContain(params.state);
    });

    it('signs a person in with the role their group maps to (a group name with commas), as person:<issuer>#<subject>', async () => {
      const { res } = await signIn('u-1');
      expect(res.status).toBe(303);
      expect(res.headers.location).toBe('/console');
      const session = cookieOf(res, 'console_session')!;
      const me = await request(service.server).get('/console/auth/me').set('Cookie', session);
      expect(me.status).toBe(200);
      const actor = `person:${provider.issuer}#u-1`;
      expect(me.body.person).toEqual({ id: actor, name: 'Ada Lovelace', email: 'ada@example.com', roles: ['admin'] });

      // The sign-in is theirs: the actor string, their name and email in the details.
      const signedIn = await db.query<{ actor: string; details: Record<string, unknown> }>(
        "SELECT actor, details FROM audit_events WHERE action = 'console.sign_in' AND actor = $1",
        [actor],
      );
      expect(signedIn).toEqual([
        { actor, details: { method: 'oidc', name: 'Ada Lovelace', email: 'ada@example.com', roles: ['admin'] } },
      ]);
      // An admin, not a super_admin: the person's roles hold on the console's API (no API clients,
      // no writing an outbound secret, nothing written).
      expect((await request(service.server).get('/console/api/v1/iam/clients').set('Cookie', session)).status).toBe(
        403,
      );
      const made = await request(service.server)
        .post('/console/api/v1/secrets')
        .set('Cookie', session)
        .set('X-CSRF-Token', me.body.csrfToken)
        .set('Origin', BASE_URL)
        .send({
          name: `oidc_made_${target.name}`,
          value: 'value-never-shown',
          allowedOrigins: ['https://crm.example'],
        });
      expect([made.status, made.body.code]).toEqual([403, 7]);
      expect(await db.query('SELECT name FROM outbound_secrets WHERE name = $1', [`oidc_made_${target.name}`])).toEqual(
        [],
      );
    });

    it('gives a person whose groups map to no role no session, and a page saying why', async () => {
      const { res } = await signIn('u-2');
      expect(res.status).toBe(403);
      expect(res.headers['content-type']).toMatch(/^text\/html/);
      expect(res.text).toContain('none of their groups');
      expect(res.headers['content-security-policy']).toContain("frame-ancestors 'none'");
      expect(cookieOf(res, 'console_session')).toBeUndefined();
      const denied = await db.query<{ actor: string }>(
        "SELECT actor FROM audit_events WHERE action = 'console.sign_in_denied'",
      );
      expect(denied.map((row) => row.actor)).toContain(`person:${provider.issuer}#u-2`);
    });

    it('refuses a replayed callback (its state serves once)', async () => {
      const { res, callbackUrl, loginCookie } = await signIn('u-1');
      expect(res.status).toBe(303);
      const replay = await callback(service, callbackUrl, loginCookie);
      expect(replay.status).toBe(400);
      expect(replay.text).toContain('unknown, already used or expired');
      expect(cookieOf(replay, 'console_session')).toBeUndefined();
    });

    it('refuses a forged state, and a callback in another browser than the one that started it', async () => {
      const { url, loginCookie } = await startLogin();
      const callbackUrl = await new ProviderAgent().signIn(url.href, 'u-1', REDIRECT_URI);
      const forged = new URL(callbackUrl);
      forged.searchParams.set('state', 'forged-state-0123456789abcdef');
      const refusedForged = await callback(service, forged, loginCookie);
      expect(refusedForged.status).toBe(400);
      expect(cookieOf(refusedForged, 'console_session')).toBeUndefined();

      const elsewhere = await callback(
        service,
        callbackUrl,
        'console_login=another-browser-0123456789abcdefghijklmnopq',
      );
      expect(elsewhere.status).toBe(400);
      expect(elsewhere.text).toContain('another browser');
      expect(cookieOf(elsewhere, 'console_session')).toBeUndefined();
      // The JSON shape for a client that asks for JSON.
      const json = await request(service.server)
        .get(`${forged.pathname}${forged.search}`)
        .set('Accept', 'application/json');
      expect([json.status, json.body.code]).toEqual([400, 3]);
    });

    it('refuses an ID token carrying another nonce than the sign-in sent', async () => {
      const { url, loginCookie } = await startLogin();
      url.searchParams.set('nonce', 'a-nonce-the-console-never-sent-0123');
      const callbackUrl = await new ProviderAgent().signIn(url.href, 'u-1', REDIRECT_URI);
      const res = await callback(service, callbackUrl, loginCookie);
      expect(res.status).toBe(400);
      expect(res.text).toContain('claim &#34;nonce&#34;');
      expect(cookieOf(res, 'console_session')).toBeUndefined();
    });

    it("refuses an expired ID token (the console's clock two hours ahead of the provider's)", async () => {
      const config = loadConfig(env).console.oidc!;
      const late = await startTestService({
        db,
        env,
        deps: {
          secretBox: service.deps.secretBox,
          oidc: new OidcSignIn(db, config, {
            redirectUri: REDIRECT_URI,
            allowInsecure: true,
            clockSkewSeconds: 2 * 3600,
          }),
        },
      });
      try {
        const { url, loginCookie } = await startLogin(late);
        const callbackUrl = await new ProviderAgent().signIn(url.href, 'u-1', REDIRECT_URI);
        const res = await callback(late, callbackUrl, loginCookie);
        expect(res.status).toBe(400);
        expect(res.text).toMatch(/&#34;exp&#34;/);
        expect(cookieOf(res, 'console_session')).toBeUndefined();
      } finally {
        await late.close();
      }
    });

    it('refuses an http:// issuer unless OIDC_ALLOW_INSECURE=true, and an unknown role in OIDC_ROLE_MAP', () => {
      expect(() => loadConfig({ ...env, OIDC_ALLOW_INSECURE: 'false' })).toThrow(/https/);
      const config = loadConfig({ ...env, OIDC_ROLE_MAP: '{"a,b": "owner"}' }).console.oidc!;
      expect(() => new OidcSignIn(db, config, { redirectUri: REDIRECT_URI, allowInsecure: true })).toThrow(
        /OIDC_ROLE_MAP: the role of "a,b"/,
      );
    });
  });
}
