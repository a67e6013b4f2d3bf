/**
 * The callWebhook and fail steps, per-step retry policies and hostile expressions, on a real
 * Temporal dev server with real activities: callWebhook calls a real local HTTP server (with
 * ALLOW_PRIVATE_OUTBOUND on, as in development) or is refused (off). Save-time
 * validation of the new kinds goes through the real HTTP API.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { Client, type Connection, type WorkflowHandle } from '@temporalio/client';
import type { ApplicationFailure } from '@temporalio/common';
import { DefaultLogger, type NativeConnection, Runtime, type Worker } from '@temporalio/worker';
import { GuardedWorker } from '../../src/temporal/activation-guard';
import { createActivities } from '../../activities';
import { NO_TEMPORAL } from '../helpers/engine';
import { automationWorkflowsPath } from '../../src/temporal/worker';
import type { Db } from '../../src/store/db';
import { automation } from '../../workflows';
import { RUN_STATE_QUERY, type RunState, type StepDefinition } from '../../src/contract/run';
import { startTestService, type TestService } from '../helpers/test-service';
import { resolveNameTo } from '../helpers/resolver';
import { openTestDb, PGLITE } from '../helpers/databases';
import { publishedRunInput } from '../helpers/versions';
import {
  connectClient,
  connectNative,
  expectRunFailure,
  testDataConverter,
  testTemporal,
  testWorkflowBundle,
  uniqueTaskQueue,
} from '../helpers/temporal';

interface Received {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

type Handler = (req: http.IncomingMessage, res: http.ServerResponse, body: string) => void;

/** A local HTTP server recording every request; `handle` decides the answer (default: 200 JSON echo). */
interface Target {
  origin: string;
  port: number;
  received: Received[];
  handle: Handler;
  close(): Promise<void>;
}

async function startTarget(): Promise<Target> {
  const target: Target = {
    origin: '',
    port: 0,
    received: [],
    handle: (_req, res, body) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ echoed: JSON.parse(body || 'null') }));
    },
    close: async () => undefined,
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      target.received.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      target.handle(req, res, body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  target.port = (server.address() as AddressInfo).port;
  target.origin = `http://127.0.0.1:${target.port}`;
  target.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return target;
}

let nativeConnection: NativeConnection;
let connection: Connection;
let client: Client;
let db: Db;
let target: Target;
/** Workers with outbound calls to http:// and private addresses allowed (`insecure`) or refused (`secure`). */
const queues = { insecure: '', secure: '' };
const workers: Array<{ worker: Worker; running: Promise<void> }> = [];

beforeAll(async () => {
  Runtime.install({ logger: new DefaultLogger('ERROR'), shutdownSignals: [] });
  const temporal = await testTemporal();
  nativeConnection = await connectNative(temporal.address);
  connection = await connectClient(temporal.address);
  client = new Client({ connection, namespace: temporal.namespace, ...testDataConverter() });
  db = await openTestDb(PGLITE);
  target = await startTarget();
  const bundle = testWorkflowBundle();
  for (const mode of ['insecure', 'secure'] as const) {
    queues[mode] = uniqueTaskQueue(`steps-${mode}`);
    const worker = await GuardedWorker.create({
      connection: nativeConnection,
      namespace: temporal.namespace,
      taskQueue: queues[mode],
      activities: createActivities({ db, allowPrivateOutbound: mode === 'insecure', engine: NO_TEMPORAL }),
      ...testDataConverter(),
      ...(bundle ? { workflowBundle: bundle } : { workflowsPath: automationWorkflowsPath() }),
    });
    workers.push({ worker, running: worker.run() });
  }
});

afterAll(async () => {
  for (const { worker, running } of workers) {
    worker.shutdown();
    await running;
  }
  await target?.close();
  await db?.close();
  await connection?.close();
  await nativeConnection?.close();
});

