/**
 * Named outbound secrets (`/api/v1/secrets`, `secrets.<name>` in callWebhook header values), on the
 * real HTTP app and store (PGlite, and PostgreSQL when DATABASE_URL is set), then end to end on the
 * real Temporal dev server with a real worker calling a real local HTTP server: the receiver gets
 * the credential, while the run's decoded history, the execution view, the dry run, the secret
 * responses, the audit trail and every captured log line (the app's and the worker's) carry no
 * trace of it. Rotation takes effect on the next run; a deleted secret fails the step by name; a
 * target that echoes the credential (in a 401 body or a 2xx body) does not leak it.
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import request from 'supertest';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { ApplicationFailure } from '@temporalio/common';
import { createActivities } from '../../activities';
import { NO_TEMPORAL } from '../helpers/engine';
import { SecretBox, sealContext } from '../../src/crypto/secret-box';
import { createLogger } from '../../src/logger';
import { listAuditEvents } from '../../src/store/audit';
import { startTestService, type TestService } from '../helpers/test-service';
import { DATABASES, describeOn } from '../helpers/databases';
import { deliver, hmacEvent, listenerPath, startStack, type AutomationView, type Stack } from '../helpers/stack';
import { expectRunFailure, historyText as historyTextOf } from '../helpers/temporal';

/** Everything the worker's runtime logs (activity failures are logged at WARN by the SDK). */
const runtimeLines: string[] = [];
Runtime.install({
  logger: new DefaultLogger('DEBUG', (entry) =>
    runtimeLines.push(
      `${entry.level} ${entry.message} ${JSON.stringify(entry.meta ?? {}, (_key, value: unknown) => (value instanceof Error ? { ...value, message: value.message, stack: value.stack, cause: value.cause } : value))}`,
    ),
  ),
  shutdownSignals: [],
});

const newValue = (): string => `sk_live_${randomBytes(16).toString('hex')}`;

