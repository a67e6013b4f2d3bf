/**
 * Every route the app mounts × every caller (no token, read_only, admin, super_admin): the exact
 * status. The routes are read from the routers themselves (src/http/routes, ROUTERS), so a route
 * added without a line in ACCESS below fails this test until someone decides who may call it.
 * Requests name ids that do not exist and send an empty body: an allowed caller gets the route's
 * own answer (404, 400, 200, ...), a caller without a token 401, a caller whose role does not
 * allow the route 403. Real app, real store, real tokens; no workflow engine (so /ready is 503).
 */
import os from 'node:os';
import request from 'supertest';
import type Router from '@koa/router';
import { ROUTERS } from '../../src/http/routes';
import type { Role } from '../../src/auth/roles';
import { startTestService, type TestService } from '../helpers/test-service';
import { DATABASES, describeOn } from '../helpers/databases';
import { createClient } from '../../src/auth/clients';

type Caller = 'none' | Role;
const CALLERS: Caller[] = ['none', 'read_only', 'admin', 'super_admin'];

/**
 * Who may call a route: `public` (no token needed; every caller gets `status`), `governance-read`
 * (read_only, admin, super_admin), `governance-write` and `approver` (admin, super_admin), `super`
 * (super_admin).
 * `status`: the answer of an allowed caller to a request with unknown ids and an empty JSON body.
 */
type Access = 'public' | 'governance-read' | 'governance-write' | 'approver' | 'super';
/**
 * The codec endpoint decodes run payloads: a token that may read runs (admin, super_admin), or no token
 * from loopback where allowed (the test service allows it, as the embedded dev setup does).
 */