beforeEach(() => {
  target.received.length = 0;
  target.handle = (_req, res, body) => {
    res.writeHead(200, { 'content-type': 'application/json', 'x-request-id': 'req-1', 'set-cookie': 'session=secret' });
    res.end(JSON.stringify({ echoed: JSON.parse(body || 'null'), ticket: 'T-42' }));
  };
});

async function start(
  steps: StepDefinition[],
  trigger: unknown,
  mode: 'insecure' | 'secure' = 'insecure',
): Promise<WorkflowHandle<typeof automation>> {
  const input = await publishedRunInput(db, steps, trigger, 'Steps test');
  return client.workflow.start(automation, {
    taskQueue: queues[mode],
    workflowId: `steps:${input.eventId}`,
    args: [input],
  });
}

async function runFailure(
  handle: WorkflowHandle<typeof automation>,
): Promise<{ failure: ApplicationFailure; state: RunState }> {
  const failure = await expectRunFailure(handle);
  return { failure, state: await handle.query<RunState>(RUN_STATE_QUERY) };
}

describe('callWebhook step', () => {
  it('POSTs the CEL-built JSON body with its headers; the response is the output, readable by later steps', async () => {
    const steps: StepDefinition[] = [
      {
        id: 'notify',
        callWebhook: {
          url: `'${target.origin}/hooks/' + ctx.trigger.kind + '?token=abc'`,
          body: {
            employee: 'ctx.trigger.employee_id',
            flags: '[ctx.trigger.kind, "x"]',
            nested: '{"n": ctx.trigger.n * 2.0}',
          },
          headers: { 'X-Ticket-Source': "'automation'", Authorization: "'Bearer ' + ctx.trigger.token" },
        },
      },
      {
        id: 'after',
        setVariables: {
          ticket: 'ctx.steps.notify.body.ticket',
          status: 'ctx.steps.notify.status',
          echoed: 'ctx.steps.notify.body.echoed.employee',
        },
      },
    ];
    const result = await (await start(steps, { kind: 'offboard', employee_id: 'e-1', n: 2, token: 't0k' })).result();
    expect(result.status).toBe('COMPLETED');
    expect(target.received).toHaveLength(1);
    const sent = target.received[0]!;
    expect(sent.method).toBe('POST');
    expect(sent.url).toBe('/hooks/offboard?token=abc');
    expect(sent.headers['content-type']).toBe('application/json');
    expect(sent.headers['x-ticket-source']).toBe('automation');
    expect(sent.headers.authorization).toBe('Bearer t0k');
    expect(JSON.parse(sent.body)).toEqual({ employee: 'e-1', flags: ['offboard', 'x'], nested: { n: 4 } });
    expect(result.steps[0]).toMatchObject({ id: 'notify', kind: 'callWebhook', status: 'DONE', error: null });
    expect(result.steps[0]!.output).toEqual({
      status: 200,
      headers: expect.objectContaining({ 'content-type': 'application/json', 'x-request-id': 'req-1' }),
      body: { echoed: { employee: 'e-1', flags: ['offboard', 'x'], nested: { n: 4 } }, ticket: 'T-42' },
    });
    expect(JSON.stringify(result.steps[0]!.output)).not.toContain('session=secret');
    expect(result.steps[1]!.output).toEqual({ ticket: 'T-42', status: 200, echoed: 'e-1' });
  });

  it('takes the body from one expression giving a map, and keeps a text response as text', async () => {
    target.handle = (_req, res) => {
      res.writeHead(201, { 'content-type': 'text/plain' });
      res.end('created');
    };
    const steps: StepDefinition[] = [
      { id: 'vars', setVariables: { who: 'ctx.trigger.who' } },
      {
        id: 'hook',
        callWebhook: { url: `'${target.origin}/x'`, body: '{"who": ctx.steps.vars.who, "all": ctx.trigger}' },
      },
    ];
    const result = await (await start(steps, { who: 'svc-1' })).result();
    expect(JSON.parse(target.received[0]!.body)).toEqual({ who: 'svc-1', all: { who: 'svc-1' } });
    expect(result.steps[1]!.output).toMatchObject({ status: 201, body: 'created' });
  });

  it('fails the step without retrying on a 4xx other than 429, and on a redirect (not followed)', async () => {
    target.handle = (req, res) => {
      if (req.url === '/moved') {
        res.writeHead(302, { location: `${target.origin}/elsewhere` });
        res.end();
        return;
      }
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end('{"error":"no such hook"}');
    };
    const missing = await runFailure(
      await start([{ id: 'hook', callWebhook: { url: `'${target.origin}/gone?secret=s3'`, body: {} } }], {}),
    );
    // The URL's origin only (the path and query may carry a token), and the status only (no body).
    expect(missing.failure.message).toBe(`step "hook" failed: callWebhook: POST ${target.origin} answered HTTP 404`);
    expect(missing.state.steps[0]).toMatchObject({
      status: 'FAILED',
      error: `callWebhook: POST ${target.origin} answered HTTP 404`,
    });
    expect(target.received).toHaveLength(1);

    target.received.length = 0;
    const moved = await runFailure(
      await start([{ id: 'hook', callWebhook: { url: `'${target.origin}/moved'`, body: {} } }], {}),
    );
    expect(moved.failure.message).toMatch(
      /^step "hook" failed: callWebhook: .* answered HTTP 302 \(redirects are not followed\)/,
    );
    expect(target.received.map((r) => r.url)).toEqual(['/moved']);
  });

  it('retries a 5xx under the step retry policy, then fails the run naming the step', async () => {
    target.handle = (_req, res) => {
      res.writeHead(503);
      res.end('maintenance');
    };
    const steps: StepDefinition[] = [
      {
        id: 'hook',
        retry: { maximumAttempts: 3, initialInterval: '0.1s', maximumInterval: '0.2s', backoffCoefficient: 1.5 },
        callWebhook: { url: `'${target.origin}/x'`, body: {} },
      },
      { id: 'never', setVariables: { x: '1' } },
    ];
    const { failure, state } = await runFailure(await start(steps, {}));
    expect(target.received).toHaveLength(3);
    expect(failure.message).toBe(`step "hook" failed: callWebhook: POST ${target.origin} answered HTTP 503`);
    expect(state.steps.map((s) => s.status)).toEqual(['FAILED', 'PENDING']);
  });

  it('succeeds when a retry succeeds (429 first, then 200)', async () => {
    let calls = 0;
    target.handle = (_req, res) => {
      calls += 1;
      if (calls === 1) {
        res.writeHead(429);
        res.end();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"ok":true}');
    };
    const steps: StepDefinition[] = [
      { id: 'hook', retry: { initialInterval: '0.1s' }, callWebhook: { url: `'${target.origin}/x'`, body: {} } },
    ];
    const result = await (await start(steps, {})).result();
    expect(target.received).toHaveLength(2);
    expect(result.steps[0]!.output).toMatchObject({ status: 200, body: { ok: true } });
  });

  it('fails on a response larger than 1 MiB and on no answer within timeoutMs', async () => {
    target.handle = (req, res) => {
      if (req.url === '/silent') return; // never answers
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('x'.repeat(1024 * 1024 + 1));
    };
    const big = await runFailure(
      await start([{ id: 'hook', callWebhook: { url: `'${target.origin}/big'`, body: {} } }], {}),
    );
    expect(big.failure.message).toMatch(/^step "hook" failed: callWebhook: .* the response exceeds 1048576 bytes$/);
    const slow = await runFailure(
      await start(
        [
          {
            id: 'hook',
            retry: { maximumAttempts: 1 },
            callWebhook: { url: `'${target.origin}/silent'`, body: {}, timeoutMs: 300 },
          },
        ],
        {},
      ),
    );
    expect(slow.failure.message).toBe(
      `step "hook" failed: callWebhook: POST ${target.origin}: no complete response within 300 ms`,
    );
  });

  it('fails the step when url, body or a header evaluates to the wrong type', async () => {
    const url = await runFailure(
      await start([{ id: 'hook', callWebhook: { url: 'ctx.trigger.n', body: {} } }], { n: 1 }),
    );
    expect(url.failure.message).toBe(
      'step "hook" failed: callWebhook.url: must evaluate to a non-empty string, got number 1',
    );
    const body = await runFailure(
      await start([{ id: 'hook', callWebhook: { url: `'${target.origin}/x'`, body: 'ctx.trigger.list' } }], {
        list: [1],
      }),
    );
    expect(body.failure.message).toBe('step "hook" failed: callWebhook.body: must evaluate to a map, got a list');
    const header = await runFailure(
      await start(
        [{ id: 'hook', callWebhook: { url: `'${target.origin}/x'`, body: {}, headers: { 'X-N': 'ctx.trigger.n' } } }],
        { n: 1 },
      ),
    );
    expect(header.failure.message).toBe(
      'step "hook" failed: callWebhook.headers.X-N: must evaluate to a string, got number 1',
    );
    expect(target.received).toHaveLength(0);
  });

  it('is refused, without any request, for http:// and loopback/private/metadata addresses when insecure outbound is off', async () => {
    const refusedBy = async (url: string): Promise<string> => {
      const { failure, state } = await runFailure(
        await start([{ id: 'hook', callWebhook: { url: JSON.stringify(url), body: {} } }], {}, 'secure'),
      );
      expect(state.steps[0]!.status).toBe('FAILED');
      return failure.message;
    };
    expect(await refusedBy(`${target.origin}/x`)).toBe('step "hook" failed: callWebhook: URL must use https');
    const nonPublic =
      'step "hook" failed: callWebhook: URL must not point to a loopback, private, link-local or other non-public address';
    for (const host of [
      `127.0.0.1:${target.port}`,
      '10.1.2.3',
      '169.254.169.254',
      '[::1]',
      '[::ffff:127.0.0.1]',
      '0x7f.1',
      '192.168.0.10',
    ]) {
      expect([host, await refusedBy(`https://${host}/x`)]).toEqual([host, nonPublic]);
    }
    expect(await refusedBy('https://localhost/x')).toBe(
      'step "hook" failed: callWebhook: URL must not point to localhost',
    );
    expect(await refusedBy('https://user:pw@example.com/x')).toBe(
      'step "hook" failed: callWebhook: URL must not contain credentials',
    );
    // A name that passes the URL check and resolves to a non-public address is refused at connect
    // time (the guarded lookup).
    const resolver = resolveNameTo('hook.loopback.test', '127.0.0.1');
    try {
      expect(await refusedBy(`https://hook.loopback.test:${target.port}/x`)).toMatch(
        /resolves to a loopback, private, link-local or other non-public address$/,
      );
      expect(resolver).toHaveBeenCalledWith('hook.loopback.test', expect.anything(), expect.any(Function));
    } finally {
      resolver.restore();
    }
    expect(target.received).toHaveLength(0);
  });
});