for (const target of DATABASES) {
  describeOn(target)(`outbound secrets API (${target.label})`, () => {
    let service: TestService;
    let writer: string;
    const api = () => request(service.server);

    beforeAll(async () => {
      service = await startTestService({ target });
      writer = await service.tokenFor('super_admin');
    });
    afterAll(async () => service?.close());

    it('creates, lists, reads, rotates and deletes; never answers, stores in clear or audits a value', async () => {
      const value = newValue();
      const created = await api()
        .post('/api/v1/secrets')
        .set('Authorization', `Bearer ${writer}`)
        .send({ name: 'crm_token', value, allowedOrigins: ['https://crm.example'] });
      expect(created.status).toBe(200);
      expect(created.body).toEqual({
        secret: {
          name: 'crm_token',
          allowedOrigins: ['https://crm.example'],
          createdAt: expect.any(String),
          updatedAt: expect.any(String),
        },
      });

      const duplicate = await api()
        .post('/api/v1/secrets')
        .set('Authorization', `Bearer ${writer}`)
        .send({ name: 'crm_token', value: 'other-value', allowedOrigins: ['https://crm.example'] });
      expect(duplicate.status).toBe(409);
      expect(duplicate.body).toMatchObject({ code: 6, message: expect.stringContaining('crm_token') }); // ALREADY_EXISTS

      const reader = await service.tokenFor('read_only');
      const list = await api().get('/api/v1/secrets').set('Authorization', `Bearer ${reader}`);
      expect(list.status).toBe(200);
      expect(list.body).toEqual({
        list: expect.arrayContaining([
          {
            secret: {
              name: 'crm_token',
              allowedOrigins: ['https://crm.example'],
              createdAt: expect.any(String),
              updatedAt: expect.any(String),
            },
          },
        ]),
        nextPageToken: '',
      });
      expect(
        list.body.list.every(
          (item: { secret: Record<string, unknown> }) =>
            Object.keys(item.secret).sort().join() === 'allowedOrigins,createdAt,name,updatedAt',
        ),
      ).toBe(true);
      const one = await api().get('/api/v1/secrets/crm_token').set('Authorization', `Bearer ${reader}`);
      expect(one.status).toBe(200);
      expect(one.body).toEqual(created.body);
      expect(
        (await api().post('/api/v1/secrets').set('Authorization', `Bearer ${reader}`).send({ name: 'x', value: 'y' }))
          .status,
      ).toBe(403);
      expect(
        (await api().put('/api/v1/secrets/crm_token').set('Authorization', `Bearer ${reader}`).send({ value: 'y' }))
          .status,
      ).toBe(403);
      expect((await api().delete('/api/v1/secrets/crm_token').set('Authorization', `Bearer ${reader}`)).status).toBe(
        403,
      );

      // Sealed at rest with the service's secret box.
      const rows = await service.deps.db.query<{ sealed_value: string }>(
        "SELECT sealed_value FROM outbound_secrets WHERE name = 'crm_token'",
      );
      expect(rows[0]!.sealed_value.startsWith('v2.')).toBe(true);
      expect(rows[0]!.sealed_value).not.toContain(value);
      expect(service.deps.secretBox.open(rows[0]!.sealed_value, sealContext('outbound_secret', 'crm_token'))).toBe(
        value,
      );

      const rotatedValue = newValue();
      const rotated = await api()
        .put('/api/v1/secrets/crm_token')
        .set('Authorization', `Bearer ${writer}`)
        .send({ value: rotatedValue });
      expect(rotated.status).toBe(200);
      expect(rotated.body.secret.name).toBe('crm_token');
      // Created stays, updated moves on (many requests lie between the two: never the same millisecond).
      expect(rotated.body.secret.createdAt).toBe(created.body.secret.createdAt);
      expect(Date.parse(rotated.body.secret.updatedAt)).toBeGreaterThan(Date.parse(created.body.secret.updatedAt));
      expect(Date.parse(rotated.body.previousValueExpiresAt)).toBeGreaterThan(Date.now());
      const after = await service.deps.db.query<{ sealed_value: string; previous_sealed_value: string }>(
        "SELECT sealed_value, previous_sealed_value FROM outbound_secrets WHERE name = 'crm_token'",
      );
      expect(service.deps.secretBox.open(after[0]!.sealed_value, sealContext('outbound_secret', 'crm_token'))).toBe(
        rotatedValue,
      );
      expect(
        service.deps.secretBox.open(after[0]!.previous_sealed_value, sealContext('outbound_secret', 'crm_token')),
      ).toBe(value);
      // All three fields at once: a new value with its grace period and new origins, in one change.
      const both = await api()
        .put('/api/v1/secrets/crm_token')
        .set('Authorization', `Bearer ${writer}`)
        .send({ value: newValue(), gracePeriod: '0s', allowedOrigins: ['https://crm2.example'] });
      expect([both.status, both.body.secret.allowedOrigins, both.body.previousValueExpiresAt]).toEqual([
        200,
        ['https://crm2.example'],
        null,
      ]);
      // Origins only: the value is not changed, so nothing is kept for signatures.
      const rebound = await api()
        .put('/api/v1/secrets/crm_token')
        .set('Authorization', `Bearer ${writer}`)
        .send({ allowedOrigins: ['https://crm.example'] });
      expect([rebound.status, rebound.body.secret.allowedOrigins, rebound.body.previousValueExpiresAt]).toEqual([
        200,
        ['https://crm.example'],
        null,
      ]);

      expect((await api().delete('/api/v1/secrets/crm_token').set('Authorization', `Bearer ${writer}`)).status).toBe(
        200,
      );
      expect((await api().get('/api/v1/secrets/crm_token').set('Authorization', `Bearer ${writer}`)).status).toBe(404);
      expect((await api().delete('/api/v1/secrets/crm_token').set('Authorization', `Bearer ${writer}`)).status).toBe(
        404,
      );
      expect(
        (await api().put('/api/v1/secrets/crm_token').set('Authorization', `Bearer ${writer}`).send({ value: 'v' }))
          .status,
      ).toBe(404);

      const audit = await listAuditEvents(service.deps.db, 'outbound_secret', 'crm_token');
      expect(audit.map((event) => event.action)).toEqual([
        'outbound_secret.create',
        'outbound_secret.rotate',
        'outbound_secret.set_origins',
        'outbound_secret.rotate',
        'outbound_secret.set_origins',
        'outbound_secret.delete',
      ]);
      expect(audit.every((event) => event.actor.startsWith('client:'))).toBe(true);
      const everything = JSON.stringify([created.body, duplicate.body, list.body, one.body, rotated.body, audit]);
      expect(everything).not.toContain(value);
      expect(everything).not.toContain(rotatedValue);
    });

    it("lets admin read a secret's metadata but not create, replace (value or origins) or delete it: 403, nothing changed", async () => {
      const adminToken = await service.tokenFor('admin');
      const as = (token: string, req: request.Test) => req.set('Authorization', `Bearer ${token}`);
      const value = newValue();
      await as(writer, api().post('/api/v1/secrets'))
        .send({ name: 'bound_hook', value, allowedOrigins: ['https://crm.example'] })
        .expect(200);
      const before = await service.deps.db.query<{ row: string }>(
        "SELECT row_to_json(s)::text AS row FROM outbound_secrets s WHERE name = 'bound_hook'",
      );
      const refusals = [
        await as(adminToken, api().post('/api/v1/secrets')).send({
          name: 'admin_made',
          value: newValue(),
          allowedOrigins: ['https://evil.example'],
        }),
        await as(adminToken, api().put('/api/v1/secrets/bound_hook')).send({
          allowedOrigins: ['https://crm.example', 'https://evil.example'],
        }),
        await as(adminToken, api().put('/api/v1/secrets/bound_hook')).send({ value: newValue() }),
        await as(adminToken, api().delete('/api/v1/secrets/bound_hook')),
      ];
      expect(refusals.map((res) => [res.status, res.body.code])).toEqual([
        [403, 7],
        [403, 7],
        [403, 7],
        [403, 7],
      ]);
      const after = await service.deps.db.query<{ row: string }>(
        "SELECT row_to_json(s)::text AS row FROM outbound_secrets s WHERE name = 'bound_hook'",
      );
      expect(after).toEqual(before);
      expect(await service.deps.db.query("SELECT name FROM outbound_secrets WHERE name = 'admin_made'")).toEqual([]);
      expect(
        (await listAuditEvents(service.deps.db, 'outbound_secret', 'bound_hook')).map((event) => event.action),
      ).toEqual(['outbound_secret.create']);
      const read = await as(adminToken, api().get('/api/v1/secrets/bound_hook'));
      expect(read.status).toBe(200);
      expect(read.body.secret.allowedOrigins).toEqual(['https://crm.example']);
      expect((await as(adminToken, api().get('/api/v1/secrets'))).status).toBe(200);
    });

    it('answers every bad input with a 400 naming the field, in the one error shape, without echoing the value', async () => {
      const bad = async (
        body: unknown,
        field: string,
        method: 'post' | 'put' = 'post',
        path = '/api/v1/secrets',
      ): Promise<void> => {
        const request = api();
        const res = await request[method](path)
          .set('Authorization', `Bearer ${writer}`)
          .send(body as object);
        expect([JSON.stringify(body).slice(0, 80), res.status]).toEqual([JSON.stringify(body).slice(0, 80), 400]);
        expect(Object.keys(res.body).sort()).toEqual(['code', 'details', 'message']);
        expect(JSON.stringify(res.body)).toContain(field);
        if (typeof (body as { value?: unknown }).value === 'string' && (body as { value: string }).value.length > 3) {
          expect(JSON.stringify(res.body)).not.toContain((body as { value: string }).value);
        }
      };
      await bad({ value: 'v', allowedOrigins: ['https://crm.example'] }, 'name');
      for (const name of ['Crm', '1abc', 'a-b', 'a'.repeat(64), '', 7, null, 'in', 'null'])
        await bad({ name, value: 'v', allowedOrigins: ['https://crm.example'] }, 'name');
      await bad({ name: 'ok_name' }, 'value');
      await bad({ name: 'ok_name', value: '' }, 'value');
      await bad({ name: 'ok_name', value: 42 }, 'value');
      await bad({ name: 'ok_name', value: 'x'.repeat(4097) }, 'value');
      await bad({ name: 'ok_name', value: 'line-one\r\nInjected: yes' }, 'value');
      await bad({ name: 'ok_name', value: 'v', extra: true, allowedOrigins: ['https://crm.example'] }, 'extra');
      // allowedOrigins: required, 1..20 exact origins scheme://host[:port].
      await bad({ name: 'ok_name', value: 'v' }, 'allowedOrigins');
      const many = Array.from({ length: 21 }, (_, i) => `https://h${i}.example`);
      for (const origins of [
        [],
        'https://crm.example',
        many,
        null,
        [7],
        [''],
        ['ftp://crm.example'],
        ['https://crm.example/path'],
        ['https://*.example'],
        ['https://user:pw@crm.example'],
        ['https://crm.example?x=1'],
        ['https://crm.example#f'],
        ['crm.example'],
        ['https://crm.example, https://b.example'],
      ]) {
        await bad({ name: 'ok_name', value: 'v', allowedOrigins: origins }, 'allowedOrigins');
      }
      expect(
        (
          await api()
            .post('/api/v1/secrets')
            .set('Authorization', `Bearer ${writer}`)
            .send({ name: 'ok_name', value: 'x'.repeat(4096), allowedOrigins: ['https://crm.example'] })
        ).status,
      ).toBe(200);
      await bad({ value: 'bad\nvalue' }, 'value', 'put', '/api/v1/secrets/ok_name');
      await bad({}, 'value', 'put', '/api/v1/secrets/ok_name');
      await bad({ allowedOrigins: [] }, 'allowedOrigins', 'put', '/api/v1/secrets/ok_name');
      await bad(
        { value: 'v', allowedOrigins: ['https://crm.example/x'] },
        'allowedOrigins',
        'put',
        '/api/v1/secrets/ok_name',
      );
      await bad({ value: 'v', name: 'other' }, 'name', 'put', '/api/v1/secrets/ok_name');
      // gracePeriod belongs to a new value: alone, or with allowedOrigins only, it is a 400.
      await bad({ gracePeriod: '60s' }, 'gracePeriod', 'put', '/api/v1/secrets/ok_name');
      await bad(
        { gracePeriod: '60s', allowedOrigins: ['https://crm.example'] },
        'gracePeriod',
        'put',
        '/api/v1/secrets/ok_name',
      );
      await bad({ value: 'v', gracePeriod: '604801s' }, 'gracePeriod', 'put', '/api/v1/secrets/ok_name');
      expect((await api().get('/api/v1/secrets/NOT-A-NAME').set('Authorization', `Bearer ${writer}`)).status).toBe(404);
      // Nothing half-written: of all these requests, only the one good create left a row.
      const names = await service.deps.db.query<{ name: string }>(
        "SELECT name FROM outbound_secrets WHERE name IN ('ok_name', 'crm', 'a_b', 'other') ORDER BY name",
      );
      expect(names.map((row) => row.name)).toEqual(['ok_name']);
    });

    it('allows secrets.<name> only in callWebhook header values, without ctx, and only for secrets that exist (save and publish)', async () => {
      const superToken = await service.tokenFor('super_admin');
      await api()
        .post('/api/v1/secrets')
        .set('Authorization', `Bearer ${writer}`)
        .send({ name: 'hook_key', value: newValue(), allowedOrigins: ['https://hooks.example'] })
        .expect(200);
      const save = (steps: unknown[]) =>
        api()
          .post('/api/v1/automations')
          .set('Authorization', `Bearer ${superToken}`)
          .send({ displayName: 'secrets', trigger: { incomingWebhook: { authMethod: 'HMAC' } }, steps });
      const hook = (headers: Record<string, string>, extra: Record<string, unknown> = {}) => ({
        url: "'https://hooks.example/x'",
        body: {},
        headers,
        ...extra,
      });
      const violation = async (steps: unknown[], field: string, text: string): Promise<void> => {
        const res = await save(steps);
        expect(res.status).toBe(400);
        expect(res.body.details).toEqual(
          expect.arrayContaining([
            expect.objectContaining({
              fieldViolations: expect.arrayContaining([
                expect.objectContaining({ field, description: expect.stringContaining(text) }),
              ]),
            }),
          ]),
        );
      };
      await violation(
        [{ id: 'h', callWebhook: hook({ Authorization: "'Bearer ' + secrets.no_such" }) }],
        'steps[0].callWebhook.headers.Authorization',
        'secret "no_such" does not exist',
      );
      await violation(
        [{ id: 'h', callWebhook: hook({ Authorization: 'ctx.trigger.k + secrets.hook_key' }) }],
        'steps[0].callWebhook.headers.Authorization',
        'may not read ctx',
      );
      await violation(
        [{ id: 'h', callWebhook: hook({ Authorization: 'secrets' }) }],
        'steps[0].callWebhook.headers.Authorization',
        'secrets.<name>',
      );
      await violation(
        [{ id: 'h', callWebhook: { url: "'https://hooks.example/' + secrets.hook_key", body: {} } }],
        'steps[0].callWebhook.url',
        'only in callWebhook header values',
      );
      await violation(
        [{ id: 'h', callWebhook: { url: "'https://hooks.example/'", body: { k: 'secrets.hook_key' } } }],
        'steps[0].callWebhook.body.k',
        'only in callWebhook header values',
      );
      await violation(
        [{ id: 'v', setVariables: { k: 'secrets.hook_key' } }],
        'steps[0].setVariables.k',
        'only in callWebhook header values',
      );
      await violation(
        [{ id: 'h', when: "secrets.hook_key == ''", callWebhook: hook({}) }],
        'steps[0].when',
        'only in callWebhook header values',
      );

      const good = await save([
        { id: 'h', callWebhook: hook({ Authorization: "'Bearer ' + secrets.hook_key", 'X-Plain': "'not secret'" }) },
      ]);
      expect(good.status).toBe(200);
      // Deleted before publish: the publish is refused and nothing is published.
      await api().delete('/api/v1/secrets/hook_key').set('Authorization', `Bearer ${writer}`).expect(200);
      const publish = await api()
        .post(`/api/v1/automations/${good.body.automation.id}/publish`)
        .set('Authorization', `Bearer ${superToken}`);
      expect(publish.status).toBe(400);
      expect(JSON.stringify(publish.body)).toContain('secret \\"hook_key\\" does not exist');
      const stored = await api()
        .get(`/api/v1/automations/${good.body.automation.id}`)
        .set('Authorization', `Bearer ${superToken}`);
      expect(stored.body.automation).toMatchObject({ published: false, publishedVersion: null });
    });
  });
}

