/**
 * Sign-in for people (the console's, not in the OpenAPI document: API clients never call it).
 * `POST /console/auth/local` {clientId, clientSecret}: an API client's credentials, with the token
 * endpoint's flood guards, from BASE_URL's origin only; `POST /console/auth/logout`;
 * `GET /console/auth/me` → {person, csrfToken}. OIDC sign-in: src/http/routes/console-oidc.ts.
 */
import Router from '@koa/router';
import type { Context } from 'koa';
import type { AppDeps } from '../context';
import type { Role } from '../../auth/roles';
import { actorString } from '../../auth/roles';
import { sameToken, type Session, type SessionPerson } from '../../auth/sessions';
import { authenticateClient } from '../../auth/clients';
import { recordAudit } from '../../store/audit';
import { invalidArgument } from '../../errors';
import { readJsonObject } from '../body';
import { AppError } from '../errors';
import { CONSOLE_PREFIX, checkOrigin, currentSession, sessionCookie, sessionsOf } from '../console-session';
import { auditFailure, guardOf, sourceOf } from './token';

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

export function createConsoleRouter(deps: AppDeps): Router {
  const router = new Router({ prefix: `${CONSOLE_PREFIX}/auth` });

  router.post('/local', async (ctx) => {
    if (!deps.config.console.localSignIn) throw new AppError(404, 'local sign-in is turned off (CONSOLE_LOCAL_SIGNIN)');
    checkOrigin(ctx, deps);
    const guard = guardOf(deps);
    const source = sourceOf(ctx, deps);
    guard.perSource.take(source);
    const body = await readJsonObject(ctx, SIGN_IN_BODY_LIMIT);
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
      await auditFailure(deps, clientId, source);
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
      if (token === '' || !sameToken(token, session.csrfToken)) throw new AppError(403, 'missing or wrong X-CSRF-Token');
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
