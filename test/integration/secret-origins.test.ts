/**
 * A secret goes only where it is bound (issue 23, findings 1-3), on the real HTTP app and store
 * (PGlite, and PostgreSQL when DATABASE_URL is set), then on the real Temporal dev server with a
 * real worker calling real local HTTP servers:
 *
 * - `allowedOrigins`: normalised on create, changed with PUT, shown in the metadata;
 * - save and publish refuse a step whose fixed-origin URL a secret does not allow (400 naming the
 *   secret and the origin), and a secret-reading header outside the closed grammar (substring,
 *   conditional, ...: 400 naming the header);
 * - a URL the delivery chooses (`ctx.trigger.cb`) that points elsewhere receives nothing: the step
 *   fails at its first attempt, without retry;
 * - the URL is checked before any secret is looked at, and no error depends on a secret's value:
 *   the two oracle probes give identical errors, on save and in the activity;
 * - the migration gives existing secrets the origins of the constant URLs that read them, and none
 *   to a secret read only through expression URLs (which then sends nothing);
 * - the secret that signs a step (`signature.secret`) is bound the same way: refused on save for a
 *   constant URL outside its origins, and for a URL the sender chose nothing is sent.
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { ApplicationFailure } from '@temporalio/common';
import { createActivities } from '../../activities';
import { NO_TEMPORAL } from '../helpers/engine';
import { sealContext } from '../../src/crypto/secret-box';
import { listAuditEvents } from '../../src/store/audit';
import { migrate } from '../../src/store/migrations';
import { startTestService, type TestService } from '../helpers/test-service';
import { DATABASES, describeOn } from '../helpers/databases';
import { deliver, hmacEvent, listenerPath, startStack, type Stack } from '../helpers/stack';
import { expectRunFailure } from '../helpers/temporal';

const newValue = (): string => `sk_live_${randomBytes(16).toString('hex')}`;

/** The oracle probes: same length, one guess right (the value starts sk_l), one wrong. */
const PROBE_RIGHT = "secrets.probe_key.startsWith('sk_l') ? 'a' : 1";
const PROBE_WRONG = "secrets.probe_key.startsWith('sk_x') ? 'a' : 1";

function fieldViolations(body: {
  details?: Array<{ fieldViolations?: Array<{ field: string; description: string }> }>;
}): Array<{ field: string; description: string }> {
  return (body.details ?? []).flatMap((detail) => detail.fieldViolations ?? []);
}

