/**
 * The OpenAPI 3.1 document: valid for a real OpenAPI 3.1 validator (it is generated from the
 * operation declarations that also mount the routes: src/http/operation.ts), with the original
 * specification's operation id, tag, version and security; and true: real responses of the
 * running service (a real store, a real Temporal dev server for the webhook 200) validate against
 * the operation's response schema with ajv (JSON Schema 2020-12), strictly enough that a missing,
 * mistyped or undeclared field fails. (Every test service checks every response it sends with the
 * same checker, test/helpers/contract.ts; this file also makes sure each operation is exercised.)
 */
import { randomUUID } from 'node:crypto';
import { insertBulkSet } from '../../src/store/bulk-actions';
import request from 'supertest';
import { startStack, hmacEvent, deliver, listenerPath, type Stack } from '../helpers/stack';
import { callerFor, createGovernanceApp, createEntitlement, createUser, type Caller } from '../helpers/governance';
import { createClient } from '../../src/auth/clients';
import { poll, until } from '../helpers/wait';
import { startReceiver } from '../helpers/receiver';
import { ContractChecker, templateOf as documentedTemplate } from '../helpers/contract';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
type Method = 'get' | 'post' | 'put' | 'delete';

/** `@seriousme/openapi-schema-validator` is ESM only; jest's transform turns `import()` into `require`. */
const importEsm = new Function('specifier', 'return import(specifier)') as (specifier: string) => Promise<Json>;

/** The openapi path template a request path matches (`/api/v1/apps/abc` → `/api/v1/apps/{app_id}`). */
function templateOf(doc: Json, method: Method, path: string): string {
  const template = documentedTemplate(doc, method, path);
  if (!template) throw new Error(`no documented operation for ${method.toUpperCase()} ${path.split('?')[0]}`);
  return template;
}

