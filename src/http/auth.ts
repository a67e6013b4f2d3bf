/**
 * Bearer authentication for /api routes: `authenticate` puts the caller in `ctx.state.principal`
 * (401 with `WWW-Authenticate: Bearer` when missing or invalid); `requireAccess` answers 403 when
 * the caller's roles do not allow the area and mode.
 */
import type { Context, Next } from 'koa';
import type { AccessTokens } from '../auth/tokens';
import { actorString, allows, type Area, type Mode, type Principal } from '../auth/roles';
import { AppError } from './errors';

export function authenticate(tokens: AccessTokens) {
  return async (ctx: Context, next: Next): Promise<void> => {
    const header = ctx.get('authorization');
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!match?.[1]) {
      throw new AppError(401, header ? 'authorization header is not a bearer token' : 'missing bearer token', {
        headers: { 'WWW-Authenticate': 'Bearer' },
      });
    }
    const principal = await tokens.verify(match[1]);
    if (!principal) {
      throw new AppError(401, 'invalid or expired access token', {
        headers: { 'WWW-Authenticate': 'Bearer error="invalid_token"' },
      });
    }
    ctx.state.principal = principal;
    await next();
  };
}

export function requireAccess(area: Area, mode: Mode) {
  return async (ctx: Context, next: Next): Promise<void> => {
    const principal = ctx.state.principal as Principal | undefined;
    if (!principal) throw new AppError(401, 'missing bearer token', { headers: { 'WWW-Authenticate': 'Bearer' } });
    if (!allows(principal, area, mode)) {
      throw new AppError(403, `role does not allow ${mode} access to ${area}`);
    }
    await next();
  };
}

export function principalOf(ctx: Context): Principal {
  return ctx.state.principal as Principal;
}

/** The caller as an actor: `client:<clientId>`, or `person:<issuer>#<subject>` for a person signed in through OIDC. */
export function actorOf(ctx: Context): string {
  return actorString(principalOf(ctx));
}
