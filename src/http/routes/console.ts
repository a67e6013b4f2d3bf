/**
 * Sign-in for people (the console's, not in the OpenAPI document: API clients never call it).
 * `POST /console/auth/local` {clientId, clientSecret}: an API client's credentials, with the token
 * endpoint's flood guards, from BASE_URL's origin only; `POST /console/auth/logout`;
 * `GET /console/auth/me` → {person, csrfToken}; `GET /console/auth/config`: which sign-ins are on.
 * OIDC: `GET /console/auth/login` redirects to the provider (limited per source, as the token
 * endpoint: each start keeps a sign-in under way in the store), `GET /console/auth/callback` comes
 * back (src/auth/oidc.ts); a refusal is a page saying why (or the error shape for a JSON client).
 */
import type Router from '@koa/router';
import type { Context } from 'koa';
import type { AppDeps } from '../context';
import type { Role } from '../../auth/roles';
import { actorString } from '../../auth/roles';
import { sameToken, type Session, type SessionPerson } from '../../auth/sessions';
import { authenticateClient } from '../../auth/clients';
import { OidcSignIn, OidcSignInError } from '../../auth/oidc';
import { SharedSourceLimit } from '../../auth/token-guard';
import { recordAudit } from '../../store/audit';
import { invalidArgument } from '../../errors';
import { readJsonObject } from '../body';
import { exactRouter } from '../operation';
import { AppError } from '../errors';
import { CONSOLE_PREFIX, checkOrigin, currentSession, sessionCookie, sessionsOf } from '../console-session';
import { auditFailure, sourceOf } from './token';

const SIGN_IN_BODY_LIMIT = 16 * 1024;

/** What `/console/auth/me` and a sign-in answer. */
function whoAmI(session: Session): { person: SessionPerson & { roles: Role[] }; csrfToken: string } {
  return { person: session.person, csrfToken: session.csrfToken };
}

function noStore(ctx: Context): void {
  ctx.set('Cache-Control', 'no-store');
  ctx.set('Pragma', 'no-cache');
}

/**
 * Starts a session for a signed-in person: the cookie, and an audit record `console.sign_in`
 * (the person's name and email in its details). Answers what `/console/auth/me` does.
 */
export async function signIn(
  ctx: Context,
  deps: AppDeps,
  input: { actor: string; person: SessionPerson; roles: Role[]; method: 'local' | 'oidc' },
): Promise<ReturnType<typeof whoAmI>> {
  const { id, session } = await sessionsOf(deps).create(input);
  ctx.append('Set-Cookie', sessionCookie(deps, id, deps.config.console.sessionMaxSeconds));
  await recordAudit(deps.db, {
    actor: input.actor,
    action: 'console.sign_in',
    resourceType: 'console_session',
    resourceId: session.idHash.slice(0, 16),
    details: { method: input.method, name: input.person.name, email: input.person.email, roles: input.roles },
  });
  return whoAmI(session);
}

const oidcs = new WeakMap<AppDeps, OidcSignIn>();

/** The app's OIDC sign-in, or undefined when OIDC is not configured. */
function oidcOf(deps: AppDeps): OidcSignIn | undefined {
  if (deps.oidc) return deps.oidc;
  const config = deps.config.console.oidc;
  if (!config) return undefined;
  let found = oidcs.get(deps);
  if (!found) {
    found = new OidcSignIn(deps.db, config, {
      redirectUri: callbackUri(deps),
      allowInsecure: deps.config.console.oidcAllowInsecure,
    });
    oidcs.set(deps, found);
  }
  return found;
}

const loginLimits = new WeakMap<AppDeps, SharedSourceLimit>();

/**
 * The per-source limit of sign-in starts (each writes a sign-in under way to the store): as many
 * a minute as the token endpoint allows (TOKEN_RATE_LIMIT_PER_MINUTE), counted apart from it and
 * shared by the API processes through the store.
 */
function loginLimitOf(deps: AppDeps): SharedSourceLimit {
  let found = loginLimits.get(deps);
  if (!found) {
    found = new SharedSourceLimit(
      deps.db,
      'console-login',
      deps.config.tokenEndpoint.perSourcePerMinute,
      'too many sign-ins started from this address; retry later',
    );
    loginLimits.set(deps, found);
  }
  return found;
}

function callbackUri(deps: AppDeps): string {
  return `${deps.config.baseUrl}${CONSOLE_PREFIX}/auth/callback`;
}

/** The cookie binding an OIDC sign-in to the browser that started it (10 minutes). */
function loginCookie(deps: AppDeps, value: string, maxAgeSeconds: number): string {
  const secure = deps.config.baseUrl.startsWith('https:');
  const parts = [
    `${secure ? '__Host-' : ''}console_login=${value}`,
    'Path=/',
    'HttpOnly',
    'SameSite=Lax',
    `Max-Age=${maxAgeSeconds}`,
  ];
  if (secure) parts.push('Secure');
  return parts.join('; ');
}

function readLoginCookie(ctx: Context, deps: AppDeps): string | undefined {
  const name = `${deps.config.baseUrl.startsWith('https:') ? '__Host-' : ''}console_login`;
  for (const pair of ctx.get('cookie').split(';')) {
    const at = pair.indexOf('=');
    if (at > 0 && pair.slice(0, at).trim() === name) return pair.slice(at + 1).trim();
  }
  return undefined;
}