describe('OpenAPI document', () => {
  let stack: Stack;
  let doc: Json;
  /** The same checker every test service's responses go through (test/helpers/contract.ts). */
  let checker: ContractChecker;
  let admin: Caller;
  let superAdmin: Caller;
  let reader: Caller;
  /** `METHOD template status` of every response checked against the document. */
  const checked = new Set<string>();
  const validatorFor = (schema: unknown) => checker.validatorFor(schema);

  /** Asserts that `res` is a documented response of `method path` and that its body matches the schema. */
  function expectConforms(method: Method, path: string, res: { status: number; body: unknown; headers: Json }): void {
    const template = templateOf(doc, method, path);
    const operation = doc.paths[template][method];
    const response = operation.responses[String(res.status)];
    if (!response)
      throw new Error(
        `${method.toUpperCase()} ${template}: status ${res.status} is not documented (body ${JSON.stringify(res.body)})`,
      );
    const schema = response.content?.['application/json']?.schema;
    if (!schema) throw new Error(`${method.toUpperCase()} ${template} ${res.status}: no JSON schema`);
    expect(String(res.headers['content-type'])).toMatch(/^application\/json/);
    const validate = validatorFor(schema);
    if (!validate(res.body)) {
      throw new Error(
        `${method.toUpperCase()} ${path} ${res.status} does not match the document: ${JSON.stringify(validate.errors?.slice(0, 5))}\nbody: ${JSON.stringify(res.body).slice(0, 2000)}`,
      );
    }
    checked.add(`${method.toUpperCase()} ${template} ${res.status}`);
  }

  async function call(caller: Caller, method: Method, path: string, body?: unknown): Promise<request.Response> {
    const res = await (method === 'post'
      ? caller.post(path, body)
      : method === 'put'
        ? caller.put(path, body)
        : method === 'get'
          ? caller.get(path)
          : caller.delete(path));
    expectConforms(method, path, res);
    return res;
  }

  beforeAll(async () => {
    stack = await startStack();
    const res = await request(stack.service.server).get('/api/openapi.json');
    expect(res.status).toBe(200);
    doc = res.body;
    checker = new ContractChecker(doc);
    superAdmin = callerFor(stack.service, stack.adminToken);
    admin = callerFor(stack.service, await stack.service.tokenFor('admin'));
    reader = callerFor(stack.service, await stack.service.tokenFor('read_only'));
  });
  afterAll(async () => stack.close());

  describe('the document', () => {
    it('is served without authentication and is valid OpenAPI 3.1 for @seriousme/openapi-schema-validator', async () => {
      const { Validator } = await importEsm('@seriousme/openapi-schema-validator');
      const validator = new Validator();
      const result = await validator.validate(doc);
      expect(result.errors).toBeUndefined();
      expect(result.valid).toBe(true);
      expect(validator.version).toBe('3.1');
      expect(doc.openapi).toMatch(/^3\.1\./);
    });

    it('carries the version, the server URL and every component ajv can compile', () => {
      expect(doc.info.version).toBe('0.1.0-alpha');
      expect(doc.servers).toEqual([{ url: stack.service.baseUrl }]);
      const names = Object.keys(doc.components.schemas);
      expect(names.length).toBeGreaterThan(0);
      // getSchema compiles the component: a validating function for each, none missing.
      expect(names.filter((name) => !checker.compiles(name))).toEqual([]);
    });

    it('gives the specified operation id and tag to the v2 create-owner operation', () => {
      const path =
        '/api/v2/users/{user_id}/owners/entitlements/{role_slug}/{app_entitlement_ref_app_id}/{app_entitlement_ref_id}';
      const operation = doc.paths[path].post;
      expect(operation.operationId).toBe('svc.api.user.v2.UserOwnersV2.CreateEntitlementOwner');
      expect(operation.tags).toEqual(['User Owner V2']);
      expect(operation.parameters.map((p: Json) => [p.name, p.in, p.required])).toEqual([
        ['user_id', 'path', true],
        ['role_slug', 'path', true],
        ['app_entitlement_ref_app_id', 'path', true],
        ['app_entitlement_ref_id', 'path', true],
      ]);
      expect(operation.requestBody.content['application/json'].schema).toEqual({
        $ref: '#/components/schemas/CreateEntitlementOwnerRequest',
      });
      expect(doc.components.schemas.CreateEntitlementOwnerRequest.properties.appEntitlementRef).toEqual({
        anyOf: [{ $ref: '#/components/schemas/AppEntitlementRef' }, { type: 'null' }],
      });
      expect(Object.keys(doc.components.schemas.UserOwnerEntitlement.properties)).toEqual([
        'appEntitlement',
        'createdAt',
        'roleSlug',
        'userId',
      ]);
    });

    it('declares bearer and OAuth 2.0 client credentials together on every /api operation, none elsewhere', () => {
      expect(doc.components.securitySchemes).toEqual({
        bearerAuth: expect.objectContaining({ type: 'http', scheme: 'bearer' }),
        oauth2: expect.objectContaining({
          type: 'oauth2',
          flows: { clientCredentials: { tokenUrl: '/auth/v1/token', scopes: {} } },
        }),
      });
      expect(doc.security).toBeUndefined();
      const open = [
        '/api/openapi.json',
        '/api/v1/webhooks/incoming/{listener_id}',
        '/api/v1/provisioning/callbacks/{token}',
      ];
      for (const [path, item] of Object.entries(doc.paths as Json)) {
        for (const [method, operation] of Object.entries(item as Json)) {
          const secured = path.startsWith('/api/') && !open.includes(path);
          expect([`${method} ${path}`, operation.security]).toEqual([
            `${method} ${path}`,
            secured ? [{ bearerAuth: [], oauth2: [] }] : [],
          ]);
        }
      }
    });

    it('lists page_size / page_token / pageSize / pageToken on every GET listing', () => {
      const listings = [
        '/api/v1/apps',
        '/api/v1/users',
        '/api/v1/apps/{app_id}/entitlements',
        '/api/v2/users/{user_id}/owners/entitlements',
        '/api/v1/automations',
        '/api/v1/iam/clients',
      ];
      for (const path of listings) {
        const query = doc.paths[path].get.parameters.filter((p: Json) => p.in === 'query').map((p: Json) => p.name);
        expect([path, query]).toEqual([path, ['page_size', 'page_token', 'pageSize', 'pageToken']]);
      }
      const search = doc.components.schemas.SearchEntitlementsRequest.properties;
      expect(search.page_size).toMatchObject({
        type: 'integer',
        description: expect.stringContaining('Alias: pageSize'),
      });
      expect(search.page_token).toEqual({ type: 'string', description: expect.stringContaining('Alias: pageToken') });
    });

    it('documents the webhook receiver: its headers and every status of docs/api.md#check-order', () => {
      const operation = doc.paths['/api/v1/webhooks/incoming/{listener_id}'].post;
      expect(operation.security).toEqual([]);
      const headers = operation.parameters
        .filter((p: Json) => p.in === 'header')
        .map((p: Json) => [p.name, p.required]);
      expect(headers).toEqual([
        ['Webhook-Timestamp', true],
        ['Webhook-Event-Id', true],
        ['Webhook-Signature', false],
        ['Authorization', false],
      ]);
      expect(Object.keys(operation.requestBody.content)).toEqual(['application/json']);
      expect(Object.keys(operation.responses).filter((status) => /^[24]/.test(status))).toEqual(
        expect.arrayContaining(['200', '400', '401', '403', '404', '409', '413']),
      );
      expect(operation.responses['200'].content['application/json'].schema).toEqual({
        $ref: '#/components/schemas/WebhookAccepted',
      });
      for (const status of ['400', '401', '403', '404', '409', '413']) {
        expect([status, operation.responses[status].content['application/json'].schema]).toEqual([
          status,
          { $ref: '#/components/schemas/Error' },
        ]);
      }
      expect(operation.responses['409'].content['application/json'].schema).toEqual({
        $ref: '#/components/schemas/Error',
      });
    });

    it('gives every error response the one error shape {code, message, details}', () => {
      const error = doc.components.schemas.Error;
      expect(error.required).toEqual(['code', 'message', 'details']);
      for (const [path, item] of Object.entries(doc.paths as Json)) {
        for (const operation of Object.values(item as Json)) {
          for (const [status, response] of Object.entries(operation.responses as Json)) {
            if (Number(status) < 400 || path === '/auth/v1/token' || path === '/ready') continue;
            expect([path, status, response.content['application/json'].schema]).toEqual([
              path,
              status,
              { $ref: '#/components/schemas/Error' },
            ]);
          }
        }
      }
    });
  });

  describe('real responses match it', () => {
    let registered = 0;
    /** A test whose responses count towards the coverage check below. */
    const responseTest = (name: string, fn: () => Promise<void>): void => {
      registered += 1;
      it(name, fn);
    };
    let appId: string;
    let userId: string;
    let entitlementId: string;

    beforeAll(async () => {
      appId = (await createGovernanceApp(admin, 'Conformance')).id;
      userId = (await createUser(admin, 'USER_TYPE_SERVICE')).id;
      entitlementId = (await createEntitlement(admin, appId, { displayName: 'Plain' })).id;
    });

    responseTest('operations endpoints and the token endpoint', async () => {
      const anonymous = callerFor(stack.service, undefined);
      await call(anonymous, 'get', '/health');
      const ready = await call(anonymous, 'get', '/ready');
      expect(ready.status).toBe(200);
      await call(anonymous, 'get', '/auth/v1/jwks');
      await call(anonymous, 'get', '/api/openapi.json');
      const metrics = await anonymous.get('/metrics');
      expect(metrics.status).toBe(200);
      expect(doc.paths['/metrics'].get.responses['200'].content['text/plain']).toEqual({ schema: { type: 'string' } });

      await createClient(stack.service.deps.db, stack.service.deps.secretBox, {
        displayName: 'conformance',
        roles: ['admin'],
        clientId: 'conformance-client',
        clientSecret: 'conformance-secret',
      });
      const token = await request(stack.service.server).post('/auth/v1/token').type('form').send({
        grant_type: 'client_credentials',
        client_id: 'conformance-client',
        client_secret: 'conformance-secret',
      });
      expect(token.status).toBe(200);
      expectConforms('post', '/auth/v1/token', token);
      const json = await request(stack.service.server).post('/auth/v1/token').send({
        grant_type: 'client_credentials',
        client_id: 'conformance-client',
        client_secret: 'conformance-secret',
      });
      expectConforms('post', '/auth/v1/token', json);
      const wrong = await request(stack.service.server)
        .post('/auth/v1/token')
        .type('form')
        .send({ grant_type: 'client_credentials', client_id: 'conformance-client', client_secret: 'nope' });
      expect(wrong.status).toBe(401);
      expectConforms('post', '/auth/v1/token', wrong);
      const missing = await request(stack.service.server).post('/auth/v1/token').type('form').send({ client_id: 'x' });
      expect(missing.status).toBe(400);
      expectConforms('post', '/auth/v1/token', missing);
    });

    responseTest('apps and users: create, get, list', async () => {
      const app = await call(admin, 'post', '/api/v1/apps', { displayName: 'Docs app', description: 'described' });
      expect(app.status).toBe(200);
      await call(reader, 'get', `/api/v1/apps/${app.body.app.id}`);
      await call(reader, 'get', '/api/v1/apps?page_size=10');
      const user = await call(admin, 'post', '/api/v1/users', {
        displayName: 'Docs user',
        email: 'docs@example.com',
        type: 'USER_TYPE_HUMAN',
      });
      expect(user.status).toBe(200);
      await call(reader, 'get', `/api/v1/users/${user.body.user.id}`);
      await call(admin, 'post', `/api/v1/users/${user.body.user.id}`, {
        user: { status: 'USER_STATUS_DISABLED' },
        updateMask: 'status',
      });
      await call(reader, 'get', '/api/v1/users?pageSize=10');
    });

    responseTest('entitlements: create (every field), get, list, update, search, delete', async () => {
      const full = {
        displayName: 'Full',
        alias: 'full-alias',
        description: 'all fields',
        slug: 'admin',
        purpose: 'APP_ENTITLEMENT_PURPOSE_VALUE_SOMETHING_NEW',
        durationGrant: '3600s',
        emergencyGrantEnabled: true,
        provisionerPolicy: {
          multiStep: {
            provisionSteps: [
              {
                manual: {
                  instructions: 'do it',
                  assignee: { group: { appGroupId: 'g', appId: 'a', fallbackUserIds: ['u'], allowReassignment: true } },
                },
              },
              {
                connector: {
                  account: {
                    connectorId: 'c',
                    schemaId: 's',
                    config: { nested: { any: [1, 'x'] } },
                    saveToVault: { vaultIds: ['v'] },
                  },
                },
              },
              { delegated: { appId: 'a', entitlementId: 'e', implicit: true } },
              { unconfigured: {} },
            ],
          },
        },
        deprovisionerPolicy: { webhook: { webhookId: 'w' } },
        complianceFrameworkValueIds: ['sox'],
        sourceConnectorIds: { c1: 'x' },
        annotations: { managed_by: 'terraform', iac_resource_address: 'module.a' },
        userEditedMask: 'displayName',
      };
      const created = await call(admin, 'post', `/api/v1/apps/${appId}/entitlements`, full);
      expect(created.status).toBe(200);
      const id = created.body.appEntitlement.id;
      await call(reader, 'get', `/api/v1/apps/${appId}/entitlements/${id}`);
      await call(reader, 'get', `/api/v1/apps/${appId}/entitlements?page_size=10`);
      const updated = await call(admin, 'post', `/api/v1/apps/${appId}/entitlements/${id}`, {
        appEntitlement: {
          displayName: 'Renamed',
          durationUnset: {},
          durationGrant: null,
          provisionerPolicy: { devicePlacement: { vaultBoundaryId: 'b' } },
        },
        updateMask: 'displayName,durationUnset,durationGrant,provisionerPolicy',
      });
      expect(updated.status).toBe(200);
      const search = await call(reader, 'post', '/api/v1/search/entitlements', {
        query: 'Renamed',
        appIds: [appId],
        page_size: 10,
      });
      expect(search.body.list).toHaveLength(1);
      const deleted = await call(admin, 'delete', `/api/v1/apps/${appId}/entitlements/${id}`);
      expect(deleted.status).toBe(200);
    });

    responseTest('entitlement owners: create (v2), list, delete', async () => {
      const path = `/api/v2/users/${userId}/owners/entitlements/owner/${appId}/${entitlementId}`;
      const created = await call(admin, 'post', path, { appEntitlementRef: { appId, id: entitlementId } });
      expect(created.status).toBe(200);
      await call(admin, 'post', path.replace('/owner/', '/approver/'));
      const list = await call(reader, 'get', `/api/v2/users/${userId}/owners/entitlements?page_size=10`);
      expect(list.body.list).toHaveLength(2);
      expect((await call(admin, 'delete', path.replace('/owner/', '/approver/'))).status).toBe(200);
    });

    responseTest('grants: create, get, list, extend, revoke', async () => {
      const made = await call(admin, 'post', `/api/v1/apps/${appId}/entitlements`, {
        displayName: 'Granted',
        durationGrant: '3600s',
      });
      const body = { userId, appId, appEntitlementId: made.body.appEntitlement.id, duration: '60s' };
      const created = await call(admin, 'post', '/api/v1/grants', body);
      expect(created.status).toBe(200);
      const id = created.body.grant.id;
      expect((await call(reader, 'get', `/api/v1/grants/${id}`)).status).toBe(200);
      expect((await call(reader, 'get', `/api/v1/grants?userId=${userId}&state=GRANTED`)).body.list).toHaveLength(1);
      expect((await call(admin, 'post', `/api/v1/grants/${id}/extend`, { duration: '600s' })).status).toBe(200);
      expect((await call(admin, 'post', `/api/v1/grants/${id}/revoke`, { reason: 'done' })).status).toBe(200);
      expect((await call(admin, 'post', `/api/v1/grants/${id}/extend`, { duration: '600s' })).status).toBe(409);
    });

    responseTest('provisioning tasks: list, complete, fail', async () => {
      const made = await call(admin, 'post', `/api/v1/apps/${appId}/entitlements`, {
        displayName: 'By hand',
        provisionerPolicy: { manual: { instructions: 'two people' } },
      });
      const ids: string[] = [];
      for (const email of ['task-one@example.com', 'task-two@example.com']) {
        const user = await call(admin, 'post', '/api/v1/users', { displayName: email, email, type: 'USER_TYPE_HUMAN' });
        const grant = await call(admin, 'post', '/api/v1/grants', {
          userId: user.body.user.id,
          appId,
          appEntitlementId: made.body.appEntitlement.id,
        });
        const opened: Json[] = await poll(
          async () => (await call(admin, 'get', `/api/v1/provisioning_tasks?grantId=${grant.body.grant.id}`)).body.list,
          (list: Json[]) => list.length === 1,
        );
        ids.push(opened[0]!.provisioningTask.id);
      }
      expect((await call(admin, 'get', '/api/v1/provisioning_tasks?state=OPEN')).status).toBe(200);
      expect(
        (await call(admin, 'post', `/api/v1/provisioning_tasks/${ids[0]}/complete`, { comment: 'ok' })).status,
      ).toBe(200);
      expect((await call(admin, 'post', `/api/v1/provisioning_tasks/${ids[1]}/fail`, {})).status).toBe(200);
      expect((await call(admin, 'post', `/api/v1/provisioning_tasks/${ids[1]}/fail`, {})).status).toBe(409);
    });

    responseTest('provisioning webhooks: create, get, list, delete; a callback after a 202', async () => {
      const receiver = await startReceiver(() => ({ status: 202 }));
      try {
        const made = await call(superAdmin, 'post', '/api/v1/provisioning_webhooks', {
          displayName: 'receiver',
          url: `${receiver.origin}/provision`,
        });
        expect(made.status).toBe(200);
        const webhookId = made.body.provisioningWebhook.id;
        expect((await call(admin, 'get', `/api/v1/provisioning_webhooks/${webhookId}`)).status).toBe(200);
        expect((await call(admin, 'get', '/api/v1/provisioning_webhooks')).status).toBe(200);
        const entitlement = await call(admin, 'post', `/api/v1/apps/${appId}/entitlements`, {
          displayName: 'Provisioned',
          provisionerPolicy: { webhook: { webhookId } },
        });
        const grant = await call(admin, 'post', '/api/v1/grants', {
          userId,
          appId,
          appEntitlementId: entitlement.body.appEntitlement.id,
        });
        expect(grant.body.grant.state).toBe('PROVISIONING');
        await until(() => receiver.received.length > 0, 'the receiver to be called');
        const callbackUrl = new URL(JSON.parse(receiver.received[0]!.body.toString()).callbackUrl as string);
        expect(
          (await call(callerFor(stack.service, undefined), 'post', callbackUrl.pathname, { status: 'done' })).status,
        ).toBe(200);
        await call(admin, 'delete', `/api/v1/apps/${appId}/entitlements/${entitlement.body.appEntitlement.id}`);
        expect((await call(superAdmin, 'delete', `/api/v1/provisioning_webhooks/${webhookId}`)).status).toBe(200);
      } finally {
        await receiver.close();
      }
    });

    responseTest('API clients: create, list, get, delete', async () => {
      const created = await call(superAdmin, 'post', '/api/v1/iam/clients', {
        displayName: 'ci',
        roles: ['read_only'],
      });
      expect(created.status).toBe(200);
      await call(superAdmin, 'get', '/api/v1/iam/clients');
      await call(superAdmin, 'get', `/api/v1/iam/clients/${created.body.client.id}`);
      expect((await call(superAdmin, 'delete', `/api/v1/iam/clients/${created.body.client.id}`)).status).toBe(200);
    });

    responseTest(
      'automations: create (HMAC and JWT, every step kind), get, list, update, publish, rotate, webhook 200 and 409, delete',
      async () => {
        const steps = [
          { id: 'vars', when: 'has(ctx.trigger.kind)', setVariables: { who: 'ctx.trigger.service_account' } },
          {
            id: 'own',
            createEntitlementOwner: {
              userId: 'ctx.steps.vars.who',
              roleSlug: "'owner'",
              appId: `'${appId}'`,
              entitlementId: `'${entitlementId}'`,
            },
          },
          { id: 'pause', wait: { duration: '60s' } },
          {
            id: 'undo',
            deleteEntitlementOwner: {
              userId: 'ctx.steps.vars.who',
              roleSlug: "'owner'",
              appId: `'${appId}'`,
              entitlementId: `'${entitlementId}'`,
            },
          },
        ];
        const hmac = await call(superAdmin, 'post', '/api/v1/automations', {
          displayName: 'HMAC automation',
          trigger: { incomingWebhook: { authMethod: 'HMAC', allowedCidrs: ['127.0.0.0/8', '::1'] } },
          steps,
        });
        expect(hmac.status).toBe(200);
        expect(typeof hmac.body.signingSecret).toBe('string');
        const jwt = await call(superAdmin, 'post', '/api/v1/automations', {
          displayName: 'JWT automation',
          trigger: { incomingWebhook: { authMethod: 'JWT', jwksUrl: 'https://idp.example/jwks.json', enabled: false } },
          steps: [
            {
              id: 'notify',
              retry: { maximumAttempts: 3, initialInterval: '0.5s' },
              callWebhook: {
                url: "'https://hooks.example/x'",
                body: { who: 'ctx.trigger.who' },
                headers: { 'X-Token': "'t'" },
                timeoutMs: 5000,
              },
            },
            { id: 'notify2', callWebhook: { url: "'https://hooks.example/y'", body: '{"a": 1}' } },
            { id: 'stop', when: 'false', fail: { message: "'nope'" } },
          ],
        });
        expect(jwt.status).toBe(200);
        expect(jwt.body.signingSecret).toBeUndefined();
        const id = hmac.body.automation.id;
        await call(superAdmin, 'get', `/api/v1/automations/${id}`);
        await call(superAdmin, 'get', '/api/v1/automations?page_size=10');
        await call(superAdmin, 'post', `/api/v1/automations/${jwt.body.automation.id}`, {
          automation: { trigger: { incomingWebhook: { authMethod: 'HMAC' } } },
          updateMask: 'trigger',
        });
        await call(superAdmin, 'post', `/api/v1/automations/${jwt.body.automation.id}/unpublish`);
        const published = await call(superAdmin, 'post', `/api/v1/automations/${id}/publish`);
        expect(published.body.automation.published).toBe(true);
        const rotated = await call(superAdmin, 'post', `/api/v1/automations/${id}/trigger/rotate-secret`, {
          gracePeriod: '0s',
        });
        const secret: string = rotated.body.signingSecret;
        // A schedule automation: its read with the Schedule's state, a manual action, a backfill.
        const nightly = await call(superAdmin, 'post', '/api/v1/automations', {
          displayName: 'Hourly',
          trigger: { schedule: { interval: '3600s', enabled: false } },
          steps: [{ id: 'seen', setVariables: { kind: 'ctx.trigger.kind' } }],
        });
        const nightlyId = nightly.body.automation.id as string;
        await call(superAdmin, 'post', `/api/v1/automations/${nightlyId}/publish`);
        const scheduled = await call(superAdmin, 'get', `/api/v1/automations/${nightlyId}`);
        expect(scheduled.body.automation.schedule.paused).toBe(true);
        expect((await call(superAdmin, 'post', `/api/v1/automations/${nightlyId}/schedule/trigger`)).status).toBe(200);
        const hour = Math.floor(Date.now() / 3_600_000) * 3_600_000;
        const backfilled = await call(superAdmin, 'post', `/api/v1/automations/${nightlyId}/schedule/backfill`, {
          startAt: new Date(hour - 7_200_000).toISOString(),
          endAt: new Date(hour).toISOString(),
        });
        expect(backfilled.body).toEqual({ started: 2, skipped: 0 });
        await call(superAdmin, 'delete', `/api/v1/automations/${nightlyId}`);

        const path = listenerPath(published.body.automation);
        const event = hmacEvent(secret, { kind: 'hire', service_account: userId });
        const accepted = await deliver(stack, path, event);
        expect(accepted.status).toBe(200);
        expectConforms('post', path, accepted);
        const duplicate = await deliver(stack, path, event);
        expect(duplicate.status).toBe(409);
        expectConforms('post', path, duplicate);
        const badSignature = await deliver(stack, path, {
          ...event,
          headers: { ...event.headers, 'Webhook-Signature': 'x'.repeat(43), 'Webhook-Event-Id': randomUUID() },
        });
        expect(badSignature.status).toBe(401);
        expectConforms('post', path, badSignature);
        const noHeaders = await deliver(stack, path, { headers: { 'Content-Type': 'application/json' }, body: '{}' });
        expect(noHeaders.status).toBe(400);
        await stack.service.deps.deliveryLog!.flush();
        const deliveries = await call(superAdmin, 'get', `/api/v1/automations/${id}/deliveries?status=401`);
        expect(deliveries.status).toBe(200);
        const encoded = await call(superAdmin, 'post', '/codec/encode', {
          payloads: [
            {
              metadata: { encoding: Buffer.from('json/plain').toString('base64') },
              data: Buffer.from('1').toString('base64'),
            },
          ],
        });
        expect(encoded.status).toBe(200);
        expect((await call(superAdmin, 'post', '/codec/decode', encoded.body)).status).toBe(200);
        expectConforms('post', path, noHeaders);
        const unknown = await deliver(stack, '/api/v1/webhooks/incoming/nope', event);
        expect(unknown.status).toBe(404);
        expectConforms('post', '/api/v1/webhooks/incoming/nope', unknown);

        const dryRun = await call(superAdmin, 'post', `/api/v1/automations/${id}/test`, {
          payload: { kind: 'hire', service_account: userId },
        });
        expect(dryRun.body.steps.map((step: Json) => step.status)).toEqual([
          'WOULD_RUN',
          'WOULD_RUN',
          'WOULD_RUN',
          'WOULD_RUN',
        ]);
        expect((await call(superAdmin, 'post', `/api/v1/automations/${id}/test`, {})).status).toBe(400);

        // The run waits in its `pause` step: visible in the executions listing and readable with its steps.
        const listed = await poll(
          async () => superAdmin.get(`/api/v1/automations/${id}/executions?page_size=10`),
          (res) => res.status === 200 && res.body.list.length > 0,
        );
        expect(listed.status).toBe(200);
        expectConforms('get', `/api/v1/automations/${id}/executions`, listed);
        expect(listed.body.list.map((item: Json) => item.execution.id)).toEqual([accepted.body.executionId]);
        const execution = await call(
          superAdmin,
          'get',
          `/api/v1/automation_executions/${encodeURIComponent(accepted.body.executionId)}`,
        );
        expect(execution.status).toBe(200);
        expect((await call(superAdmin, 'get', '/api/v1/automation_executions/webhook%3Anope%3Anope')).status).toBe(404);

        // Run control: approve, reject, cancel and terminate waiting runs; rerun one.
        const gate = await call(superAdmin, 'post', '/api/v1/automations', {
          displayName: 'Gate',
          trigger: { incomingWebhook: { authMethod: 'HMAC' } },
          steps: [{ id: 'mgr', waitForApproval: { timeout: '3600s' } }],
        });
        const gatePublished = await call(superAdmin, 'post', `/api/v1/automations/${gate.body.automation.id}/publish`);
        const gateRuns: string[] = [];
        for (let n = 0; n < 4; n += 1) {
          const delivered = await deliver(
            stack,
            listenerPath(gatePublished.body.automation),
            hmacEvent(gate.body.signingSecret, { n }),
          );
          expect(delivered.status).toBe(200);
          gateRuns.push(encodeURIComponent(delivered.body.executionId));
        }
        for (const run of gateRuns) {
          const got = await poll(
            async () => superAdmin.get(`/api/v1/automation_executions/${run}`),
            (res) => res.body.execution?.steps?.[0]?.status === 'WAITING_FOR_APPROVAL',
          );
          expect([run, got.body.execution?.steps?.[0]?.status]).toEqual([run, 'WAITING_FOR_APPROVAL']);
        }
        const [approveRun, rejectRun, cancelRun, terminateRun] = gateRuns as [string, string, string, string];
        expect(
          (
            await call(superAdmin, 'post', `/api/v1/automation_executions/${approveRun}/steps/mgr/approve`, {
              comment: 'fine',
            })
          ).status,
        ).toBe(200);
        expect(
          (await call(superAdmin, 'post', `/api/v1/automation_executions/${rejectRun}/steps/mgr/reject`, {})).status,
        ).toBe(200);
        expect((await call(superAdmin, 'post', `/api/v1/automation_executions/${cancelRun}/cancel`)).status).toBe(200);
        expect(
          (
            await call(superAdmin, 'post', `/api/v1/automation_executions/${terminateRun}/terminate`, {
              reason: 'done',
            })
          ).status,
        ).toBe(200);
        const rerun = await call(superAdmin, 'post', `/api/v1/automation_executions/${approveRun}/rerun`, {});
        expect(rerun.status).toBe(200);
        await stack.client.workflow
          .getHandle(rerun.body.execution.id)
          .terminate('conformance test done')
          .catch(() => undefined);
        await stack.client.workflow
          .getHandle(accepted.body.executionId)
          .terminate('conformance test done')
          .catch(() => undefined);
        // The circuit breaker: set, a paused run, the automation with its breaker's state, resume, cancel, delete.
        expect(
          (await call(superAdmin, 'put', `/api/v1/automations/${id}/circuit-breaker`, { maxRuns: 1, period: '60s' }))
            .status,
        ).toBe(200);
        expect(
          (await call(superAdmin, 'put', `/api/v1/automations/${id}/circuit-breaker`, { maxRuns: 0, period: '60s' }))
            .status,
        ).toBe(400);
        const held: string[] = [];
        for (let i = 0; i < 2; i++) {
          const res = await deliver(stack, path, hmacEvent(secret, { kind: 'hire', service_account: userId }));
          expect(res.status).toBe(200);
          held.push(res.body.executionId);
        }
        expect((await call(superAdmin, 'get', `/api/v1/automations/${id}`)).body.automation.breaker).toMatchObject({
          state: 'OPEN',
          pausedRuns: 1,
        });
        expect(
          (await call(admin, 'post', `/api/v1/automations/${id}/breaker/resume`, { reason: 'checked' })).body.resumed,
        ).toBe(1);
        expect(
          (await call(admin, 'post', `/api/v1/automations/${id}/breaker/cancel`, { reason: 'nothing held' })).body
            .canceled,
        ).toBe(0);
        expect((await call(admin, 'post', `/api/v1/automations/${id}/breaker/cancel`, {})).status).toBe(400);
        expect((await call(superAdmin, 'delete', `/api/v1/automations/${id}/circuit-breaker`)).status).toBe(200);
        for (const run of held)
          await stack.client.workflow
            .getHandle(run)
            .terminate('conformance test done')
            .catch(() => undefined);
        expect((await call(superAdmin, 'delete', `/api/v1/automations/${jwt.body.automation.id}`)).status).toBe(200);
      },
    );

    responseTest('outbound secrets: create, list, get, replace, delete, and their errors', async () => {
      expect(
        (
          await call(superAdmin, 'post', '/api/v1/secrets', {
            name: 'openapi_token',
            value: 'sk_openapi_value',
            allowedOrigins: ['https://crm.example'],
          })
        ).status,
      ).toBe(200);
      expect(
        (
          await call(superAdmin, 'post', '/api/v1/secrets', {
            name: 'openapi_token',
            value: 'sk_openapi_value',
            allowedOrigins: ['https://crm.example'],
          })
        ).status,
      ).toBe(409);
      expect((await call(superAdmin, 'post', '/api/v1/secrets', { name: 'Bad-Name', value: 'v' })).status).toBe(400);
      expect((await call(reader, 'get', '/api/v1/secrets')).status).toBe(200);
      expect((await call(reader, 'get', '/api/v1/secrets/openapi_token')).status).toBe(200);
      expect((await call(reader, 'get', '/api/v1/secrets/missing')).status).toBe(404);
      expect((await call(reader, 'post', '/api/v1/secrets', { name: 'nope', value: 'v' })).status).toBe(403);
      expect((await call(admin, 'put', '/api/v1/secrets/openapi_token', { value: 'sk_by_admin' })).status).toBe(403);
      expect(
        (await call(superAdmin, 'put', '/api/v1/secrets/openapi_token', { value: 'sk_openapi_rotated' })).status,
      ).toBe(200);
      expect(
        (
          await call(superAdmin, 'put', '/api/v1/secrets/openapi_token', {
            allowedOrigins: ['https://crm.example', 'https://crm2.example:8443'],
          })
        ).status,
      ).toBe(200);
      expect((await call(superAdmin, 'put', '/api/v1/secrets/openapi_token', { value: '' })).status).toBe(400);
      expect(
        (
          await call(superAdmin, 'post', '/api/v1/secrets', {
            name: 'openapi_other',
            value: 'v',
            allowedOrigins: ['https://crm.example/path'],
          })
        ).status,
      ).toBe(400);
      expect((await call(superAdmin, 'put', '/api/v1/secrets/missing', { value: 'v' })).status).toBe(404);
      expect((await call(superAdmin, 'delete', '/api/v1/secrets/openapi_token')).status).toBe(200);
      expect((await call(superAdmin, 'delete', '/api/v1/secrets/openapi_token')).status).toBe(404);
    });

    responseTest('bulk actions: dry run, action (202), get, list, stop', async () => {
      const created = await call(superAdmin, 'post', '/api/v1/automations', {
        displayName: 'Bulk conformance',
        trigger: { incomingWebhook: { authMethod: 'HMAC' } },
        steps: [{ id: 'hold', waitForApproval: {} }],
      });
      const automationId = created.body.automation.id;
      expect((await call(superAdmin, 'post', `/api/v1/automations/${automationId}/publish`)).status).toBe(200);
      const dry = await call(superAdmin, 'post', '/api/v1/automation_executions/bulk', {
        dryRun: true,
        reason: 'conformance',
        filter: { automationId, where: 'ctx.trigger.n > 1' },
      });
      expect([dry.status, dry.body.matched, dry.body.whereErrors]).toEqual([200, 0, 0]);
      const acted = await call(superAdmin, 'post', '/api/v1/automation_executions/bulk', {
        previewId: dry.body.previewId,
        action: 'rerun',
        reason: 'conformance',
      });
      expect(acted.status).toBe(202);
      expect((await call(admin, 'get', `/api/v1/bulk_actions/${acted.body.bulkAction.id}`)).status).toBe(200);
      expect((await call(admin, 'get', '/api/v1/bulk_actions')).status).toBe(200);
      expect(
        (
          await call(superAdmin, 'post', '/api/v1/automation_executions/bulk', {
            action: 'cancel',
            filter: { automationId },
          })
        ).status,
      ).toBe(400);
      // An action whose workflow has not reached it yet (recorded in the store): stopped, 200.
      const waiting = randomUUID();
      await insertBulkSet(
        stack.service.deps.db,
        {
          id: waiting,
          action: 'cancel',
          automationId,
          filter: { automationId },
          reason: 'conformance',
          by: 'client:conformance',
          state: 'RUNNING',
          matched: 0,
          whereErrors: 0,
          previewId: null,
        },
        [],
      );
      const stopped = await call(superAdmin, 'post', `/api/v1/bulk_actions/${waiting}/cancel`, {});
      expect([stopped.status, stopped.body.bulkAction.state]).toEqual([200, 'CANCELED']);
      expect((await call(superAdmin, 'post', '/api/v1/bulk_actions/missing/cancel', {})).status).toBe(404);
    });

    responseTest('runs across automations and the lanes of an automation', async () => {
      const all = await call(admin, 'get', '/api/v1/automation_executions?page_size=5');
      expect(all.status).toBe(200);
      expect(Array.isArray(all.body.list)).toBe(true);
      expect(
        (await call(admin, 'get', '/api/v1/automation_executions?waitingForApproval=true&status=RUNNING')).status,
      ).toBe(200);
      expect((await call(admin, 'get', '/api/v1/automation_executions?status=SLEEPING')).status).toBe(400);
      const created = await call(superAdmin, 'post', '/api/v1/automations', {
        displayName: 'Lanes conformance',
        trigger: { incomingWebhook: { authMethod: 'HMAC' } },
        concurrency: { limit: 1, key: 'ctx.trigger.user' },
        steps: [{ id: 'hold', waitForApproval: {} }],
      });
      expect(created.status).toBe(200);
      const lanes = await call(admin, 'get', `/api/v1/automations/${created.body.automation.id}/lanes`);
      expect([lanes.status, lanes.body.list]).toEqual([200, []]);
      expect((await call(admin, 'get', '/api/v1/automations/missing/lanes')).status).toBe(404);
    });

    responseTest('the audit trail: a page with events, filtered', async () => {
      const all = await call(superAdmin, 'get', '/api/v1/audit');
      expect(all.status).toBe(200);
      expect(all.body.list.length).toBeGreaterThan(0);
      expect(
        (await call(superAdmin, 'get', '/api/v1/audit?action=automation.create&since=2020-01-01T00:00:00Z')).status,
      ).toBe(200);
    });

    responseTest('error responses: 400, 401, 403, 404', async () => {
      const anonymous = callerFor(stack.service, undefined);
      expect(
        (await call(admin, 'post', `/api/v1/apps/${appId}/entitlements`, { displayName: '', durationGrant: 'soon' }))
          .status,
      ).toBe(400);
      expect((await call(admin, 'post', '/api/v1/users', { displayName: 'x', type: 'ROBOT' })).status).toBe(400);
      expect((await call(reader, 'get', '/api/v1/apps?page_token=forged')).status).toBe(400);
      expect((await call(anonymous, 'get', '/api/v1/apps')).status).toBe(401);
      expect(
        (await call(callerFor(stack.service, 'not-a-token'), 'post', '/api/v1/search/entitlements', {})).status,
      ).toBe(401);
      expect((await call(reader, 'post', '/api/v1/apps', { displayName: 'no' })).status).toBe(403);
      expect((await call(reader, 'get', '/api/v1/automations')).status).toBe(403);
      expect((await call(admin, 'get', '/api/v1/audit')).status).toBe(403);
      expect((await call(reader, 'get', '/api/v1/apps/missing')).status).toBe(404);
      expect((await call(reader, 'get', `/api/v1/apps/${appId}/entitlements/missing`)).status).toBe(404);
      expect(
        (await call(admin, 'post', `/api/v2/users/missing/owners/entitlements/owner/${appId}/${entitlementId}`)).status,
      ).toBe(404);
      expect((await call(superAdmin, 'get', '/api/v1/automations/missing')).status).toBe(404);
    });

    // Between them, the tests above covered a 200 of every JSON operation: checked once all of them
    // have run, in whatever order (when only some were selected, there is nothing to check).
    let finished = 0;
    afterEach(() => {
      finished += 1;
    });
    afterAll(() => {
      if (finished < registered) return;
      const missing: string[] = [];
      for (const [path, item] of Object.entries(doc.paths as Json)) {
        for (const [method, operation] of Object.entries(item as Json)) {
          if (!operation.responses['200'].content['application/json']?.schema) continue;
          if (!checked.has(`${method.toUpperCase()} ${path} 200`)) missing.push(`${method.toUpperCase()} ${path}`);
        }
      }
      expect(missing).toEqual([]);
    });
  });

  describe('the response schemas are strict', () => {
    let entitlement: Json;

    beforeAll(async () => {
      const appId = (await createGovernanceApp(admin, 'Strict')).id;
      entitlement = (
        await admin.get(`/api/v1/apps/${appId}/entitlements/${(await createEntitlement(admin, appId)).id}`)
      ).body;
    });

    const validate = () =>
      validatorFor(
        doc.paths['/api/v1/apps/{app_id}/entitlements/{id}'].get.responses['200'].content['application/json'].schema,
      );

    it('accepts the real body', () => {
      expect(validate()(entitlement)).toBe(true);
    });

    it.each([
      ['a missing field', (e: Json) => delete e.appEntitlement.grantCount],
      ['a mistyped field', (e: Json) => (e.appEntitlement.displayName = 5)],
      ['a number for an int64 string', (e: Json) => (e.appEntitlement.grantCount = 0)],
      ['a bad date-time', (e: Json) => (e.appEntitlement.createdAt = 'yesterday')],
      ['an undeclared field', (e: Json) => (e.appEntitlement.surprise = true)],
      ['a missing wrapper', (e: Json) => Object.assign(e, { appEntitlement: undefined, ...e.appEntitlement })],
    ])('refuses %s', (_name, mutate) => {
      const copy = structuredClone(entitlement);
      mutate(copy);
      expect(validate()(JSON.parse(JSON.stringify(copy)))).toBe(false);
    });

    it('refuses an error body without details', () => {
      const schema = doc.paths['/api/v1/apps/{app_id}'].get.responses['404'].content['application/json'].schema;
      expect(validatorFor(schema)({ code: 5, message: 'app not found', details: [] })).toBe(true);
      expect(validatorFor(schema)({ code: 5, message: 'app not found' })).toBe(false);
      expect(validatorFor(schema)({ code: '5', message: 'app not found', details: [] })).toBe(false);
    });
  });
});
