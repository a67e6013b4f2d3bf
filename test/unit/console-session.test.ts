/**
 * The console's session at the HTTP boundary (src/http/console-session.ts) through real HTTP: the
 * cookie's name, flags and reading, and the authentication of a console request by it, with the
 * CSRF token and Origin checks of an unsafe request. The app is the middleware alone, behind the
 * service's error middleware, on a real PGlite store and real sessions (src/auth/sessions.ts);
 * test/integration/console-sessions.test.ts checks the same in the whole service. This one is what
 * StrykerJS runs (docs/testing.md#mutation-testing): only the middleware's tests open the store, so that a mutant of
 * the cookie or Origin checks runs without loading one.
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { ConsoleSessions } from '../../src/auth/sessions';
import { createClient } from '../../src/auth/clients';
import { SecretBox } from '../../src/crypto/secret-box';
import { loadConfig } from '../../src/config';
import { auditParams } from '../../src/store/audit';
import type { Db } from '../../src/store/db';
import type { AppDeps } from '../../src/http/context';
import { errorMiddleware } from '../../src/http/errors';
import {
  authenticateSession,
  checkOrigin,
  consoleOrigin,
  readSessionCookie,
  sessionCookie,
  sessionCookieName,
  sessionsOf,
} from '../../src/http/console-session';
import { createLogger } from '../../src/logger';
import { openTestDb, PGLITE } from '../helpers/databases';

const PERSON = { id: 'p-1', name: 'Ada Lovelace', email: 'ada@example.test' };
const PERSON_ACTOR = 'person:https://idp.example#ada';
const OTHER_ORIGIN = 'https://attacker.example';

let db: Db;

/** What the app needs of its dependencies here: the configuration, the store (once open) and the sessions. */
function depsFor(baseUrl: string, sessions?: ConsoleSessions): AppDeps {
  return { config: loadConfig({ BASE_URL: baseUrl }), db, ...(sessions ? { sessions } : {}) } as AppDeps;
}

interface Served {
  url: string;
  deps: AppDeps;
  close(): Promise<void>;
}

/** The middleware on a real HTTP server; a request that passes answers what it acts as. */
async function serve(baseUrl: string): Promise<Served> {
  const deps = depsFor(baseUrl, new ConsoleSessions(db, { idleSeconds: 1800, maxSeconds: 43200 }));
  const app = new Koa();
  app.use(errorMiddleware(createLogger('silent')));
  app.use(authenticateSession(deps));
  app.use((ctx) => {
    const principal = ctx.state.principal as { actor: string; roles: string[] };
    // The audit details a change would be written with (the person's name and email, when one).
    const details = JSON.parse(
      auditParams({ actor: principal.actor, action: 'x.change', resourceType: 'x', resourceId: '1' })[5] as string,
    ) as unknown;
    ctx.body = {
      actor: principal.actor,
      roles: principal.roles,
      session: (ctx.state.session as { idHash: string }).idHash,
      details,
    };
  });
  const server = http.createServer(app.callback());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    deps,
    close: () => new Promise<void>((resolve, reject) => server.close((err) => (err ? reject(err) : resolve()))),
  };
}

describe('the session cookie', () => {
  it('is console_session over http, and __Host-console_session, Secure, over https', () => {
    const plain = depsFor('http://localhost:8080');
    const secure = depsFor('https://console.example');
    expect(sessionCookieName(plain)).toBe('console_session');
    expect(sessionCookieName(secure)).toBe('__Host-console_session');
    expect(sessionCookie(plain, 'abc', 1800)).toBe('console_session=abc; Path=/; HttpOnly; SameSite=Lax; Max-Age=1800');
    expect(sessionCookie(secure, 'abc', 0)).toBe(
      '__Host-console_session=abc; Path=/; HttpOnly; SameSite=Lax; Max-Age=0; Secure',
    );
  });

  it('is read by its exact name among other cookies, its value whole', () => {
    const deps = depsFor('http://localhost:8080');
    const read = (cookie: string | undefined): string | undefined =>
      readSessionCookie({ get: (name: string) => (name === 'cookie' ? (cookie ?? '') : '') } as never, deps);
    expect(read('console_session=abc')).toBe('abc');
    expect(read('a=1; console_session=abc ; b=2')).toBe('abc');
    expect(read('a=1;console_session=abc')).toBe('abc');
    expect(read('  console_session  =  a=b=c  ')).toBe('a=b=c');
    expect(read('xconsole_session=abc; console_sessionx=def')).toBeUndefined();
    expect(read('=console_session; console_session')).toBeUndefined();
    expect(read(undefined)).toBeUndefined();
    expect(read('console_session=first; console_session=second')).toBe('first');
    // Over https only the __Host- cookie counts (a plain one may have been set by a sibling host).
    const secure = depsFor('https://console.example');
    expect(readSessionCookie({ get: () => 'console_session=abc' } as never, secure)).toBeUndefined();
    expect(readSessionCookie({ get: () => '__Host-console_session=abc' } as never, secure)).toBe('abc');
  });
});

