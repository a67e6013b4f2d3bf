/**
 * OAuth 2.0 client credentials (RFC 6749 §4.4) at POST /auth/v1/token, credentials in the body
 * (form or JSON); errors in the RFC 6749 §5.2 shape. Public keys of the access tokens at /auth/v1/jwks.
 * Flood guards first: a per-source rate limit and a per-(client, source) failure backoff, shared by
 * the API processes through the store (429), and a cap on slow verifications (503), all with
 * Retry-After, in the service's error shape. Failed attempts are audited (never the secret).
 */
import type Router from '@koa/router';
import type { Context } from 'koa';
import type { AppDeps } from '../context';
import { readRawBody } from '../body';
import { authenticateClient } from '../../auth/clients';
import { auditTokenDenied } from '../../domain/clients';
import * as api from '../../domain/api-schemas';
import { mountOperations, operation, exactRouter } from '../operation';

const TOKEN_BODY_LIMIT = 16 * 1024;

type OAuthError = 'invalid_request' | 'invalid_client' | 'unsupported_grant_type';

/** Answers an RFC 6749 error; `undefined` tells the operation that the body is set. */
function oauthError(ctx: Context, error: OAuthError, description: string): undefined {
  ctx.status = error === 'invalid_client' ? 401 : 400;
  ctx.set('Cache-Control', 'no-store');
  ctx.body = { error, error_description: description };
  return undefined;
}

async function readTokenRequest(ctx: Context): Promise<Record<string, unknown> | string> {
  const raw = (await readRawBody(ctx.req, TOKEN_BODY_LIMIT)).toString('utf8');
  const type = (ctx.get('content-type').split(';')[0] ?? '').trim().toLowerCase();
  if (type === 'application/x-www-form-urlencoded') {
    return Object.fromEntries(new URLSearchParams(raw));
  }
  if (type === 'application/json') {
    try {
      const value: unknown = JSON.parse(raw);
      if (value && typeof value === 'object' && !Array.isArray(value)) return value as Record<string, unknown>;
    } catch {
      /* falls through */
    }
    return 'request body is not a JSON object';
  }
  return 'Content-Type must be application/x-www-form-urlencoded or application/json';
}

/** Audits the refusal (never the secret); a store that cannot take the record does not change the answer. */
export async function auditFailure(deps: AppDeps, clientId: string, source: string): Promise<void> {
  try {
    await auditTokenDenied(deps.db, clientId, source);
  } catch (err) {
    deps.logger
      .child({ component: 'token' })
      .warn({ err: (err as Error).message }, 'could not audit a failed token request');
  }
}

/** The caller's address as the flood guards count it. */
export function sourceOf(ctx: Context, deps: AppDeps): string {
  return (deps.config.trustProxy ? ctx.ip : ctx.req.socket.remoteAddress) ?? '';
}

export const TOKEN_OPERATIONS = [
  operation({
    method: 'post',
    path: '/auth/v1/token',
    operationId: 'auth.token',
    tag: 'Auth',
    access: 'public',
    summary: 'OAuth 2.0 client credentials: an access token for the API.',
    description: 'Credentials in the body (form or JSON), never in an Authorization header (400 invalid_request).',
    // Read by the handler itself: the flood guards come before the body, and errors take the RFC 6749 shape.
    body: { schema: api.TokenRequest, required: true, form: true, validation: 'handler' },
    ok: api.TokenResponse,
    errors: [400, 401, 413, 429, 503],
    errorSchema: api.OAuthError,
    serviceErrors: [413, 429, 503],
    handle: async (_input, ctx, deps) => {
      const guard = deps.tokenGuard;
      const address = sourceOf(ctx, deps);
      // The body first (at most 16 KiB), so that one statement counts the request against its
      // source and reads the backoff of the client it names; every request counts, good or bad
      // (one whose body is refused too, before its refusal).
      let body: Record<string, unknown> | string;
      try {
        body = /^Basic\s/i.test(ctx.get('authorization')) ? 'basic' : await readTokenRequest(ctx);
      } catch (err) {
        await guard.limits.admit(address, '');
        throw err;
      }
      const named = typeof body === 'object' && typeof body.client_id === 'string' ? body.client_id : '';
      const source = await guard.limits.admit(address, named);
      if (body === 'basic') {
        return oauthError(
          ctx,
          'invalid_request',
          'client credentials belong in the request body (client_id, client_secret), not in an Authorization header',
        );
      }
      if (typeof body === 'string') return oauthError(ctx, 'invalid_request', body);
      const { grant_type: grantType, client_id: clientId, client_secret: clientSecret } = body;
      if (typeof grantType !== 'string' || grantType === '')
        return oauthError(ctx, 'invalid_request', 'grant_type is required');
      if (grantType !== 'client_credentials') {
        return oauthError(ctx, 'unsupported_grant_type', 'only grant_type=client_credentials is supported');
      }
      if (typeof clientId !== 'string' || clientId === '' || typeof clientSecret !== 'string' || clientSecret === '') {
        return oauthError(ctx, 'invalid_request', 'client_id and client_secret are required in the request body');
      }
      // No client id or secret holds a NUL character (and the store cannot even look one up).
      const client = `${clientId}${clientSecret}`.includes('\u0000')
        ? undefined
        : await authenticateClient(deps.db, deps.secretBox, clientId, clientSecret, guard.slowVerifications.run);
      if (!client) {
        await guard.limits.failed(source, clientId);
        await auditFailure(deps, clientId, address);
        return oauthError(ctx, 'invalid_client', 'client authentication failed');
      }
      ctx.set('Cache-Control', 'no-store');
      ctx.set('Pragma', 'no-cache');
      return {
        access_token: await deps.tokens.issue(client.clientId, client.roles),
        token_type: 'Bearer' as const,
        expires_in: deps.tokens.ttlSeconds,
      };
    },
  }),
  operation({
    method: 'get',
    path: '/auth/v1/jwks',
    operationId: 'auth.jwks',
    tag: 'Auth',
    access: 'public',
    summary: 'Public keys of the access tokens.',
    ok: api.JwksDocument,
    errors: [],
    handle: (_input, ctx, deps) => {
      ctx.set('Cache-Control', 'public, max-age=300');
      // Each key as a plain object: the document's keys are open objects with a kty.
      return { keys: deps.tokens.jwks().keys.map((key) => ({ ...key })) };
    },
  }),
];

export function createTokenRouter(deps: AppDeps): Router {
  return mountOperations(exactRouter(), deps, TOKEN_OPERATIONS);
}