describe('fail step', () => {
  it('ends the run as FAILED with the CEL-built message; the step shows it, the run failure names the step', async () => {
    const steps: StepDefinition[] = [
      { id: 'check', setVariables: { ok: 'ctx.trigger.status == "active"' } },
      {
        id: 'stop',
        when: '!ctx.steps.check.ok',
        fail: { message: '"user " + ctx.trigger.user + " is " + ctx.trigger.status' },
      },
      { id: 'never', setVariables: { x: '1' } },
    ];
    const { failure, state } = await runFailure(await start(steps, { user: 'u-7', status: 'suspended' }));
    expect(failure.type).toBe('StepFailed');
    expect(failure.message).toBe('step "stop" failed: user u-7 is suspended');
    expect(failure.details?.[0]).toMatchObject({ stepId: 'stop', kind: 'fail', error: 'user u-7 is suspended' });
    expect(state.status).toBe('FAILED');
    expect(state.steps.map((s) => [s.id, s.kind, s.status, s.error])).toEqual([
      ['check', 'setVariables', 'DONE', null],
      ['stop', 'fail', 'FAILED', 'user u-7 is suspended'],
      ['never', 'setVariables', 'PENDING', null],
    ]);

    const skipped = await (await start(steps, { user: 'u-8', status: 'active' })).result();
    expect(skipped.status).toBe('COMPLETED');
    expect(skipped.steps.map((s) => s.status)).toEqual(['DONE', 'SKIPPED', 'DONE']);
  });

  it('fails with a clear error when the message is not a string', async () => {
    const { failure } = await runFailure(
      await start([{ id: 'stop', fail: { message: 'ctx.trigger.code' } }], { code: 3 }),
    );
    expect(failure.message).toBe('step "stop" failed: fail.message: must evaluate to a non-empty string, got number 3');
  });
});