const escapeHtml = (text: string): string => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** A refused sign-in: a small page saying why for a browser, the error shape for a JSON client. */
function refusal(ctx: Context, status: 400 | 403, message: string): void {
  noStore(ctx);
  if (ctx.accepts('html', 'json') === 'json') throw new AppError(status, message);
  ctx.status = status;
  ctx.set('Content-Security-Policy', "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'");
  ctx.set('Referrer-Policy', 'no-referrer');
  ctx.type = 'text/html; charset=utf-8';
  ctx.body = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Sign-in refused</title></head><body><main><h1>Sign-in refused</h1><p role="alert">${escapeHtml(message)}</p><p><a href="${CONSOLE_PREFIX}">Back to the console</a></p></main></body></html>`;
}

export function createConsoleRouter(deps: AppDeps): Router {
  const router = exactRouter({ prefix: `${CONSOLE_PREFIX}/auth` });
  oidcOf(deps); // a wrong OIDC_ROLE_MAP fails the start, not the first sign-in

  router.get('/config', (ctx) => {
    ctx.body = {
      localSignIn: deps.config.console.localSignIn,
      oidc: oidcOf(deps) !== undefined,
      temporalUiUrl: deps.config.console.temporalUiUrl,
    };
  });

  router.get('/login', async (ctx) => {
    const oidc = oidcOf(deps);
    if (!oidc) throw new AppError(404, 'sign-in through an identity provider is not configured (OIDC_ISSUER)');
    await loginLimitOf(deps).admit(sourceOf(ctx, deps));
    let started: { url: string; browser: string };
    try {
      started = await oidc.start();
    } catch (err) {
      deps.logger
        .child({ component: 'console' })
        .warn({ err: (err as Error).message }, 'the identity provider could not be reached');
      throw new AppError(503, 'the identity provider cannot be reached; retry later', {
        headers: { 'Retry-After': '5' },
      });
    }
    noStore(ctx);
    ctx.append('Set-Cookie', loginCookie(deps, started.browser, 600));
    ctx.status = 303;
    ctx.redirect(started.url);
  });

  router.get('/callback', async (ctx) => {
    const oidc = oidcOf(deps);
    if (!oidc) throw new AppError(404, 'sign-in through an identity provider is not configured (OIDC_ISSUER)');
    ctx.append('Set-Cookie', loginCookie(deps, '', 0));
    const url = new URL(`${callbackUri(deps)}${ctx.querystring ? `?${ctx.querystring}` : ''}`);
    let person: Awaited<ReturnType<OidcSignIn['complete']>>;
    try {
      person = await oidc.complete(url, readLoginCookie(ctx, deps));
    } catch (err) {
      if (!(err instanceof OidcSignInError)) throw err;
      if (err.person) {
        await recordAudit(deps.db, {
          actor: err.person.actor,
          action: 'console.sign_in_denied',
          resourceType: 'console_session',
          resourceId: err.person.actor,
          details: {
            method: 'oidc',
            name: err.person.name,
            email: err.person.email,
            groups: err.person.groups.slice(0, 50),
            reason: 'no mapped role',
          },
        });
      }
      return refusal(ctx, err.status, err.message);
    }
    await signIn(ctx, deps, {
      actor: person.actor,
      person: { id: person.id, name: person.name, email: person.email },
      roles: person.roles,
      method: 'oidc',
    });
    noStore(ctx);
    ctx.status = 303;
    ctx.redirect(person.returnTo);
  });

  router.post('/local', async (ctx) => {
    if (!deps.config.console.localSignIn) throw new AppError(404, 'local sign-in is turned off (CONSOLE_LOCAL_SIGNIN)');
    checkOrigin(ctx, deps);
    const guard = deps.tokenGuard;
    const address = sourceOf(ctx, deps);
    // As the token endpoint: the body first (small), so that one statement counts the request
    // against its source and reads the backoff of the client it names; a request whose body is
    // refused counts too.
    let body: Record<string, unknown>;
    try {
      body = await readJsonObject(ctx, SIGN_IN_BODY_LIMIT);
    } catch (err) {
      await guard.limits.admit(address, '');
      throw err;
    }
    const source = await guard.limits.admit(address, typeof body.clientId === 'string' ? body.clientId : '');
    const violations = (['clientId', 'clientSecret'] as const)
      .filter((field) => typeof body[field] !== 'string' || body[field] === '')
      .map((field) => ({ field, description: 'is required: a non-empty string' }));
    if (violations.length > 0) throw invalidArgument(violations);
    const clientId = body.clientId as string;
    const clientSecret = body.clientSecret as string;
    const client = `${clientId}${clientSecret}`.includes('\u0000')
      ? undefined
      : await authenticateClient(deps.db, deps.secretBox, clientId, clientSecret, guard.slowVerifications.run);
    noStore(ctx);
    if (!client) {
      await guard.limits.failed(source, clientId);
      await auditFailure(deps, clientId, address);
      throw new AppError(401, 'client authentication failed');
    }
    const actor = `client:${client.clientId}`;
    ctx.body = await signIn(ctx, deps, {
      actor,
      person: { id: actor, name: client.displayName, email: '' },
      roles: client.roles,
      method: 'local',
    });
  });

  router.post('/logout', async (ctx) => {
    const session = await currentSession(ctx, deps);
    if (session) {
      checkOrigin(ctx, deps);
      const token = ctx.get('x-csrf-token');
      if (token === '' || !sameToken(token, session.csrfToken))
        throw new AppError(403, 'missing or wrong X-CSRF-Token');
      await sessionsOf(deps).end(session.idHash);
      await recordAudit(deps.db, {
        actor: actorString(session.principal),
        action: 'console.sign_out',
        resourceType: 'console_session',
        resourceId: session.idHash.slice(0, 16),
      });
    }
    ctx.append('Set-Cookie', sessionCookie(deps, '', 0));
    noStore(ctx);
    ctx.status = 204;
  });

  router.get('/me', async (ctx) => {
    noStore(ctx);
    const session = await currentSession(ctx, deps);
    if (!session) throw new AppError(401, 'no console session: sign in at /console');
    ctx.body = whoAmI(session);
  });

  return router;
}
