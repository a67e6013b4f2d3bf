/**
 * `POST /api/v1/automations/{id}/test` over the real HTTP app and a real store: per-step results
 * over a sample payload, and no effects: the ownership table is unchanged, the callWebhook target
 * receives nothing, a one-hour wait does not wait.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { startTestService, type TestService } from '../helpers/test-service';

describe('automation dry run', () => {
  let service: TestService;
  let token: string;
  let hookServer: http.Server;
  let hookUrl: string;
  let hookRequests = 0;

  beforeAll(async () => {
    service = await startTestService();
    token = await service.tokenFor('super_admin');
    const db = service.deps.db;
    await db.query(`INSERT INTO users (id, display_name, type) VALUES ('svc-1', 'Robot', 'USER_TYPE_SERVICE')`);
    await db.query(`INSERT INTO apps (id, display_name) VALUES ('app-1', 'App one')`);
    await db.query(
      `INSERT INTO app_entitlements (id, app_id, display_name, slug, record) VALUES ('ent-1', 'app-1', 'Admin', 'admin', '{}'::jsonb)`,
    );
    hookServer = http.createServer((_req, res) => {
      hookRequests += 1;
      res.end('{}');
    });
    await new Promise<void>((resolve) => hookServer.listen(0, '127.0.0.1', resolve));
    hookUrl = `http://127.0.0.1:${(hookServer.address() as AddressInfo).port}/hook`;
  });

  afterAll(async () => {
    await new Promise<void>((resolve) => hookServer?.close(() => resolve()));
    await service?.close();
  });

  const api = () => request(service.server);

  async function createAutomation(steps: unknown[]): Promise<string> {
    const res = await api()
      .post('/api/v1/automations')
      .set('Authorization', `Bearer ${token}`)
      .send({ displayName: 'Dry run', trigger: { incomingWebhook: { authMethod: 'HMAC' } }, steps });
    expect(res.status).toBe(200);
    return res.body.automation.id;
  }

  function dryRun(id: string, body: unknown, bearer = token) {
    return api()
      .post(`/api/v1/automations/${id}/test`)
      .set('Authorization', `Bearer ${bearer}`)
      .send(body as object);
  }

  async function owners(): Promise<unknown[]> {
    return service.deps.db.query('SELECT user_id, role_slug, app_id, entitlement_id FROM entitlement_owners');
  }

  it('answers per-step results in order, later steps seeing earlier outputs, without any effect', async () => {
    const id = await createAutomation([
      { id: 'vars', setVariables: { who: 'ctx.trigger.service_account', kind: 'ctx.trigger["kind"]' } },
      {
        id: 'own',
        when: "ctx.steps.vars.kind == 'hire'",
        createEntitlementOwner: {
          userId: 'ctx.steps.vars.who',
          roleSlug: "'owner'",
          appId: "'app-1'",
          entitlementId: 'ctx.trigger.entitlement',
        },
      },
      {
        id: 'notify',
        callWebhook: {
          url: `'${hookUrl}?u=' + ctx.steps.own.userId`,
          body: { user: 'ctx.steps.own.userId', note: '"granted " + ctx.steps.own.entitlementId' },
          headers: { 'X-Kind': 'ctx.steps.vars.kind' },
        },
      },
      { id: 'pause', wait: { duration: '3600s' } },
      {
        id: 'offboard',
        when: "ctx.steps.vars.kind == 'fire'",
        deleteEntitlementOwner: {
          userId: 'ctx.steps.vars.who',
          roleSlug: "'owner'",
          appId: "'app-1'",
          entitlementId: 'ctx.trigger.entitlement',
        },
      },
      { id: 'stop', when: '!has(ctx.trigger.approved)', fail: { message: '"not approved: " + ctx.steps.vars.who' } },
      {
        id: 'undo',
        deleteEntitlementOwner: {
          userId: 'ctx.steps.own.userId',
          roleSlug: "'owner'",
          appId: "'app-1'",
          entitlementId: "'ent-1'",
        },
      },
    ]);
    const before = await owners();
    const res = await dryRun(id, { payload: { kind: 'hire', service_account: 'svc-1', entitlement: 'ent-1' } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      flowControl: { filter: null, concurrency: null, rateLimit: null },
      steps: [
        { id: 'vars', kind: 'setVariables', status: 'WOULD_RUN', output: { who: 'svc-1', kind: 'hire' }, error: null },
        {
          id: 'own',
          kind: 'createEntitlementOwner',
          status: 'WOULD_RUN',
          output: { userId: 'svc-1', roleSlug: 'owner', appId: 'app-1', entitlementId: 'ent-1' },
          error: null,
        },
        {
          id: 'notify',
          kind: 'callWebhook',
          status: 'WOULD_RUN',
          output: {
            url: `${hookUrl}?u=svc-1`,
            body: { user: 'svc-1', note: 'granted ent-1' },
            headers: { 'X-Kind': 'hire', 'Idempotency-Key': '[per run]', 'webhook-id': '[per run]' },
          },
          error: null,
        },
        { id: 'pause', kind: 'wait', status: 'WOULD_RUN', output: { duration: '3600s' }, error: null },
        { id: 'offboard', kind: 'deleteEntitlementOwner', status: 'SKIPPED', output: null, error: null },
        { id: 'stop', kind: 'fail', status: 'WOULD_RUN', output: { message: 'not approved: svc-1' }, error: null },
        { id: 'undo', kind: 'deleteEntitlementOwner', status: 'NOT_REACHED', output: null, error: null },
      ],
    });
    expect(await owners()).toEqual(before);
    expect(before).toEqual([]);
    expect(hookRequests).toBe(0);

    const approved = await dryRun(id, {
      payload: { kind: 'hire', service_account: 'svc-1', entitlement: 'ent-1', approved: true },
    });
    expect(approved.body.steps.map((s: { status: string }) => s.status)).toEqual([
      'WOULD_RUN',
      'WOULD_RUN',
      'WOULD_RUN',
      'WOULD_RUN',
      'SKIPPED',
      'SKIPPED',
      'WOULD_RUN',
    ]);
    expect(await owners()).toEqual([]);
    expect(hookRequests).toBe(0);
  });

  it('reports a step that would fail as ERROR, with the reason, and the rest as NOT_REACHED', async () => {
    const id = await createAutomation([
      { id: 'vars', setVariables: { who: 'ctx.trigger.user' } },
      {
        id: 'own',
        createEntitlementOwner: {
          userId: 'ctx.trigger.count',
          roleSlug: "'owner'",
          appId: "'app-1'",
          entitlementId: "'ent-1'",
        },
      },
      { id: 'after', setVariables: { x: '1' } },
    ]);
    const missing = await dryRun(id, { payload: { count: 3 } });
    expect(missing.status).toBe(200);
    expect(missing.body.steps[0]).toMatchObject({ id: 'vars', status: 'ERROR', output: null });
    expect(missing.body.steps[0].error).toMatch(/^who: .*user/);
    expect(missing.body.steps.slice(1).map((s: { status: string }) => s.status)).toEqual([
      'NOT_REACHED',
      'NOT_REACHED',
    ]);

    const wrongType = await dryRun(id, { payload: { user: 'u', count: 3 } });
    expect(wrongType.body.steps.map((s: { status: string; error: string | null }) => [s.status, s.error])).toEqual([
      ['WOULD_RUN', null],
      ['ERROR', 'createEntitlementOwner.userId: must evaluate to a non-empty string, got number 3'],
      ['NOT_REACHED', null],
    ]);
    expect(await owners()).toEqual([]);
  });

  it('fails a hostile expression with a clear error and answers promptly for the other steps', async () => {
    const id = await createAutomation([
      { id: 'huge', setVariables: { v: 'ctx.trigger.l.map(x, ctx.trigger.l.map(y, x + y)).size()' } },
    ]);
    const res = await dryRun(id, { payload: { l: Array.from({ length: 5000 }, (_, i) => i) } });
    expect(res.status).toBe(200);
    // The iteration budget stops it; on a starved machine the 1 s evaluation limit may come first.
    // Both bound it (the budget alone, untimed, is tested in test/unit/cel.test.ts).
    expect(res.body.steps[0].status).toBe('ERROR');
    expect([
      'v: comprehensions iterate more than 10000 times',
      'v: evaluation exceeded the time limit of 1000 ms',
    ]).toContain(res.body.steps[0].error);
  });

  it('refuses callWebhook URLs the worker would refuse when insecure outbound is off', async () => {
    const strict = await startTestService({ env: { ALLOW_PRIVATE_OUTBOUND: 'false' } });
    try {
      const strictToken = await strict.tokenFor('super_admin');
      const created = await request(strict.server)
        .post('/api/v1/automations')
        .set('Authorization', `Bearer ${strictToken}`)
        .send({
          displayName: 'strict',
          trigger: { incomingWebhook: { authMethod: 'HMAC' } },
          steps: [{ id: 'hook', callWebhook: { url: `'${hookUrl}'`, body: {} } }],
        });
      expect(created.status).toBe(200);
      const res = await request(strict.server)
        .post(`/api/v1/automations/${created.body.automation.id}/test`)
        .set('Authorization', `Bearer ${strictToken}`)
        .send({ payload: {} });
      expect(res.body.steps[0]).toMatchObject({ status: 'ERROR', error: 'callWebhook.url: URL must use https' });
    } finally {
      await strict.close();
    }
    expect(hookRequests).toBe(0);
  });

  it('tests the draft sent as `automation` instead of the saved one, saving nothing; a bad draft is a 400 naming its field', async () => {
    const id = await createAutomation([{ id: 'greet', log: { message: 'string(ctx.trigger)' } }]);
    const saved = await dryRun(id, { payload: { n: 1 } });
    expect(saved.body.steps[0]).toMatchObject({
      status: 'ERROR',
      error: expect.stringMatching(/no matching overload/),
    });
    const fixed = {
      steps: [{ id: 'greet', log: { message: "'got ' + string(size(ctx.trigger))" } }],
      filter: 'ctx.trigger.n > 5',
    };
    const draft = await dryRun(id, { payload: { n: 1 }, automation: fixed });
    expect(draft.status).toBe(200);
    expect(draft.body.steps).toEqual([
      { id: 'greet', kind: 'log', status: 'WOULD_RUN', output: { level: 'info', message: 'got 1' }, error: null },
    ]);
    expect(draft.body.flowControl.filter).toEqual({ matches: false, error: null });
    // Only steps sent: the saved flow control; nothing was saved.
    expect(
      (await dryRun(id, { payload: { n: 1 }, automation: { steps: fixed.steps } })).body.flowControl.filter,
    ).toBeNull();
    const stored = await api().get(`/api/v1/automations/${id}`).set('Authorization', `Bearer ${token}`);
    expect(stored.body.automation.steps).toEqual([{ id: 'greet', log: { message: 'string(ctx.trigger)' } }]);
    expect(stored.body.automation.filter ?? null).toBeNull();

    const bad = await dryRun(id, { payload: {}, automation: { steps: [{ id: 'greet', logg: {} }], colour: 'red' } });
    expect(bad.status).toBe(400);
    expect(bad.body.details[0].fieldViolations.map((v: { field: string }) => v.field).sort()).toEqual([
      'automation.colour',
      'steps[0].logg',
    ]);
    expect((await dryRun(id, { payload: {}, automation: [] })).status).toBe(400);
  });

  it('400 without a payload or with one larger than a webhook body; 404 for an unknown automation; super_admin only', async () => {
    const id = await createAutomation([{ id: 'vars', setVariables: { x: 'ctx.trigger' } }]);
    const missing = await dryRun(id, {});
    expect(missing.status).toBe(400);
    expect(missing.body.details[0].fieldViolations[0].field).toBe('payload');
    const big = await dryRun(id, { payload: { pad: 'x'.repeat(70_000) } });
    expect(big.status).toBe(400);
    expect(big.body.message).toMatch(/^payload: must be at most 65536 bytes/);
    const nullPayload = await dryRun(id, { payload: null });
    expect(nullPayload.status).toBe(200);
    expect(nullPayload.body.steps[0]).toMatchObject({ status: 'WOULD_RUN', output: { x: null } });

    expect((await dryRun('0190f7a0-0000-7000-8000-000000000000', { payload: {} })).status).toBe(404);
    expect((await dryRun(id, { payload: {} }, await service.tokenFor('admin'))).status).toBe(403);
    expect((await api().post(`/api/v1/automations/${id}/test`).send({ payload: {} })).status).toBe(401);
  });
});