const CODEC = { statuses: { none: 400, read_only: 403, admin: 400, super_admin: 400 } } as const;
const ACCESS: Record<string, { access: Access; status: number } | { statuses: Readonly<Record<Caller, number>> }> = {
  'POST /codec/decode': CODEC,
  'POST /codec/encode': CODEC,
  'OPTIONS /codec/decode': { access: 'public', status: 204 },
  'OPTIONS /codec/encode': { access: 'public', status: 204 },
  'GET /api/v1/automations/:id/deliveries': { access: 'approver', status: 404 },
  'GET /api/v1/audit': { access: 'super', status: 200 },
  'GET /health': { access: 'public', status: 200 },
  'GET /console/assets/:name': { access: 'public', status: 503 },
  'GET /ready': { access: 'public', status: 503 },
  'GET /metrics': { access: 'public', status: 200 },
  'POST /auth/v1/token': { access: 'public', status: 400 },
  'GET /auth/v1/jwks': { access: 'public', status: 200 },
  'GET /api/openapi.json': { access: 'public', status: 200 },
  'POST /api/v1/webhooks/incoming/:listenerId': { access: 'public', status: 404 },
  // The console's sign-in: an empty body is 400; logout without a session 204; /me needs a session (none here).
  'POST /console/auth/local': { access: 'public', status: 400 },
  'POST /console/auth/logout': { access: 'public', status: 204 },
  'GET /console/auth/me': { access: 'public', status: 401 },
  'GET /console/auth/config': { access: 'public', status: 200 },
  // Without OIDC configured.
  'GET /console/auth/login': { access: 'public', status: 404 },
  'GET /console/auth/callback': { access: 'public', status: 404 },

  'POST /api/v1/iam/clients': { access: 'super', status: 400 },
  'GET /api/v1/iam/clients': { access: 'super', status: 200 },
  'GET /api/v1/iam/clients/:id': { access: 'super', status: 404 },
  'DELETE /api/v1/iam/clients/:id': { access: 'super', status: 404 },

  'POST /api/v1/automations': { access: 'super', status: 400 },
  'GET /api/v1/automations': { access: 'approver', status: 200 },
  'GET /api/v1/automations/:id': { access: 'approver', status: 404 },
  'POST /api/v1/automations/:id': { access: 'super', status: 400 },
  'DELETE /api/v1/automations/:id': { access: 'super', status: 404 },
  'POST /api/v1/automations/:id/publish': { access: 'super', status: 404 },
  'POST /api/v1/automations/:id/unpublish': { access: 'super', status: 404 },
  'POST /api/v1/automations/:id/test': { access: 'super', status: 404 },
  'POST /api/v1/automations/:id/trigger/rotate-secret': { access: 'super', status: 404 },
  'POST /api/v1/automations/:id/schedule/backfill': { access: 'super', status: 400 },
  'POST /api/v1/automations/:id/schedule/trigger': { access: 'super', status: 404 },
  'PUT /api/v1/automations/:id/circuit-breaker': { access: 'super', status: 404 },
  'DELETE /api/v1/automations/:id/circuit-breaker': { access: 'super', status: 404 },
  'POST /api/v1/automations/:id/breaker/resume': { access: 'approver', status: 404 },
  'POST /api/v1/automations/:id/breaker/cancel': { access: 'approver', status: 404 },
  'GET /api/v1/automations/:id/executions': { access: 'approver', status: 404 },
  'GET /api/v1/automation_executions': { access: 'approver', status: 503 },
  'GET /api/v1/automations/:id/lanes': { access: 'approver', status: 404 },
  'GET /api/v1/automation_executions/:id': { access: 'approver', status: 503 },
  'POST /api/v1/automation_executions/:id/steps/:stepId/approve': { access: 'approver', status: 503 },
  'POST /api/v1/automation_executions/:id/steps/:stepId/reject': { access: 'approver', status: 503 },
  'POST /api/v1/automation_executions/:id/cancel': { access: 'super', status: 503 },
  // The body (no reason, no filter) is refused before the engine is asked.
  'POST /api/v1/automation_executions/:id/terminate': { access: 'super', status: 400 },
  'POST /api/v1/automation_executions/:id/rerun': { access: 'super', status: 503 },
  'POST /api/v1/automation_executions/bulk': { access: 'super', status: 400 },
  'GET /api/v1/bulk_actions': { access: 'approver', status: 200 },
  'GET /api/v1/bulk_actions/:id': { access: 'approver', status: 404 },
  'POST /api/v1/bulk_actions/:id/cancel': { access: 'super', status: 404 },

  'POST /api/v1/apps': { access: 'governance-write', status: 400 },
  'GET /api/v1/apps': { access: 'governance-read', status: 200 },
  'GET /api/v1/apps/:app_id': { access: 'governance-read', status: 404 },
  'POST /api/v1/users': { access: 'governance-write', status: 400 },
  'GET /api/v1/users': { access: 'governance-read', status: 200 },
  'GET /api/v1/users/:user_id': { access: 'governance-read', status: 404 },
  'POST /api/v1/users/:user_id': { access: 'governance-write', status: 404 },
  'POST /api/v1/apps/:app_id/entitlements': { access: 'governance-write', status: 404 },
  'GET /api/v1/apps/:app_id/entitlements': { access: 'governance-read', status: 404 },
  'POST /api/v1/secrets': { access: 'super', status: 400 },
  'GET /api/v1/secrets': { access: 'governance-read', status: 200 },
  'GET /api/v1/secrets/:name': { access: 'governance-read', status: 404 },
  'PUT /api/v1/secrets/:name': { access: 'super', status: 400 },
  'DELETE /api/v1/secrets/:name': { access: 'super', status: 404 },
  'GET /api/v1/apps/:app_id/entitlements/:id': { access: 'governance-read', status: 404 },
  'POST /api/v1/apps/:app_id/entitlements/:id': { access: 'governance-write', status: 404 },
  'DELETE /api/v1/apps/:app_id/entitlements/:id': { access: 'governance-write', status: 404 },
  'POST /api/v1/search/entitlements': { access: 'governance-read', status: 200 },
  'POST /api/v1/grants': { access: 'governance-write', status: 400 },
  'GET /api/v1/grants': { access: 'governance-read', status: 200 },
  'GET /api/v1/grants/:id': { access: 'governance-read', status: 404 },
  'POST /api/v1/grants/:id/revoke': { access: 'governance-write', status: 400 },
  'POST /api/v1/grants/:id/extend': { access: 'governance-write', status: 400 },
  'POST /api/v1/provisioning_webhooks': { access: 'super', status: 400 },
  'GET /api/v1/provisioning_webhooks': { access: 'approver', status: 200 },
  'GET /api/v1/provisioning_webhooks/:id': { access: 'approver', status: 404 },
  'DELETE /api/v1/provisioning_webhooks/:id': { access: 'super', status: 404 },
  'POST /api/v1/provisioning/callbacks/:token': { access: 'public', status: 400 },
  'GET /api/v1/provisioning_tasks': { access: 'governance-write', status: 200 },
  'POST /api/v1/provisioning_tasks/:id/complete': { access: 'governance-write', status: 404 },
  'POST /api/v1/provisioning_tasks/:id/fail': { access: 'governance-write', status: 404 },
  'GET /api/v2/users/:user_id/owners/entitlements': { access: 'governance-read', status: 404 },
  'POST /api/v2/users/:user_id/owners/entitlements/:role_slug/:app_entitlement_ref_app_id/:app_entitlement_ref_id': {
    access: 'governance-write',
    status: 404,
  },
  'DELETE /api/v2/users/:user_id/owners/entitlements/:role_slug/:app_entitlement_ref_app_id/:app_entitlement_ref_id': {
    access: 'governance-write',
    status: 404,
  },
};