describe('hostile expressions in a real run', () => {
  it('fail their step within the CEL bounds while another run on the same worker completes', async () => {
    const longText = 'a'.repeat(200_000) + 'c';
    const list99 = Array.from({ length: 99 }, (_, i) => i);
    const hostile: Array<{ steps: StepDefinition[]; trigger: unknown; error: RegExp }> = [
      // 99 × 99 regular-expression scans of 200,000 characters (tens of seconds unbounded):
      // stopped by the evaluation cost budget
      {
        steps: [
          {
            id: 'slow',
            setVariables: { v: "ctx.trigger.l.all(x, ctx.trigger.l.all(y, !ctx.trigger.s.matches('^(a|b)*$')))" },
          },
        ],
        trigger: { l: list99, s: longText },
        error: /^step "slow" failed: v: evaluation exceeds the cost budget of 1000000$/,
      },
      // a comprehension over a 20,000-element list: stopped by the iteration budget before it starts
      {
        steps: [{ id: 'huge', setVariables: { v: 'ctx.trigger.l.map(x, ctx.trigger.l.map(y, x * y)).size()' } }],
        trigger: { l: Array.from({ length: 20_000 }, (_, i) => i) },
        error: /^step "huge" failed: v: comprehensions iterate more than 10000 times$/,
      },
      // nesting that the save-time check refuses, reaching a run anyway: refused when compiled
      {
        steps: [{ id: 'deep', setVariables: { v: `${'['.repeat(300)}1${']'.repeat(300)}` } }],
        trigger: {},
        error: /^step "deep" failed: v: expression is nested too deeply/,
      },
    ];
    const normalSteps: StepDefinition[] = [
      { id: 'a', setVariables: { x: 'ctx.trigger.n + 1.0' } },
      { id: 'b', setVariables: { y: 'ctx.steps.a.x * 2.0' } },
    ];
    const handles = await Promise.all(hostile.map((h) => start(h.steps, h.trigger)));
    const normal = await start(normalSteps, { n: 1 });
    const [normalResult, ...failures] = await Promise.all([normal.result(), ...handles.map((h) => runFailure(h))]);
    expect(normalResult.status).toBe('COMPLETED');
    expect(normalResult.steps.map((s) => s.output)).toEqual([{ x: 2 }, { y: 4 }]);
    failures.forEach((f, i) => {
      expect(f.failure.message).toMatch(hostile[i]!.error);
      expect(f.state.steps[0]!.status).toBe('FAILED');
    });
  });
});

