/**
 * The console's session at the HTTP boundary: the cookie (its name, flags and reading), the
 * authentication of `/console/api/...` requests by it, and the checks of an unsafe request
 * (`X-CSRF-Token` equal to the session's token; `Origin`, when present, equal to BASE_URL's).
 * `/api/...` never reads the cookie: it stays bearer-only (src/http/auth.ts).
 */
import type { Context, Next } from 'koa';
import { ConsoleSessions, sameToken, type Session } from '../auth/sessions';
import { actorString } from '../auth/roles';
import { onBehalfOf } from '../store/audit';
import type { AppDeps } from './context';
import { AppError } from './errors';

/** Where the console's API is served: every `/api/...` operation again, after this prefix. */
export const CONSOLE_PREFIX = '/console';

const UNSAFE = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

const sessions = new WeakMap<AppDeps, ConsoleSessions>();

/** The app's sessions (the one in `deps.sessions`, else made from the configuration). */
export function sessionsOf(deps: AppDeps): ConsoleSessions {
  let found = deps.sessions ?? sessions.get(deps);
  if (!found) {
    found = new ConsoleSessions(deps.db, {
      idleSeconds: deps.config.console.sessionIdleSeconds,
      maxSeconds: deps.config.console.sessionMaxSeconds,
    });
    sessions.set(deps, found);
  }
  return found;
}

function secureBase(deps: AppDeps): boolean {
  return deps.config.baseUrl.startsWith('https:');
}

/** `__Host-console_session` when BASE_URL is https (Secure, Path=/, no Domain), else `console_session`. */
export function sessionCookieName(deps: AppDeps): string {
  return secureBase(deps) ? '__Host-console_session' : 'console_session';
}

/** The Set-Cookie value that carries a session's id (`maxAgeSeconds` 0: the one that removes it). */
export function sessionCookie(deps: AppDeps, value: string, maxAgeSeconds: number): string {
  const parts = [
    `${sessionCookieName(deps)}=${value}`,
    'Path=/',
    'HttpOnly',
    'SameSite=Lax',
    `Max-Age=${maxAgeSeconds}`,
  ];
  if (secureBase(deps)) parts.push('Secure');
  return parts.join('; ');
}

/** The session cookie's value in the request, if any. */
export function readSessionCookie(ctx: Context, deps: AppDeps): string | undefined {
  const name = sessionCookieName(deps);
  for (const pair of ctx.get('cookie').split(';')) {
    const at = pair.indexOf('=');
    if (at > 0 && pair.slice(0, at).trim() === name) return pair.slice(at + 1).trim();
  }
  return undefined;
}

/** The session of the request's cookie, if live. */
export async function currentSession(ctx: Context, deps: AppDeps): Promise<Session | undefined> {
  const id = readSessionCookie(ctx, deps);
  return id ? sessionsOf(deps).resolve(id) : undefined;
}

/** BASE_URL's origin: the only one an unsafe console request may come from. */
export function consoleOrigin(deps: AppDeps): string {
  return new URL(deps.config.baseUrl).origin;
}

/** 403 unless the request's `Origin`, when present, is BASE_URL's. */
export function checkOrigin(ctx: Context, deps: AppDeps): void {
  const origin = ctx.get('origin');
  if (origin !== '' && origin !== consoleOrigin(deps)) {
    throw new AppError(403, "the request comes from another origin than the console's");
  }
}

/**
 * Authentication of `/console/api/...`: the session cookie (401 without a live session); an unsafe
 * request also needs the session's CSRF token in `X-CSRF-Token` and an `Origin`, when present,
 * equal to BASE_URL's (403 otherwise, before anything is read or changed).
 */
export function authenticateSession(deps: AppDeps) {
  return async (ctx: Context, next: Next): Promise<void> => {
    const session = await currentSession(ctx, deps);
    if (!session) throw new AppError(401, 'no console session: sign in at /console');
    if (UNSAFE.has(ctx.method)) {
      checkOrigin(ctx, deps);
      const token = ctx.get('x-csrf-token');
      if (token === '' || !sameToken(token, session.csrfToken))
        throw new AppError(403, 'missing or wrong X-CSRF-Token');
    }
    ctx.state.principal = session.principal;
    ctx.state.session = session;
    const person = session.principal.person;
    if (person) await onBehalfOf({ actor: actorString(session.principal), ...person }, next);
    else await next();
  };
}