describe('outbound secrets in a real run', () => {
  let stack: Stack;
  let receiver: http.Server;
  let origin: string;
  const received: Array<{ url: string; authorization: string | undefined; plain: string | undefined }> = [];
  const appLines: string[] = [];

  beforeAll(async () => {
    receiver = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        const authorization = req.headers.authorization;
        received.push({ url: req.url ?? '', authorization, plain: req.headers['x-plain'] as string | undefined });
        if (req.url?.startsWith('/deny')) {
          // A target that echoes the credential back in its refusal.
          res.writeHead(401, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ error: 'bad token', got: authorization }));
          return;
        }
        res.writeHead(200, { 'content-type': 'application/json', 'x-request-id': authorization ?? '' });
        res.end(JSON.stringify({ ok: true, echo: authorization }));
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    origin = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        appLines.push(chunk.toString());
        done();
      },
    });
    stack = await startStack({ logger: createLogger('trace', sink) });
  });
  afterAll(async () => {
    await stack?.close();
    await new Promise<void>((resolve) => receiver?.close(() => resolve()));
  });

  const api = () => request(stack.service.server);
  const auth = (req: request.Test) => req.set('Authorization', `Bearer ${stack.adminToken}`);

  async function run(automation: AutomationView, secret: string, payload: unknown): Promise<string> {
    const res = await deliver(stack, listenerPath(automation), hmacEvent(secret, payload));
    expect(res.status).toBe(200);
    return res.body.executionId as string;
  }

  const historyText = (executionId: string): Promise<string> => historyTextOf(stack.client, executionId);

  it('sends the credential to the target only: not in the history, the execution, the dry run, the responses, the audit or the logs', async () => {
    const first = newValue();
    const second = newValue();
    const created = await auth(api().post('/api/v1/secrets')).send({
      name: 'crm_token',
      value: first,
      allowedOrigins: [origin],
    });
    expect(created.status).toBe(200);

    const steps = (path: string) => [
      {
        id: 'notify',
        retry: { maximumAttempts: 1 },
        callWebhook: {
          url: `'${origin}${path}?who=' + ctx.trigger.who`,
          body: { who: 'ctx.trigger.who' },
          headers: { Authorization: "'Bearer ' + secrets.crm_token", 'X-Plain': "'plain-' + ctx.trigger.who" },
        },
      },
    ];
    const ok = await stack.createAutomation({
      displayName: 'crm',
      trigger: { incomingWebhook: { authMethod: 'HMAC' } },
      steps: steps('/hook'),
    });
    const deny = await stack.createAutomation({
      displayName: 'crm deny',
      trigger: { incomingWebhook: { authMethod: 'HMAC' } },
      steps: steps('/deny'),
    });

    // 1. The receiver gets the credential; the run's records do not.
    const run1 = await run(ok.automation, ok.signingSecret!, { who: 'ada' });
    const result1 = await stack.client.workflow.getHandle(run1).result();
    expect(received.at(-1)).toEqual({ url: '/hook?who=ada', authorization: `Bearer ${first}`, plain: 'plain-ada' });
    const history1 = await historyText(run1);
    expect(history1).toContain('secrets.crm_token'); // the source is there: the history is decoded and searched
    expect(history1).toContain('plain-ada');
    expect(history1).not.toContain(first);
    // A 2xx response that echoes the credential becomes an output without it.
    expect(JSON.stringify(result1)).not.toContain(first);
    expect(JSON.stringify(result1)).toContain('"echo":"[secret]"');
    const execution1 = await auth(api().get(`/api/v1/automation_executions/${encodeURIComponent(run1)}`));
    expect(execution1.status).toBe(200);
    expect(execution1.body.execution.status).toBe('COMPLETED');
    expect(JSON.stringify(execution1.body)).not.toContain(first);

    // 2. The dry run shows a placeholder.
    const dry = await auth(api().post(`/api/v1/automations/${ok.automation.id}/test`)).send({
      payload: { who: 'ada' },
    });
    expect(dry.status).toBe(200);
    expect(dry.body.steps[0]).toMatchObject({
      status: 'WOULD_RUN',
      output: { headers: { Authorization: 'Bearer [secret crm_token]', 'X-Plain': 'plain-ada' } },
    });
    expect(JSON.stringify(dry.body)).not.toContain(first);

    // 3. Rotation: the next run sends the new value.
    const rotated = await auth(api().put('/api/v1/secrets/crm_token')).send({ value: second });
    expect(rotated.status).toBe(200);
    const run2 = await run(ok.automation, ok.signingSecret!, { who: 'bob' });
    await stack.client.workflow.getHandle(run2).result();
    expect(received.at(-1)).toEqual({ url: '/hook?who=bob', authorization: `Bearer ${second}`, plain: 'plain-bob' });
    const history2 = await historyText(run2);
    expect(history2).not.toContain(second);
    expect(history2).not.toContain(first);

    // 4. A target that echoes the credential in a 401: the failure shows the origin and status only.
    const run3 = await run(deny.automation, deny.signingSecret!, { who: 'eve' });
    const failure = await expectRunFailure(stack.client.workflow.getHandle(run3));
    expect(received.at(-1)).toMatchObject({ url: '/deny?who=eve', authorization: `Bearer ${second}` });
    expect(failure.message).toBe(`step "notify" failed: callWebhook: POST ${origin} answered HTTP 401`);
    const history3 = await historyText(run3);
    expect(history3).not.toContain(second);
    const execution3 = await auth(api().get(`/api/v1/automation_executions/${encodeURIComponent(run3)}`));
    expect(execution3.body.execution.steps[0]).toMatchObject({
      status: 'FAILED',
      error: `callWebhook: POST ${origin} answered HTTP 401`,
    });
    expect(JSON.stringify(execution3.body)).not.toContain(second);

    // 5. Deleted after publish: the step fails without retrying, naming the secret.
    await auth(api().delete('/api/v1/secrets/crm_token')).expect(200);
    const before = received.length;
    const run4 = await run(ok.automation, ok.signingSecret!, { who: 'zed' });
    const gone = await expectRunFailure(stack.client.workflow.getHandle(run4));
    expect(gone.message).toBe(
      'step "notify" failed: callWebhook: headers.Authorization: secret "crm_token" does not exist (deleted after the automation was published?)',
    );
    expect(received.length).toBe(before);
    const dryGone = await auth(api().post(`/api/v1/automations/${ok.automation.id}/test`)).send({
      payload: { who: 'zed' },
    });
    expect(dryGone.body.steps[0]).toMatchObject({
      status: 'ERROR',
      error: 'callWebhook.headers.Authorization: secret "crm_token" does not exist',
    });

    // Nowhere else either: the API's answers about the secret, its audit trail, every log line.
    const audit = await listAuditEvents(stack.service.deps.db, 'outbound_secret', 'crm_token');
    expect(audit.map((event) => event.action)).toEqual([
      'outbound_secret.create',
      'outbound_secret.rotate',
      'outbound_secret.delete',
    ]);
    const logs = [...appLines, ...runtimeLines].join('\n');
    expect(runtimeLines.some((line) => line.includes('answered HTTP 401'))).toBe(true); // the SDK logged the failure
    for (const value of [first, second]) {
      expect(JSON.stringify([created.body, rotated.body, audit])).not.toContain(value);
      expect(logs).not.toContain(value);
    }
  });

  it('a worker that cannot open the secret fails the attempt retryably; a missing secret fails it for good; neither sends anything', async () => {
    const value = newValue();
    await auth(api().post('/api/v1/secrets'))
      .send({ name: 'worker_key', value, allowedOrigins: [origin] })
      .expect(200);
    // Called directly, outside a run: the run whose call keys it sends is given (keysOf).
    const keysOf = { workflowId: 'direct-call', runId: 'run-1' };
    const input = {
      stepId: 'notify',
      url: `${origin}/hook`,
      body: {},
      headers: {},
      secretHeaders: { Authorization: "'Bearer ' + secrets.worker_key" },
      timeoutMs: 5000,
      keysOf,
    };
    const failureOf = async (run: () => Promise<unknown>): Promise<ApplicationFailure> => {
      const err = await run().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(ApplicationFailure);
      return err as ApplicationFailure;
    };
    const before = received.length;
    const db = stack.service.deps.db;
    const otherKey = await failureOf(() =>
      createActivities({
        db,
        allowPrivateOutbound: true,
        secretBox: new SecretBox(randomBytes(32)),
        engine: NO_TEMPORAL,
      }).callWebhook(input),
    );
    expect([otherKey.type, otherKey.nonRetryable]).toEqual(['CallWebhookSecretUnavailable', false]);
    expect(otherKey.message).toBe(
      `callWebhook: headers.Authorization: secret "worker_key" cannot be opened with this worker's SECRET_KEY (is it the API's?)`,
    );
    const noKey = await failureOf(() =>
      createActivities({ db, allowPrivateOutbound: true, engine: NO_TEMPORAL }).callWebhook(input),
    );
    expect([noKey.type, noKey.nonRetryable]).toEqual(['CallWebhookSecretUnavailable', false]);
    const right = createActivities({
      db,
      allowPrivateOutbound: true,
      secretBox: stack.service.deps.secretBox,
      engine: NO_TEMPORAL,
    });
    const missing = await failureOf(() =>
      right.callWebhook({ ...input, secretHeaders: { Authorization: 'secrets.nobody' } }),
    );
    expect([missing.type, missing.nonRetryable]).toEqual(['CallWebhookSecretMissing', true]);
    const notString = await failureOf(() =>
      right.callWebhook({ ...input, secretHeaders: { Authorization: 'secrets.worker_key.size()' } }),
    );
    expect(notString.message).toMatch(
      /^callWebhook: headers\.Authorization: a header value that reads secrets is secrets\.<name> and string literals joined by \+.*found a call to size\(\)/,
    );
    expect(received.length).toBe(before);
    expect(await right.callWebhook(input)).toMatchObject({ status: 200, body: { ok: true, echo: '[secret]' } });
    expect(received.at(-1)?.authorization).toBe(`Bearer ${value}`);
  });
});