for (const target of DATABASES) {
  describeOn(target)(`secret origins and the closed secret grammar (${target.label})`, () => {
    let service: TestService;
    let superToken: string;
    const api = () => request(service.server);

    beforeAll(async () => {
      service = await startTestService({ target });
      superToken = await service.tokenFor('super_admin');
    });
    afterAll(async () => service?.close());

    const save = (steps: unknown[]) =>
      api()
        .post('/api/v1/automations')
        .set('Authorization', `Bearer ${superToken}`)
        .send({ displayName: 'origins', trigger: { incomingWebhook: { authMethod: 'HMAC' } }, steps });
    const hook = (url: string, headers: Record<string, string>) => [
      { id: 'h', callWebhook: { url, body: {}, headers } },
    ];

    it('normalises allowedOrigins, shows them in the metadata, changes them with PUT (value untouched) and audits the change', async () => {
      const value = newValue();
      const created = await api()
        .post('/api/v1/secrets')
        .set('Authorization', `Bearer ${superToken}`)
        .send({
          name: 'norm_key',
          value,
          allowedOrigins: [
            'HTTPS://CRM.Example:443/',
            'http://127.0.0.1:8080',
            'https://crm.example',
            'https://[::1]:8443',
          ],
        });
      expect(created.status).toBe(200);
      expect(created.body.secret.allowedOrigins).toEqual([
        'https://crm.example',
        'http://127.0.0.1:8080',
        'https://[::1]:8443',
      ]);
      const moved = await api()
        .put('/api/v1/secrets/norm_key')
        .set('Authorization', `Bearer ${superToken}`)
        .send({ allowedOrigins: ['https://crm2.example:8443'] });
      expect(moved.status).toBe(200);
      expect(moved.body.secret).toEqual({ ...created.body.secret, allowedOrigins: ['https://crm2.example:8443'] });
      const row = await service.deps.db.query<{ sealed_value: string }>(
        "SELECT sealed_value FROM outbound_secrets WHERE name = 'norm_key'",
      );
      expect(service.deps.secretBox.open(row[0]!.sealed_value, sealContext('outbound_secret', 'norm_key'))).toBe(value);
      const one = await api().get('/api/v1/secrets/norm_key').set('Authorization', `Bearer ${superToken}`);
      expect(one.body.secret.allowedOrigins).toEqual(['https://crm2.example:8443']);
      const audit = await listAuditEvents(service.deps.db, 'outbound_secret', 'norm_key');
      expect(audit.map((event) => [event.action, event.details])).toEqual([
        [
          'outbound_secret.create',
          { allowedOrigins: ['https://crm.example', 'http://127.0.0.1:8080', 'https://[::1]:8443'] },
        ],
        ['outbound_secret.set_origins', { allowedOrigins: ['https://crm2.example:8443'] }],
      ]);
      expect(JSON.stringify([created.body, moved.body, one.body, audit])).not.toContain(value);
    });

    it('refuses on save, naming the header, every secret-reading header outside secrets.<name> and string literals joined by +', async () => {
      await api()
        .post('/api/v1/secrets')
        .set('Authorization', `Bearer ${superToken}`)
        .send({ name: 'probe_key', value: newValue(), allowedOrigins: ['https://hooks.example'] })
        .expect(200);
      const refused = [
        'secrets.probe_key.substring(0, 3)',
        PROBE_RIGHT,
        PROBE_WRONG,
        "secrets.probe_key == 'x' ? 'a' : 'b'",
        'secrets.probe_key + 1',
        'size(secrets.probe_key)',
        'string(secrets.probe_key)',
        'secrets.probe_key[0]',
        '[secrets.probe_key][0]',
        "{'a': secrets.probe_key}.a",
        "'a' + secrets.probe_key.lowerAscii()",
        "b'x' + secrets.probe_key",
        'has(secrets.probe_key)',
        "secrets.probe_key.matches('^sk_l')",
        "secrets.probe_key in ['x']",
        "'Bearer ' + (secrets.probe_key > 'sk_l' ? 'y' : 'n')",
      ];
      for (const source of refused) {
        const res = await save(hook("'https://hooks.example/x'", { 'X-Probe': source }));
        expect([source, res.status]).toEqual([source, 400]);
        const violations = fieldViolations(res.body);
        expect([source, violations.map((v) => v.field)]).toEqual([source, ['steps[0].callWebhook.headers.X-Probe']]);
        expect([source, violations[0]!.description]).toEqual([
          source,
          expect.stringMatching(
            source.startsWith('has(')
              ? /must be read as secrets\.<name>/
              : /secrets\.<name> and string literals joined by \+/,
          ),
        ]);
      }
      // The two oracle probes: identical answers.
      const right = await save(hook("'https://hooks.example/x'", { Authorization: PROBE_RIGHT }));
      const wrong = await save(hook("'https://hooks.example/x'", { Authorization: PROBE_WRONG }));
      expect(right.body).toEqual(wrong.body);
      for (const source of [
        'secrets.probe_key',
        "'Bearer ' + secrets.probe_key",
        "secrets.probe_key + ':' + secrets.probe_key + '\\tend'",
        "('a' + secrets.probe_key) + 'b'",
      ]) {
        expect([source, (await save(hook("'https://hooks.example/x'", { Authorization: source }))).status]).toEqual([
          source,
          200,
        ]);
      }
    });

    it('refuses on save and on publish a fixed-origin URL the secret does not allow, naming the secret and the origin', async () => {
      await api()
        .post('/api/v1/secrets')
        .set('Authorization', `Bearer ${superToken}`)
        .send({ name: 'bound_key', value: newValue(), allowedOrigins: ['https://crm.example'] })
        .expect(200);
      const header = { Authorization: "'Bearer ' + secrets.bound_key" };
      for (const url of [
        "'https://evil.example/hook'",
        "'https://evil.example/u/' + ctx.trigger.id",
        "'https://evil.example' + '/x'",
        "'https://crm.example:8443/x'",
        "'http://crm.example/x'",
      ]) {
        const res = await save(hook(url, header));
        expect([url, res.status]).toEqual([url, 400]);
        const violation = fieldViolations(res.body).find(
          (v) => v.field === 'steps[0].callWebhook.headers.Authorization',
        );
        expect(violation?.description).toMatch(
          /secret "bound_key" may not be sent to https?:\/\/(evil|crm)\.example(:8443)? \(its allowedOrigins: https:\/\/crm\.example\)/,
        );
      }
      // Allowed (also written another way), or decided only at run time: saved.
      for (const url of [
        "'https://crm.example/hook'",
        "'HTTPS://CRM.EXAMPLE:443/a?b=c'",
        "'https://crm.example/u/' + ctx.trigger.id",
        'ctx.trigger.cb',
        "'https://crm.example' + ctx.trigger.path",
      ]) {
        expect([url, (await save(hook(url, header))).status]).toEqual([url, 200]);
      }
      // Saved while allowed, then the secret is re-bound elsewhere: the publish is refused and nothing is published.
      const saved = await save(hook("'https://crm.example/hook'", header));
      await api()
        .put('/api/v1/secrets/bound_key')
        .set('Authorization', `Bearer ${superToken}`)
        .send({ allowedOrigins: ['https://crm-new.example'] })
        .expect(200);
      const publish = await api()
        .post(`/api/v1/automations/${saved.body.automation.id}/publish`)
        .set('Authorization', `Bearer ${superToken}`);
      expect(publish.status).toBe(400);
      expect(JSON.stringify(publish.body)).toContain(
        'secret \\"bound_key\\" may not be sent to https://crm.example (its allowedOrigins: https://crm-new.example)',
      );
      const stored = await api()
        .get(`/api/v1/automations/${saved.body.automation.id}`)
        .set('Authorization', `Bearer ${superToken}`);
      expect(stored.body.automation).toMatchObject({ published: false, publishedVersion: null });
    });

    it('binds the signing secret too: a signed step whose fixed URL it does not allow is refused on save, naming the secret and the origin', async () => {
      await api()
        .post('/api/v1/secrets')
        .set('Authorization', `Bearer ${superToken}`)
        .send({ name: 'sign_key', value: newValue(), allowedOrigins: ['https://crm.example'] })
        .expect(200);
      const signed = (url: string) => [{ id: 'h', callWebhook: { url, body: {}, signature: { secret: 'sign_key' } } }];
      for (const url of ["'https://evil.example/hook'", "'https://evil.example/u/' + ctx.trigger.id"]) {
        const res = await save(signed(url));
        expect([url, res.status]).toEqual([url, 400]);
        expect(fieldViolations(res.body)).toContainEqual({
          field: 'steps[0].callWebhook.signature.secret',
          description:
            'step "h": secret "sign_key" may not be sent to https://evil.example (its allowedOrigins: https://crm.example)',
        });
      }
      for (const url of ["'https://crm.example/hook'", 'ctx.trigger.cb'])
        expect([url, (await save(signed(url))).status]).toEqual([url, 200]);
    });

    it('migrates secrets stored before origins: the constant URLs that read them give their origins; one read only by expression URLs gets none', async () => {
      const db = service.deps.db;
      await db.query(
        "DELETE FROM outbound_secrets WHERE name IN ('legacy_const', 'legacy_expr', 'legacy_unused', 'legacy_signing')",
      );
      for (const name of ['legacy_const', 'legacy_expr', 'legacy_unused', 'legacy_signing']) {
        await db.query('INSERT INTO outbound_secrets (name, sealed_value) VALUES ($1, $2)', [
          name,
          service.deps.secretBox.seal(newValue(), sealContext('outbound_secret', name)),
        ]);
      }
      const steps = [
        {
          id: 'a',
          callWebhook: {
            url: "'https://crm.example/a'",
            body: {},
            headers: { Authorization: "'Bearer ' + secrets.legacy_const" },
          },
        },
        {
          id: 'b',
          callWebhook: {
            url: "'https://crm.example:8443/u/' + ctx.trigger.id",
            body: {},
            headers: { 'X-Key': 'secrets.legacy_const.substring(0, 3)' },
          },
        },
        {
          id: 'c',
          callWebhook: {
            url: 'ctx.trigger.cb',
            body: {},
            headers: { Authorization: 'secrets.legacy_expr', 'X-Other': 'secrets.legacy_const' },
          },
        },
        {
          id: 'd',
          callWebhook: { url: "'https://plain.example/'", body: {}, headers: { 'X-Plain': "'secrets.legacy_expr'" } },
        },
        {
          id: 'e',
          callWebhook: { url: "'https://signed.example/e'", body: {}, signature: { secret: 'legacy_signing' } },
        },
      ];
      const automationId = `aut_legacy_${randomBytes(4).toString('hex')}`;
      await db.query(
        `INSERT INTO automations (id, display_name, trigger, steps, listener_id) VALUES ($1, 'legacy', $2::jsonb, $3::jsonb, $4)`,
        [
          automationId,
          JSON.stringify({ incomingWebhook: { authMethod: 'HMAC' } }),
          JSON.stringify(steps.slice(0, 2)),
          `lst_${automationId}`,
        ],
      );
      await db.query(`INSERT INTO automation_versions (automation_id, version, snapshot) VALUES ($1, 1, $2::jsonb)`, [
        automationId,
        JSON.stringify({ displayName: 'legacy', steps: steps.slice(2) }),
      ]);
      await migrate(db);
      const rows = await db.query<{ name: string; allowed_origins: unknown }>(
        "SELECT name, allowed_origins FROM outbound_secrets WHERE name IN ('legacy_const', 'legacy_expr', 'legacy_unused', 'legacy_signing') ORDER BY name",
      );
      expect(rows.map((row) => [row.name, row.allowed_origins])).toEqual([
        ['legacy_const', ['https://crm.example', 'https://crm.example:8443']],
        ['legacy_expr', []],
        ['legacy_signing', ['https://signed.example']],
        ['legacy_unused', []],
      ]);
      const shown = await api().get('/api/v1/secrets/legacy_expr').set('Authorization', `Bearer ${superToken}`);
      expect(shown.body.secret.allowedOrigins).toEqual([]);
      await db.query('DELETE FROM automations WHERE id = $1', [automationId]);
    });
  });
}