const ALLOWED: Record<Access, Caller[]> = {
  public: ['none', 'read_only', 'admin', 'super_admin'],
  'governance-read': ['read_only', 'admin', 'super_admin'],
  'governance-write': ['admin', 'super_admin'],
  approver: ['admin', 'super_admin'],
  super: ['super_admin'],
};

/** `METHOD path` of every route the app mounts (HEAD, which koa-router adds to GET, left out). */
function mountedRoutes(service: TestService): string[] {
  const routes = new Set<string>();
  for (const factory of ROUTERS) {
    const router: Router = factory(service.deps);
    for (const layer of router.stack) {
      for (const method of layer.methods) if (method !== 'HEAD') routes.add(`${method} ${layer.path}`);
    }
  }
  return [...routes].sort();
}

/**
 * `/console/api/...` serves every `/api/...` operation that needs a token, for a console session:
 * the same status for each role as its `/api` route.
 */
function entryOf(route: string): (typeof ACCESS)[string] | undefined {
  const mirrored = /^(\w+) \/console(\/api\/.*)$/.exec(route);
  if (!mirrored) return ACCESS[route];
  const entry = ACCESS[`${mirrored[1]} ${mirrored[2]}`];
  return entry && !('access' in entry && entry.access === 'public') ? entry : undefined;
}

function expectedStatus(route: string, caller: Caller): number | 'no ACCESS entry' {
  const entry = entryOf(route);
  if (!entry) return 'no ACCESS entry';
  if ('statuses' in entry) return entry.statuses[caller];
  if (ALLOWED[entry.access].includes(caller)) return entry.status;
  return caller === 'none' ? 401 : 403;
}

for (const target of DATABASES) {
  describeOn(target)(`route × role matrix (${target.label})`, () => {
    let service: TestService;
    const tokens = new Map<Caller, string>();
    /** A console session per role: its cookie and CSRF token. */
    const sessions = new Map<Caller, { cookie: string; csrfToken: string }>();

    beforeAll(async () => {
      // No console build (a folder without one): the console's pages and assets answer 503 whatever
      // else the run has built, so the matrix does not depend on the order of the test files.
      service = await startTestService({ target, deps: { consoleDir: `${os.tmpdir()}/no-console-build` } });
      for (const caller of CALLERS) {
        if (caller === 'none') continue;
        tokens.set(caller, await service.tokenFor(caller));
        const { client, clientSecret } = await createClient(service.deps.db, service.deps.secretBox, {
          displayName: caller,
          roles: [caller],
        });
        const res = await request(service.server)
          .post('/console/auth/local')
          .send({ clientId: client.clientId, clientSecret });
        sessions.set(caller, {
          cookie: (res.headers['set-cookie'] as unknown as string[])[0]!.split(';')[0]!,
          csrfToken: res.body.csrfToken,
        });
      }
    });
    afterAll(async () => service?.close());

    it('every mounted route has an entry, and every entry is a mounted route', () => {
      const mounted = mountedRoutes(service);
      expect(mounted.length).toBeGreaterThan(30);
      expect(mounted.filter((route) => !entryOf(route))).toEqual([]);
      expect(Object.keys(ACCESS).filter((route) => !mounted.includes(route))).toEqual([]);
    });

    it('answers every route × caller with exactly the expected status', async () => {
      const got: string[] = [];
      const want: string[] = [];
      for (const route of mountedRoutes(service)) {
        const [method, template] = route.split(' ') as [string, string];
        const path = template.replace(/:[A-Za-z_]+/g, 'missing');
        for (const caller of CALLERS) {
          let test = request(service.server)[method.toLowerCase() as 'get' | 'post' | 'put' | 'delete'](path);
          const token = tokens.get(caller);
          const session = sessions.get(caller);
          if (path.startsWith('/console/api/')) {
            if (session) test = test.set('Cookie', session.cookie).set('X-CSRF-Token', session.csrfToken);
          } else if (token) test = test.set('Authorization', `Bearer ${token}`);
          if (method === 'POST' || method === 'PUT') test = test.set('Content-Type', 'application/json').send('{}');
          const res = await test;
          got.push(`${route} as ${caller}: ${res.status}`);
          want.push(`${route} as ${caller}: ${expectedStatus(route, caller)}`);
          if (caller === 'none' && expectedStatus(route, caller) === 401 && !path.startsWith('/console/')) {
            expect([route, res.headers['www-authenticate']]).toEqual([route, 'Bearer']);
          }
        }
      }
      expect(got).toEqual(want);
    });
  });
}
