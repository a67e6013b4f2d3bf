/**
 * HTTP helpers for governance tests: a caller bound to one bearer token, and shortcuts that create
 * apps, users and entitlements through the real API (asserting success).
 */
import request from 'supertest';
import type { TestService } from './test-service';
import type { Role } from '../../src/auth/roles';

export interface Caller {
  get(path: string): request.Test;
  post(path: string, body?: unknown): request.Test;
  put(path: string, body?: unknown): request.Test;
  delete(path: string): request.Test;
}

export function callerFor(service: TestService, token: string | undefined): Caller {
  const auth = (test: request.Test) => (token ? test.set('Authorization', `Bearer ${token}`) : test);
  return {
    get: (path) => auth(request(service.server).get(path)),
    post: (path, body) => {
      const test = auth(request(service.server).post(path));
      return body === undefined ? test : test.send(body as object);
    },
    put: (path, body) => {
      const test = auth(request(service.server).put(path));
      return body === undefined ? test : test.send(body as object);
    },
    delete: (path) => auth(request(service.server).delete(path)),
  };
}

export async function callerWith(service: TestService, ...roles: Role[]): Promise<Caller> {
  return callerFor(service, await service.tokenFor(...roles));
}

async function created(test: request.Test, key: string): Promise<Record<string, unknown> & { id: string }> {
  const res = await test;
  if (res.status !== 200) throw new Error(`expected 200, got ${res.status}: ${JSON.stringify(res.body)}`);
  return res.body[key];
}

/** Creates a governance app (the `/api/v1/apps` resource), not the Koa app of src/http/app.ts. */
export function createGovernanceApp(
  caller: Caller,
  displayName = 'App',
): Promise<Record<string, unknown> & { id: string }> {
  return created(caller.post('/api/v1/apps', { displayName }), 'app');
}

export function createUser(
  caller: Caller,
  type: 'USER_TYPE_SERVICE' | 'USER_TYPE_HUMAN' = 'USER_TYPE_SERVICE',
): Promise<Record<string, unknown> & { id: string }> {
  return created(caller.post('/api/v1/users', { displayName: 'Robot', email: 'robot@example.com', type }), 'user');
}

export function createEntitlement(
  caller: Caller,
  appId: string,
  fields: Record<string, unknown> = {},
): Promise<Record<string, unknown> & { id: string }> {
  return created(
    caller.post(`/api/v1/apps/${appId}/entitlements`, { displayName: 'Admin', ...fields }),
    'appEntitlement',
  );
}

/** The field paths of a 400 response's BadRequest detail. */
export function violatedFields(body: { details?: Array<{ fieldViolations?: Array<{ field: string }> }> }): string[] {
  return (body.details?.[0]?.fieldViolations ?? []).map((v) => v.field);
}