describe('the console origin', () => {
  it("is BASE_URL's origin, without its path", () => {
    expect(consoleOrigin(depsFor('https://console.example:8443/base/'))).toBe('https://console.example:8443');
  });

  it('refuses a request from another origin with 403, and takes one from its own or without Origin', () => {
    const deps = depsFor('https://console.example');
    const withOrigin = (origin: string) => ({ get: (name: string) => (name === 'origin' ? origin : '') }) as never;
    expect(() => checkOrigin(withOrigin(''), deps)).not.toThrow();
    expect(() => checkOrigin(withOrigin('https://console.example'), deps)).not.toThrow();
    for (const origin of [OTHER_ORIGIN, 'http://console.example', 'https://console.example:444', 'null']) {
      expect(() => checkOrigin(withOrigin(origin), deps)).toThrow(
        expect.objectContaining({ status: 403, message: "the request comes from another origin than the console's" }),
      );
    }
  });
});

describe('sessionsOf', () => {
  // No store is opened here: making a ConsoleSessions queries nothing.
  it("answers the app's own sessions, else one made from the configuration, the same for each call", () => {
    const own = new ConsoleSessions(db, { idleSeconds: 1, maxSeconds: 1 });
    expect(sessionsOf(depsFor('http://localhost:8080', own))).toBe(own);
    const deps = depsFor('http://localhost:8080');
    const made = sessionsOf(deps);
    expect(made).toBeInstanceOf(ConsoleSessions);
    expect(sessionsOf(deps)).toBe(made);
    expect(sessionsOf(depsFor('http://localhost:8080'))).not.toBe(made);
  });
});

describe('authenticateSession', () => {
  let served: Served;
  let cookie: string;
  let csrfToken: string;
  let idHash: string;

  beforeAll(async () => {
    db = await openTestDb(PGLITE);
    served = await serve('http://console.test:8080');
    const { id, session } = await sessionsOf(served.deps).create({
      actor: PERSON_ACTOR,
      person: PERSON,
      roles: ['admin'],
    });
    cookie = `console_session=${id}`;
    csrfToken = session.csrfToken;
    idHash = session.idHash;
  });
  afterAll(async () => {
    await served?.close();
    await db?.close();
  });

  async function call(
    method: string,
    headers: Record<string, string>,
  ): Promise<{ status: number; body: Record<string, unknown> }> {
    const res = await fetch(`${served.url}/console/api/v1/things`, { method, headers });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  }

  it('answers 401 in the error shape without a session cookie, or with one of no live session', async () => {
    for (const headers of [{}, { cookie: 'console_session=' + 'a'.repeat(43) }, { cookie: 'other=1' }] as Record<
      string,
      string
    >[]) {
      const res = await call('GET', headers);
      expect(res).toEqual({
        status: 401,
        body: { code: 16, message: 'no console session: sign in at /console', details: [] },
      });
    }
  });

  it('lets a safe request through with the cookie alone, acting as the session, audited with the person', async () => {
    for (const method of ['GET', 'HEAD', 'OPTIONS']) {
      const res = await fetch(`${served.url}/console/api/v1/things`, {
        method,
        headers: { cookie, origin: OTHER_ORIGIN },
      });
      expect(res.status).toBe(200);
    }
    const res = await call('GET', { cookie });
    expect(res).toEqual({
      status: 200,
      body: {
        actor: PERSON_ACTOR,
        roles: ['admin'],
        session: idHash,
        details: { name: 'Ada Lovelace', email: 'ada@example.test' },
      },
    });
  });

  it('refuses an unsafe request without the CSRF token or with another one (403)', async () => {
    for (const method of ['POST', 'PUT', 'PATCH', 'DELETE']) {
      for (const headers of [
        { cookie },
        // From the console's own origin: the Origin is no substitute for the token.
        { cookie, origin: 'http://console.test:8080' },
        { cookie, origin: 'http://console.test:8080', 'x-csrf-token': '' },
        { cookie, 'x-csrf-token': '' },
        { cookie, 'x-csrf-token': csrfToken.slice(0, -1) },
        { cookie, 'x-csrf-token': 'x'.repeat(csrfToken.length) },
      ] as Record<string, string>[]) {
        const res = await call(method, headers);
        expect({ method, ...res }).toEqual({
          method,
          status: 403,
          body: { code: 7, message: 'missing or wrong X-CSRF-Token', details: [] },
        });
      }
    }
  });

  it('refuses an unsafe request from another origin even with the right token (403)', async () => {
    for (const origin of [OTHER_ORIGIN, 'http://console.test:8081', 'https://console.test:8080']) {
      const res = await call('POST', { cookie, 'x-csrf-token': csrfToken, origin });
      expect(res).toEqual({
        status: 403,
        body: { code: 7, message: "the request comes from another origin than the console's", details: [] },
      });
    }
  });

  it('takes an unsafe request with the right token, from the console origin or without Origin', async () => {
    for (const method of ['POST', 'PUT', 'PATCH', 'DELETE']) {
      expect((await call(method, { cookie, 'x-csrf-token': csrfToken })).status).toBe(200);
      expect(
        (await call(method, { cookie, 'x-csrf-token': csrfToken, origin: 'http://console.test:8080' })).body,
      ).toMatchObject({ actor: PERSON_ACTOR });
    }
  });

  it('acts as the API client of a local sign-in, with no person in the audit details', async () => {
    const { client } = await createClient(db, new SecretBox(randomBytes(32)), {
      displayName: 'console test',
      roles: ['read_only'],
    });
    const { id, session } = await sessionsOf(served.deps).create({
      actor: `client:${client.clientId}`,
      person: { id: client.clientId, name: 'console test', email: '' },
      roles: ['read_only'],
    });
    const res = await call('GET', { cookie: `console_session=${id}` });
    expect(res).toEqual({
      status: 200,
      body: { actor: `client:${client.clientId}`, roles: ['read_only'], session: session.idHash, details: {} },
    });
  });
});