describe('secret origins in a real run', () => {
  let stack: Stack;
  const servers: http.Server[] = [];
  const received: Record<
    'crm' | 'evil',
    Array<{ url: string; authorization: string | undefined; signature?: string | undefined }>
  > = { crm: [], evil: [] };
  const origins: Record<'crm' | 'evil', string> = { crm: '', evil: '' };

  beforeAll(async () => {
    for (const name of ['crm', 'evil'] as const) {
      const server = http.createServer((req, res) => {
        req.resume();
        req.on('end', () => {
          const signature = req.headers['webhook-signature'];
          received[name].push({
            url: req.url ?? '',
            authorization: req.headers.authorization,
            ...(signature === undefined ? {} : { signature: String(signature) }),
          });
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ ok: true, got: req.headers.authorization }));
        });
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      servers.push(server);
      origins[name] = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    }
    stack = await startStack();
  });
  afterAll(async () => {
    await stack?.close();
    for (const server of servers) await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  const api = () => request(stack.service.server);
  const auth = (req: request.Test) => req.set('Authorization', `Bearer ${stack.adminToken}`);

  /** How many times the callWebhook activity was attempted in a run (from its history). */
  async function attempts(executionId: string): Promise<number> {
    const history = await stack.client.workflow.getHandle(executionId).fetchHistory();
    const scheduled = new Map<string, string>();
    let count = 0;
    for (const event of history.events ?? []) {
      const sched = event.activityTaskScheduledEventAttributes;
      if (sched) scheduled.set(String(event.eventId), sched.activityType?.name ?? '');
      const started = event.activityTaskStartedEventAttributes;
      if (started && scheduled.get(String(started.scheduledEventId)) === 'callWebhook') count += started.attempt ?? 1;
    }
    return count;
  }

  it('sends nothing to a URL the sender chose; the step fails at its first attempt naming the secret and the origin; the bound origin gets the credential', async () => {
    const value = newValue();
    await auth(api().post('/api/v1/secrets'))
      .send({ name: 'crm_token', value, allowedOrigins: [origins.crm] })
      .expect(200);
    const { automation, signingSecret } = await stack.createAutomation({
      displayName: 'steered',
      trigger: { incomingWebhook: { authMethod: 'HMAC' } },
      steps: [
        {
          id: 'notify',
          retry: { maximumAttempts: 5, initialInterval: '1s', maximumInterval: '1s' },
          callWebhook: {
            url: 'ctx.trigger.cb',
            body: { who: 'ctx.trigger.who' },
            headers: { Authorization: "'Bearer ' + secrets.crm_token" },
          },
        },
      ],
    });
    const steered = await deliver(
      stack,
      listenerPath(automation),
      hmacEvent(signingSecret!, { cb: `${origins.evil}/steal`, who: 'mallory' }),
    );
    expect(steered.status).toBe(200);
    const failure = await expectRunFailure(stack.client.workflow.getHandle(steered.body.executionId));
    expect(failure.message).toBe(
      `step "notify" failed: callWebhook: headers.Authorization: secret "crm_token" may not be sent to ${origins.evil} (its allowedOrigins: ${origins.crm})`,
    );
    expect(received.evil).toEqual([]);
    expect(await attempts(steered.body.executionId)).toBe(1);
    expect(JSON.stringify(failure)).not.toContain(value);

    const bound = await deliver(
      stack,
      listenerPath(automation),
      hmacEvent(signingSecret!, { cb: `${origins.crm}/hook`, who: 'ada' }),
    );
    await stack.client.workflow.getHandle(bound.body.executionId).result();
    expect(received.crm.at(-1)).toEqual({ url: '/hook', authorization: `Bearer ${value}` });

    // A secret migrated without origins is sent nowhere until an administrator sets them.
    await stack.service.deps.db.query(
      "UPDATE outbound_secrets SET allowed_origins = '[]'::jsonb WHERE name = 'crm_token'",
    );
    const before = received.crm.length;
    const unset = await deliver(
      stack,
      listenerPath(automation),
      hmacEvent(signingSecret!, { cb: `${origins.crm}/hook`, who: 'bob' }),
    );
    const unsetFailure = await expectRunFailure(stack.client.workflow.getHandle(unset.body.executionId));
    expect(unsetFailure.message).toBe(
      'step "notify" failed: callWebhook: headers.Authorization: secret "crm_token" has no allowedOrigins yet and is sent nowhere: an administrator sets them with PUT /api/v1/secrets/crm_token',
    );
    expect(received.crm.length).toBe(before);
    // The dry run says the same for a URL outside the origins.
    await auth(api().put('/api/v1/secrets/crm_token'))
      .send({ allowedOrigins: [origins.crm] })
      .expect(200);
    const dry = await auth(api().post(`/api/v1/automations/${automation.id}/test`)).send({
      payload: { cb: `${origins.evil}/steal`, who: 'x' },
    });
    expect(dry.body.steps[0]).toMatchObject({
      status: 'ERROR',
      error: `callWebhook.headers.Authorization: secret "crm_token" may not be sent to ${origins.evil} (its allowedOrigins: ${origins.crm})`,
    });
  });

  it('binds the signing secret: a signed step whose URL the sender chose outside its origins sends nothing and fails without retry', async () => {
    const value = `whsec_${randomBytes(24).toString('base64')}`;
    await auth(api().post('/api/v1/secrets'))
      .send({ name: 'crm_signing', value, allowedOrigins: [origins.crm] })
      .expect(200);
    const { automation, signingSecret } = await stack.createAutomation({
      displayName: 'steered signed',
      trigger: { incomingWebhook: { authMethod: 'HMAC' } },
      steps: [
        {
          id: 'notify',
          retry: { maximumAttempts: 5, initialInterval: '1s', maximumInterval: '1s' },
          callWebhook: {
            url: 'ctx.trigger.cb',
            body: { who: 'ctx.trigger.who' },
            signature: { secret: 'crm_signing' },
          },
        },
      ],
    });
    const evilBefore = received.evil.length;
    const steered = await deliver(
      stack,
      listenerPath(automation),
      hmacEvent(signingSecret!, { cb: `${origins.evil}/steal`, who: 'mallory' }),
    );
    expect(steered.status).toBe(200);
    const failure = await expectRunFailure(stack.client.workflow.getHandle(steered.body.executionId));
    expect(failure.message).toBe(
      `step "notify" failed: callWebhook: signature.secret: secret "crm_signing" may not be sent to ${origins.evil} (its allowedOrigins: ${origins.crm})`,
    );
    expect(received.evil.length).toBe(evilBefore);
    expect(await attempts(steered.body.executionId)).toBe(1);
    expect(JSON.stringify(failure)).not.toContain(value);

    // To the bound origin the same automation's call is sent (and signed).
    const crmBefore = received.crm.length;
    const bound = await deliver(
      stack,
      listenerPath(automation),
      hmacEvent(signingSecret!, { cb: `${origins.crm}/signed`, who: 'ada' }),
    );
    await stack.client.workflow.getHandle(bound.body.executionId).result();
    expect(received.crm.length).toBe(crmBefore + 1);
    expect(received.crm.at(-1)!.url).toBe('/signed');
    expect(received.crm.at(-1)!.signature).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    // The dry run says the same for a URL outside the origins.
    const dry = await auth(api().post(`/api/v1/automations/${automation.id}/test`)).send({
      payload: { cb: `${origins.evil}/steal`, who: 'x' },
    });
    expect(dry.body.steps[0]).toMatchObject({
      status: 'ERROR',
      error: `callWebhook.signature.secret: secret "crm_signing" may not be sent to ${origins.evil} (its allowedOrigins: ${origins.crm})`,
    });
  });

  it('checks the URL before any secret, and no error of the activity depends on a secret value: the two oracle probes fail alike', async () => {
    const db = stack.service.deps.db;
    const activities = createActivities({
      db,
      allowPrivateOutbound: true,
      secretBox: stack.service.deps.secretBox,
      engine: NO_TEMPORAL,
    });
    const failureOf = async (input: Parameters<typeof activities.callWebhook>[0]): Promise<Record<string, unknown>> => {
      const err = await activities.callWebhook(input).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(ApplicationFailure);
      const failure = err as ApplicationFailure;
      return {
        type: failure.type,
        message: failure.message,
        nonRetryable: failure.nonRetryable,
        details: failure.details,
      };
    };
    await auth(api().post('/api/v1/secrets'))
      .send({ name: 'probe_key', value: `sk_live_${randomBytes(8).toString('hex')}`, allowedOrigins: [origins.crm] })
      .expect(200);
    // Called directly, outside a run: the run whose call keys it sends is given (keysOf).
    const keysOf = { workflowId: 'direct-probe', runId: 'run-1' };
    const input = (url: string, secretHeaders: Record<string, string>) => ({
      stepId: 'probe',
      url,
      body: {},
      headers: {},
      secretHeaders,
      timeoutMs: 5000,
      keysOf,
    });
    const sentBefore = received.crm.length + received.evil.length;

    // The probes, with an invalid URL (stored before the closed grammar, say): identical.
    const right = await failureOf(input('not a url', { 'X-Probe': PROBE_RIGHT }));
    const wrong = await failureOf(input('not a url', { 'X-Probe': PROBE_WRONG }));
    expect(right).toEqual(wrong);
    // The URL is checked first: a refused URL wins over a missing secret, and over a refused origin.
    const badUrl = await failureOf(input('ftp://crm.example/x', { Authorization: 'secrets.nobody_here' }));
    expect(badUrl).toMatchObject({ type: 'CallWebhookRefused', nonRetryable: true });
    expect(badUrl.message).not.toContain('nobody_here');

    // The same closed-grammar header, values of every shape, refused URL or origin: the same failure whatever the value.
    const outcomes: Array<Record<string, unknown>> = [];
    for (const value of ['sk_live_aaaa', 'x', 'sk_l', 'Bearer y'.repeat(400), '\tz\u00ff']) {
      await auth(api().put('/api/v1/secrets/probe_key')).send({ value }).expect(200);
      outcomes.push({
        badUrl: await failureOf(input('https://', { Authorization: "'Bearer ' + secrets.probe_key" })),
        elsewhere: await failureOf(input(`${origins.evil}/x`, { Authorization: "'Bearer ' + secrets.probe_key" })),
      });
    }
    for (const outcome of outcomes) expect(outcome).toEqual(outcomes[0]);
    expect(outcomes[0]!.elsewhere).toMatchObject({ type: 'CallWebhookSecretOriginRefused', nonRetryable: true });
    expect(received.crm.length + received.evil.length).toBe(sentBefore);
  });
});