describe('saving automations with the new step kinds', () => {
  let service: TestService;
  let token: string;

  beforeAll(async () => {
    service = await startTestService();
    token = await service.tokenFor('super_admin');
  });
  afterAll(async () => service?.close());

  function create(steps: unknown[]) {
    return request(service.server)
      .post('/api/v1/automations')
      .set('Authorization', `Bearer ${token}`)
      .send({ displayName: 'Steps', trigger: { incomingWebhook: { authMethod: 'HMAC' } }, steps });
  }

  function violations(res: request.Response): Array<{ field: string; description: string }> {
    expect(res.status).toBe(400);
    return res.body.details[0].fieldViolations;
  }

  const hook = { url: "'https://hooks.example/x'", body: { a: 'ctx.trigger.a' } };

  it('stores callWebhook, fail and retry policies as given', async () => {
    const steps = [
      {
        id: 'hook',
        retry: { maximumAttempts: 3, initialInterval: '0.5s', maximumInterval: '60s', backoffCoefficient: 3 },
        callWebhook: { ...hook, headers: { 'X-A': "'1'" }, timeoutMs: 30000 },
      },
      { id: 'whole', callWebhook: { url: "'https://hooks.example/y'", body: '{"all": ctx.trigger}' } },
      {
        id: 'own',
        retry: { maximumAttempts: 1 },
        createEntitlementOwner: { userId: "'u'", roleSlug: "'owner'", appId: "'a'", entitlementId: "'e'" },
      },
      { id: 'stop', when: 'ctx.trigger.bad', fail: { message: "'bad input'" } },
    ];
    const res = await create(steps);
    expect(res.status).toBe(200);
    expect(res.body.automation.steps).toEqual(steps);
  });

  it('400 naming the step and field for each invalid retry policy', async () => {
    const cases: Array<[unknown, string, RegExp]> = [
      [{ maximumAttempts: 0 }, 'steps[0].retry.maximumAttempts', /step "hook": must be an integer from 1 to 20/],
      [{ maximumAttempts: 21 }, 'steps[0].retry.maximumAttempts', /from 1 to 20/],
      [{ maximumAttempts: 2.5 }, 'steps[0].retry.maximumAttempts', /integer/],
      [{ backoffCoefficient: 0.5 }, 'steps[0].retry.backoffCoefficient', /from 1 to 10/],
      [{ backoffCoefficient: 11 }, 'steps[0].retry.backoffCoefficient', /from 1 to 10/],
      [{ initialInterval: '1m' }, 'steps[0].retry.initialInterval', /positive duration/],
      [{ initialInterval: '0s' }, 'steps[0].retry.initialInterval', /positive duration/],
      [{ maximumInterval: '3601s' }, 'steps[0].retry.maximumInterval', /at most 3600s/],
      [
        { initialInterval: '10s', maximumInterval: '5s' },
        'steps[0].retry.maximumInterval',
        /not be shorter than initialInterval/,
      ],
      [{ maximumInterval: '0.5s' }, 'steps[0].retry.maximumInterval', /not be shorter than initialInterval \(1s\)/],
      [{ attempts: 3 }, 'steps[0].retry.attempts', /unknown field/],
      ['3 times', 'steps[0].retry', /must be an object/],
    ];
    for (const [retry, field, description] of cases) {
      const found = violations(await create([{ id: 'hook', retry, callWebhook: hook }]));
      expect([retry, found.map((v) => v.field)]).toEqual([retry, [field]]);
      expect(found[0]!.description).toMatch(description);
    }
    const onVariables = violations(
      await create([{ id: 'vars', retry: { maximumAttempts: 2 }, setVariables: { a: '1' } }]),
    );
    expect(onVariables).toEqual([
      {
        field: 'steps[0].retry',
        description:
          'step "vars": retry applies only to createEntitlementOwner, deleteEntitlementOwner, ensureUser, grantEntitlements, revokeEntitlements, callWebhook, notify steps',
      },
    ]);
  });

  it('400 naming the step and field for invalid callWebhook and fail steps', async () => {
    const cases: Array<[Record<string, unknown>, string, RegExp]> = [
      [{ body: {} }, 'steps[0].callWebhook.url', /step "hook": must be a CEL expression/],
      [{ ...hook, url: "'https://x' +" }, 'steps[0].callWebhook.url', /step "hook": syntax error/],
      [
        { ...hook, body: { a: 'ctx.trigger.a', b: 'ctx.trigger.b ==' } },
        'steps[0].callWebhook.body.b',
        /step "hook": syntax error/,
      ],
      [{ ...hook, body: 'nope(' }, 'steps[0].callWebhook.body', /step "hook": syntax error/],
      [{ ...hook, body: 42 }, 'steps[0].callWebhook.body', /map of field name/],
      [{ ...hook, body: { a: 'other.a' } }, 'steps[0].callWebhook.body.a', /unknown name "other"/],
      [
        { ...hook, headers: { 'Content-Type': "'text/plain'" } },
        'steps[0].callWebhook.headers.Content-Type',
        /sets this header itself/,
      ],
      [
        { ...hook, headers: { 'Bad Header': "'x'" } },
        'steps[0].callWebhook.headers.Bad Header',
        /not a valid header name/,
      ],
      [{ ...hook, headers: { 'X-A': '1 +' } }, 'steps[0].callWebhook.headers.X-A', /syntax error/],
      [{ ...hook, timeoutMs: 30001 }, 'steps[0].callWebhook.timeoutMs', /integer from 1 to 30000/],
      [{ ...hook, timeoutMs: '5s' }, 'steps[0].callWebhook.timeoutMs', /integer from 1 to 30000/],
      [{ ...hook, method: 'GET' }, 'steps[0].callWebhook.method', /unknown field/],
    ];
    for (const [callWebhook, field, description] of cases) {
      const found = violations(await create([{ id: 'hook', callWebhook }]));
      expect([callWebhook, found.map((v) => v.field)]).toEqual([callWebhook, [field]]);
      expect(found[0]!.description).toMatch(description);
    }
    expect(violations(await create([{ id: 'stop', fail: {} }]))).toEqual([
      { field: 'steps[0].fail.message', description: 'step "stop": must be a CEL expression (a non-empty string)' },
    ]);
    expect(violations(await create([{ id: 'stop', fail: { message: "'a' +" } }]))[0]).toMatchObject({
      field: 'steps[0].fail.message',
    });
    expect(
      violations(await create([{ id: 'stop', fail: { message: "'x'" }, callWebhook: hook }]))[0]!.description,
    ).toMatch(
      /sets callWebhook and fail; a step sets exactly one of setVariables, wait, createEntitlementOwner, deleteEntitlementOwner, ensureUser, grantEntitlements, revokeEntitlements, callWebhook, fail, log, waitForApproval, notify/,
    );
    expect(violations(await create([{ id: 'stop', fail: { message: "'x'" }, retyr: {} }]))).toEqual([
      { field: 'steps[0].retyr', description: 'step "stop": unknown field' },
    ]);
  });

  it('stores a log step, and refuses a bad level, a bad expression, unknown fields and a retry policy', async () => {
    const steps = [
      { id: 'note', log: { message: "'hello ' + ctx.trigger.user", level: 'warn' } },
      { id: 'plain', log: { message: "'x'" } },
    ];
    const res = await create(steps);
    expect(res.status).toBe(200);
    expect(res.body.automation.steps).toEqual(steps);
    expect(violations(await create([{ id: 'note', log: { message: "'x'", level: 'debug' } }]))).toEqual([
      { field: 'steps[0].log.level', description: 'step "note": must be one of info, warn, error' },
    ]);
    expect(violations(await create([{ id: 'note', log: { message: "'x' +" } }]))[0]).toMatchObject({
      field: 'steps[0].log.message',
    });
    expect(violations(await create([{ id: 'note', log: { message: "'x'", extra: 1 } }]))).toEqual([
      { field: 'steps[0].log.extra', description: 'step "note": unknown field; expected message, level' },
    ]);
    expect(
      violations(await create([{ id: 'note', retry: { maximumAttempts: 2 }, log: { message: "'x'" } }]))[0],
    ).toMatchObject({ field: 'steps[0].retry' });
  });

  it('a create with a problem in every part is one 400 listing each, by the field path and message of the domain', async () => {
    const res = await request(service.server)
      .post('/api/v1/automations')
      .set('Authorization', `Bearer ${token}`)
      .send({
        displayName: ' ',
        trigger: { incomingWebhook: { authMethod: 'JWT', allowedCidrs: ['10.0.0.0/33'] } },
        steps: [
          { id: 'a', log: { message: "'x'" }, bogus: 1 },
          { id: 'b', callWebhook: { ...hook, headers: { 'X-A': '1 +' } } },
        ],
        rateLimit: { limit: 1, period: '1s', other: true },
      });
    expect(violations(res)).toEqual([
      { field: 'displayName', description: 'must be a non-empty string of at most 200 characters' },
      { field: 'trigger.incomingWebhook.jwksUrl', description: 'is required for JWT authentication' },
      {
        field: 'trigger.incomingWebhook.allowedCidrs[0]',
        description: 'prefix length must be an integer from 0 to 32',
      },
      { field: 'steps[0].bogus', description: 'step "a": unknown field' },
      { field: 'steps[1].callWebhook.headers.X-A', description: expect.stringMatching(/^step "b": syntax error/) },
      { field: 'rateLimit.other', description: 'is not a known field' },
    ]);
    expect(
      (await request(service.server).get('/api/v1/automations').set('Authorization', `Bearer ${token}`)).body.list.map(
        (item: { automation: { displayName: string } }) => item.automation.displayName,
      ),
    ).not.toContain(' ');
  });

  it("parses with the configuration's rules: this service allows an http JWKS URL (ALLOW_INSECURE_JWKS), which the production policy refuses", async () => {
    const trigger = { incomingWebhook: { authMethod: 'JWT', jwksUrl: 'http://127.0.0.1:9/jwks.json' } };
    const res = await request(service.server)
      .post('/api/v1/automations')
      .set('Authorization', `Bearer ${token}`)
      .send({ displayName: 'dev JWKS', trigger });
    expect(res.status).toBe(200);
    expect(res.body.automation.trigger.incomingWebhook.jwksUrl).toBe('http://127.0.0.1:9/jwks.json');
  });

  it('an update is checked before the lookup (400 on any id), names steps from their own root, and changes nothing when refused', async () => {
    const created = await create([{ id: 'keep', log: { message: "'x'" } }]);
    const id = created.body.automation.id as string;
    const update = (target: string, body: unknown) =>
      request(service.server)
        .post(`/api/v1/automations/${target}`)
        .set('Authorization', `Bearer ${token}`)
        .send(body as object);
    const bad = {
      automation: { displayName: '', steps: [{ id: 'x', wait: { duration: '1s' }, extra: 1 }] },
      updateMask: 'displayName,steps',
    };
    const refused = [
      { field: 'automation.displayName', description: 'must be a non-empty string of at most 200 characters' },
      { field: 'steps[0].extra', description: 'step "x": unknown field' },
    ];
    expect(violations(await update(id, bad))).toEqual(refused);
    expect(violations(await update('no-such-automation', bad))).toEqual(refused);
    expect(
      (await update('no-such-automation', { automation: { displayName: 'fine' }, updateMask: 'displayName' })).status,
    ).toBe(404);
    const after = await request(service.server)
      .get(`/api/v1/automations/${id}`)
      .set('Authorization', `Bearer ${token}`);
    expect([after.headers.etag, after.body.automation.displayName, after.body.automation.steps]).toEqual([
      created.headers.etag,
      'Steps',
      [{ id: 'keep', log: { message: "'x'" } }],
    ]);
  });
});
