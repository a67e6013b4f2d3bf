/**
 * Console sign-in through OIDC against a real OpenID provider (oidc-provider, in this process):
 * the authorization-code flow with PKCE, state and nonce; roles from the groups claim through
 * OIDC_ROLE_MAP (group names with commas); a person with no mapped role; a forged, replayed or
 * foreign-browser state; a wrong nonce; an expired ID token (the console's clock two hours ahead);
 * and what a person signed in this way does, attributed to `person:<issuer>#<subject>`.
 */
import { createHash } from 'node:crypto';
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

/** How the store keys a sign-in under way: the SHA-256 of its state (src/auth/oidc.ts). */
const stateHash = (state: string): string => createHash('sha256').update(state).digest('base64url');

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
      // Neither refusal used the sign-in up: the browser that started it still completes it.
      const own = await callback(service, callbackUrl, loginCookie);
      expect([own.status, own.headers.location]).toEqual([303, '/console']);
      const me = await request(service.server).get('/console/auth/me').set('Cookie', cookieOf(own, 'console_session')!);
      expect([me.status, me.body.person?.id]).toEqual([200, `person:${provider.issuer}#u-1`]);
      // The JSON shape for a client that asks for JSON.
      const json = await request(service.server)
        .get(`${forged.pathname}${forged.search}`)
        .set('Accept', 'application/json');
      expect([json.status, json.body.code]).toEqual([400, 3]);
    });

    it('gives a callback without the login cookie no session, and leaves the sign-in to the browser that started it', async () => {
      const { url, loginCookie } = await startLogin();
      const callbackUrl = await new ProviderAgent().signIn(url.href, 'u-1', REDIRECT_URI);
      // A valid code and state, from a browser that never started this sign-in (no cookie at all).
      const stranger = await callback(service, callbackUrl, undefined);
      expect(stranger.status).toBe(400);
      expect(stranger.text).toContain('another browser');
      expect(cookieOf(stranger, 'console_session')).toBeUndefined();
      const asJson = await request(service.server)
        .get(`${callbackUrl.pathname}${callbackUrl.search}`)
        .set('Accept', 'application/json');
      expect([asJson.status, asJson.body]).toEqual([400, { code: 3, message: expect.any(String), details: [] }]);
      expect(cookieOf(asJson, 'console_session')).toBeUndefined();
      // The person's own callback still completes.
      const own = await callback(service, callbackUrl, loginCookie);
      expect([own.status, own.headers.location]).toEqual([303, '/console']);
      const me = await request(service.server).get('/console/auth/me').set('Cookie', cookieOf(own, 'console_session')!);
      expect([me.status, me.body.person?.id]).toEqual([200, `person:${provider.issuer}#u-1`]);
    });

    it('refuses a callback without a state or without a code, and a refusal of the provider, with no session', async () => {
      const { url, loginCookie } = await startLogin();
      const callbackUrl = await new ProviderAgent().signIn(url.href, 'u-1', REDIRECT_URI);
      const stateless = new URL(callbackUrl);
      stateless.searchParams.delete('state');
      const noState = await callback(service, stateless, loginCookie);
      expect([noState.status, noState.text]).toEqual([400, expect.stringContaining('carries no state')]);
      expect(cookieOf(noState, 'console_session')).toBeUndefined();
      const codeless = new URL(callbackUrl);
      codeless.searchParams.delete('code');
      const noCode = await callback(service, codeless, loginCookie);
      expect([noCode.status, noCode.text]).toEqual([400, expect.stringContaining('was not accepted')]);
      expect(cookieOf(noCode, 'console_session')).toBeUndefined();

      const other = await startLogin();
      const refusedAtProvider = new URL(REDIRECT_URI);
      refusedAtProvider.searchParams.set('error', 'access_denied');
      refusedAtProvider.searchParams.set('state', other.url.searchParams.get('state')!);
      const denied = await callback(service, refusedAtProvider, other.loginCookie);
      expect([denied.status, denied.text]).toEqual([
        400,
        expect.stringContaining('refused the sign-in (access_denied)'),
      ]);
      expect(cookieOf(denied, 'console_session')).toBeUndefined();
    });

    it('a sign-in under way is good for 10 minutes: at 9 it completes, past 10 it is refused', async () => {
      let now = Date.now();
      const clocked = await startTestService({
        db,
        env,
        deps: {
          secretBox: service.deps.secretBox,
          oidc: new OidcSignIn(
            db,
            loadConfig(env).console.oidc!,
            { redirectUri: REDIRECT_URI, allowInsecure: true },
            () => now,
          ),
        },
      });
      try {
        const [early, late] = [await startLogin(clocked), await startLogin(clocked)];
        const earlyCallback = await new ProviderAgent().signIn(early.url.href, 'u-1', REDIRECT_URI);
        const lateCallback = await new ProviderAgent().signIn(late.url.href, 'u-1', REDIRECT_URI);
        now += 9 * 60_000;
        const completed = await callback(clocked, earlyCallback, early.loginCookie);
        expect([completed.status, completed.headers.location]).toEqual([303, '/console']);
        // No start in between (so no purge): the sign-in's own expiry refuses it.
        now += 60_000 + 1000;
        const expired = await callback(clocked, lateCallback, late.loginCookie);
        expect([expired.status, expired.text]).toEqual([
          400,
          expect.stringContaining('unknown, already used or expired'),
        ]);
        expect(cookieOf(expired, 'console_session')).toBeUndefined();
      } finally {
        await clocked.close();
      }
    });

    it('refuses an ID token whose nonce is not the one kept with the sign-in', async () => {
      const { url, loginCookie } = await startLogin();
      // The provider signs the nonce the console sent; the sign-in under way now expects another.
      await db.query('UPDATE console_logins SET nonce = $2 WHERE state_hash = $1', [
        stateHash(url.searchParams.get('state')!),
        'a-nonce-the-provider-never-saw-0123456789',
      ]);
      const callbackUrl = await new ProviderAgent().signIn(url.href, 'u-1', REDIRECT_URI);
      const res = await callback(service, callbackUrl, loginCookie);
      expect(res.status).toBe(400);
      expect(res.text).toContain('claim &#34;nonce&#34;');
      expect(cookieOf(res, 'console_session')).toBeUndefined();
    });

    it('refuses an ID token without a nonce (the authorization request stripped of it)', async () => {
      const { url, loginCookie } = await startLogin();
      url.searchParams.delete('nonce');
      const callbackUrl = await new ProviderAgent().signIn(url.href, 'u-1', REDIRECT_URI);
      const res = await callback(service, callbackUrl, loginCookie);
      expect(res.status).toBe(400);
      expect(res.text).toContain('claim &#34;nonce&#34; missing');
      expect(cookieOf(res, 'console_session')).toBeUndefined();
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

    it('limits sign-in starts per source, across API processes, counted apart from the token endpoint', async () => {
      // Each start keeps a sign-in under way in the store: 3 a minute per source here.
      const limited = { ...env, TOKEN_RATE_LIMIT_PER_MINUTE: '3', TRUST_PROXY: '1' };
      const one = await startTestService({ db, env: limited, deps: { secretBox: service.deps.secretBox } });
      const two = await startTestService({ db, env: limited, deps: { secretBox: service.deps.secretBox } });
      try {
        const source = '198.51.100.7';
        const start = (on: TestService, from: string) =>
          request(on.server).get('/console/auth/login').set('X-Forwarded-For', from).set('Accept', 'application/json');
        const pending = async () =>
          Number((await db.query<{ n: string }>('SELECT count(*) AS n FROM console_logins'))[0]!.n);
        const before = await pending();
        expect((await start(one, source)).status).toBe(303);
        expect((await start(two, source)).status).toBe(303);
        expect((await start(one, source)).status).toBe(303);
        for (const on of [one, two]) {
          const refused = await start(on, source);
          expect([refused.status, refused.body, refused.headers['retry-after']]).toEqual([
            429,
            { code: 8, message: 'too many sign-ins started from this address; retry later', details: [] },
            expect.stringMatching(/^[1-9][0-9]*$/),
          ]);
          expect(cookieOf(refused, 'console_login')).toBeUndefined();
        }
        // Nothing kept for the refused starts.
        expect(await pending()).toBe(before + 3);
        // Another source is not held up, and the token endpoint counts the same source apart.
        expect((await start(two, '198.51.100.8')).status).toBe(303);
        const token = await request(one.server)
          .post('/auth/v1/token')
          .set('X-Forwarded-For', source)
          .type('form')
          .send({ grant_type: 'client_credentials', client_id: 'nobody', client_secret: 'wrong' });
        expect(token.status).toBe(401);
      } finally {
        await one.close();
        await two.close();
      }
    });

    it('keeps the newest sign-ins under way up to a cap, and purges the expired ones', async () => {
      let now = Date.now();
      const capped = await startTestService({
        db,
        env,
        deps: {
          secretBox: service.deps.secretBox,
          oidc: new OidcSignIn(
            db,
            loadConfig(env).console.oidc!,
            { redirectUri: REDIRECT_URI, allowInsecure: true, maxPendingLogins: 3 },
            () => now,
          ),
        },
      });
      const kept = async () =>
        (await db.query<{ state_hash: string }>('SELECT state_hash FROM console_logins')).map((row) => row.state_hash);
      try {
        const started: Array<{ url: URL; loginCookie: string }> = [];
        for (let i = 0; i < 5; i++) {
          now += 1000; // one a second: the order they were started in is the order they expire in
          started.push(await startLogin(capped));
        }
        const hashes = started.map(({ url }) => stateHash(url.searchParams.get('state')!));
        // At most 3 (whatever else was under way): the two started first were dropped.
        expect((await kept()).sort()).toEqual(hashes.slice(2).sort());
        const dropped = await new ProviderAgent().signIn(started[0]!.url.href, 'u-1', REDIRECT_URI);
        const refused = await callback(capped, dropped, started[0]!.loginCookie);
        expect([refused.status, refused.text]).toEqual([
          400,
          expect.stringContaining('unknown, already used or expired'),
        ]);
        const newest = await new ProviderAgent().signIn(started[4]!.url.href, 'u-1', REDIRECT_URI);
        expect((await callback(capped, newest, started[4]!.loginCookie)).status).toBe(303);

        // Past their 10 minutes, the next start purges the sign-ins still under way.
        now += 10 * 60_000 + 1000;
        const late = await startLogin(capped);
        expect(await kept()).toEqual([stateHash(late.url.searchParams.get('state')!)]);
        const expired = await new ProviderAgent().signIn(started[3]!.url.href, 'u-1', REDIRECT_URI);
        const tooLate = await callback(capped, expired, started[3]!.loginCookie);
        expect([tooLate.status, cookieOf(tooLate, 'console_session')]).toEqual([400, undefined]);
      } finally {
        await capped.close();
      }
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
