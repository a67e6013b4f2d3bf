/**
 * Tracing end to end (docs/operations.md#tracing): the OpenTelemetry SDK started in this process as
 * `npm start` starts it, exporting through the allowlist to an in-memory exporter; each exported
 * batch is serialised with OTLP's own JSON serialiser, so the test reads what a collector would
 * receive. A real Temporal dev server, a real worker, a real store and a real HTTP receiver.
 * - A signed webhook with a `traceparent` gives one trace under the sender's span: the webhook's
 *   server span, the workflow start, the run, one span per step, and the callWebhook client span,
 *   whose `traceparent` the receiver saw; the run's detail names the trace.
 * - Nothing exported holds a secret, a payload value, a header value, a path or a query.
 * - A refused delivery is one server span with its reason; an invalid `traceparent` starts a trace.
 * - A run approved after its worker was replaced continues the same trace.
 */
import request from 'supertest';
import { randomBytes, randomUUID } from 'node:crypto';
import { trace } from '@opentelemetry/api';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { JsonTraceSerializer } from '@opentelemetry/otlp-transformer';
import type { NativeConnection, Worker } from '@temporalio/worker';
import { deliver, hmacEvent, listenerPath, startStack, type Stack } from '../helpers/stack';
import { startReceiver, type Receiver } from '../helpers/receiver';
import { connectNative, testCodec, testTemporal, testWorkflowBundle } from '../helpers/temporal';
import { until } from '../helpers/wait';
import { startTracing, type Tracing } from '../../src/tracing/sdk';
import { createAutomationWorker } from '../../src/temporal/worker';
import { createActivities } from '../../activities';

/** Values that must never leave the process in a span. */
const SECRETS = {
  apiKey: `sk_live_${randomBytes(12).toString('hex')}`,
  ssn: `SSN-${randomBytes(6).toString('hex')}`,
  token: `tok_${randomBytes(10).toString('hex')}`,
  pathPart: `path${randomBytes(6).toString('hex')}`,
  queryPart: `q${randomBytes(6).toString('hex')}`,
};

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: Array<{ key: string; value: Record<string, unknown> }>;
  events: Array<{ name: string; attributes: Array<{ key: string }> }>;
  status: { code?: number };
}

/** What a collector receives for these spans: OTLP's JSON, and its spans flattened. */
function otlp(spans: ReadableSpan[]): { text: string; spans: OtlpSpan[] } {
  const text = new TextDecoder().decode(JsonTraceSerializer.serializeRequest(spans));
  const body = JSON.parse(text) as {
    resourceSpans: Array<{ scopeSpans: Array<{ spans: OtlpSpan[] }> }>;
  };
  return { text, spans: body.resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans)) };
}

function attr(span: OtlpSpan, key: string): unknown {
  const value = span.attributes.find((a) => a.key === key)?.value;
  return value === undefined ? undefined : Object.values(value)[0];
}

describe('tracing', () => {
  let exported: InMemorySpanExporter;
  let tracing: Tracing;
  let stack: Stack;
  let receiver: Receiver;

  beforeAll(async () => {
    exported = new InMemorySpanExporter();
    tracing = startTracing({ OTEL_SERVICE_NAME: 'tracing-test' }, exported);
    receiver = await startReceiver(() => ({ status: 200, body: { ok: true } }));
    stack = await startStack({ tracing: { processor: tracing.processor, resource: tracing.resource } });
  });
  afterAll(async () => {
    await stack?.close();
    await receiver?.close();
    await tracing?.shutdown();
  });

  const api = () => request(stack.service.server);
  const auth = (req: request.Test) => req.set('Authorization', `Bearer ${stack.adminToken}`);

  /** The exported spans of one trace, once `expected` of them arrived. */
  async function traceSpans(traceId: string, expected: (spans: OtlpSpan[]) => boolean): Promise<OtlpSpan[]> {
    let spans: OtlpSpan[] = [];
    await until(async () => {
      await tracing.forceFlush();
      spans = otlp(exported.getFinishedSpans()).spans.filter((s) => s.traceId === traceId);
      return expected(spans);
    }, `the spans of trace ${traceId}`);
    return spans;
  }

  it('continues the sender’s trace through the start, the run and its steps to the receiver; no secret is exported', async () => {
    await auth(api().post('/api/v1/secrets'))
      .send({ name: 'hook_key', value: SECRETS.apiKey, allowedOrigins: [receiver.origin] })
      .expect(200);
    const created = await stack.createAutomation({
      displayName: 'traced',
      trigger: { incomingWebhook: { authMethod: 'HMAC' } },
      steps: [
        { id: 'vars', setVariables: { who: 'ctx.trigger.ssn' } },
        {
          id: 'hook',
          retry: { maximumAttempts: 1 },
          callWebhook: {
            url: `'${receiver.origin}/hooks/${SECRETS.pathPart}?k=${SECRETS.queryPart}'`,
            body: { who: 'ctx.steps.vars.who', token: 'ctx.trigger.token' },
            headers: { Authorization: "'Bearer ' + secrets.hook_key" },
          },
        },
      ],
    });
    const senderTrace = randomBytes(16).toString('hex');
    const senderSpan = randomBytes(8).toString('hex');
    const event = hmacEvent(created.signingSecret!, { ssn: SECRETS.ssn, token: SECRETS.token });
    const res = await deliver(stack, listenerPath(created.automation), {
      ...event,
      headers: { ...event.headers, traceparent: `00-${senderTrace}-${senderSpan}-01`, tracestate: 'vendor=abc' },
    });
    expect(res.status).toBe(200);
    const executionId = res.body.executionId as string;
    await stack.client.workflow.getHandle(executionId).result();

    const spans = await traceSpans(senderTrace, (all) => all.some((s) => s.name === 'RunWorkflow:automation'));
    const byId = new Map(spans.map((s) => [s.spanId, s]));
    const parentOf = (span: OtlpSpan) => (span.parentSpanId ? byId.get(span.parentSpanId) : undefined);
    const one = (predicate: (s: OtlpSpan) => boolean, what: string) => {
      const found = spans.filter(predicate);
      expect({ what, count: found.length }).toEqual({ what, count: 1 });
      return found[0]!;
    };

    const server = one((s) => s.name === 'POST /api/v1/webhooks/incoming/{listener_id}', 'server span');
    expect(server.parentSpanId).toBe(senderSpan);
    expect(attr(server, 'http.route')).toBe('/api/v1/webhooks/incoming/{listener_id}');
    expect(attr(server, 'http.response.status_code')).toBe(200);
    expect(attr(server, 'webhook.outcome')).toBe('accepted');
    expect(attr(server, 'webhook.event_id')).toBe(event.eventId);
    expect(attr(server, 'automation.id')).toBe(created.automation.id);

    const start = one((s) => s.name === 'StartWorkflow:automation', 'workflow start');
    expect(parentOf(start)).toBe(server);
    const run = one((s) => s.name === 'RunWorkflow:automation', 'run');
    expect(parentOf(run)).toBe(start);
    expect(attr(run, 'execution.id')).toBe(executionId);
    expect(attr(run, 'automation.version')).toBe(created.automation.version);

    const vars = one((s) => attr(s, 'step.id') === 'vars', 'step vars');
    const hook = one((s) => attr(s, 'step.id') === 'hook', 'step hook');
    for (const step of [vars, hook]) {
      expect(parentOf(step)).toBe(run);
      expect(attr(step, 'step.status')).toBe('DONE');
    }
    expect(attr(hook, 'step.kind')).toBe('callWebhook');

    const client = one((s) => s.kind === 3 && s.name === 'POST', 'client span');
    // client ← RunActivity:callWebhook ← StartActivity:callWebhook ← the step
    expect(parentOf(parentOf(parentOf(client)!)!)).toBe(hook);
    expect(attr(client, 'server.address')).toBe('127.0.0.1');
    expect(attr(client, 'http.response.status_code')).toBe(200);
    expect(receiver.received.at(-1)!.headers.traceparent).toBe(`00-${senderTrace}-${client.spanId}-01`);
    expect(receiver.received.at(-1)!.headers.tracestate).toBe('vendor=abc');

    const detail = await auth(api().get(`/api/v1/automation_executions/${encodeURIComponent(executionId)}`));
    expect(detail.body.execution.traceId).toBe(senderTrace);

    // An API request: its server span names the route's template and the actor's kind, never the token.
    const apiTrace = randomBytes(16).toString('hex');
    await auth(api().get(`/api/v1/automations/${created.automation.id}?view=${SECRETS.queryPart}`))
      .set('traceparent', `00-${apiTrace}-${randomBytes(8).toString('hex')}-01`)
      .expect(200);
    const [apiSpan] = await traceSpans(apiTrace, (all) => all.length > 0);
    expect([apiSpan!.name, attr(apiSpan!, 'http.route'), attr(apiSpan!, 'actor.kind')]).toEqual([
      'GET /api/v1/automations/:id',
      '/api/v1/automations/:id',
      'client',
    ]);
    expect(attr(apiSpan!, 'http.response.status_code')).toBe(200);

    // A library's automatic instrumentation (as @opentelemetry/instrumentation-http or -pg would record
    // them): the same allowlist decides what of it leaves.
    const library = trace.getTracer('@opentelemetry/instrumentation-http');
    const leaky = library.startSpan(`POST /hooks/${SECRETS.pathPart}?k=${SECRETS.queryPart}`, {
      attributes: {
        'http.request.method': 'POST',
        'url.full': `${receiver.origin}/hooks/${SECRETS.pathPart}?k=${SECRETS.queryPart}`,
        'http.target': `/hooks/${SECRETS.pathPart}`,
        'http.request.header.authorization': [`Bearer ${SECRETS.apiKey}`],
        'db.statement': `SELECT '${SECRETS.ssn}'`,
      },
    });
    leaky.addEvent('exception', { 'exception.type': 'Error', 'exception.message': `token ${SECRETS.token}` });
    leaky.setStatus({ code: 2, message: SECRETS.token });
    leaky.end();
    await tracing.forceFlush();

    // Every exported span, whole, as a collector gets it.
    const { text } = otlp(exported.getFinishedSpans());
    for (const [name, value] of Object.entries(SECRETS))
      expect({ name, found: text.includes(value) }).toEqual({ name, found: false });
    expect(text).not.toContain(created.signingSecret!);
    // The listener id (a path segment) only inside the execution id, which names the run.
    expect(text.split(executionId).join('')).not.toContain(created.automation.trigger.incomingWebhook.listenerId);
    expect(text).not.toContain(event.headers['webhook-signature'] ?? event.headers['Webhook-Signature'] ?? '\u0000');
    expect(text).not.toContain(stack.adminToken);
  });

  it('a refused delivery is its server span with its reason and nothing under it; an invalid traceparent starts a trace', async () => {
    const created = await stack.createAutomation({
      displayName: 'refused',
      trigger: { incomingWebhook: { authMethod: 'HMAC' } },
      steps: [{ id: 'vars', setVariables: { a: '1' } }],
    });
    const refusedTrace = randomBytes(16).toString('hex');
    const bad = hmacEvent('whsec_' + randomBytes(24).toString('base64'), { ssn: SECRETS.ssn });
    const refused = await deliver(stack, listenerPath(created.automation), {
      ...bad,
      headers: { ...bad.headers, traceparent: `00-${refusedTrace}-${randomBytes(8).toString('hex')}-01` },
    });
    expect(refused.status).toBe(401);
    const spans = await traceSpans(refusedTrace, (all) => all.length > 0);
    expect(spans.map((s) => [s.name, attr(s, 'http.response.status_code'), attr(s, 'webhook.outcome')])).toEqual([
      ['POST /api/v1/webhooks/incoming/{listener_id}', 401, 'signature_mismatch'],
    ]);

    const good = hmacEvent(created.signingSecret!, {});
    const invalid = await deliver(stack, listenerPath(created.automation), {
      ...good,
      headers: { ...good.headers, traceparent: `00-${'0'.repeat(32)}-${randomBytes(8).toString('hex')}-01` },
    });
    expect(invalid.status).toBe(200);
    const detail = await auth(
      api().get(`/api/v1/automation_executions/${encodeURIComponent(invalid.body.executionId as string)}`),
    );
    expect(detail.body.execution.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(detail.body.execution.traceId).not.toBe('0'.repeat(32));
    const server = (await traceSpans(detail.body.execution.traceId, (all) => all.length > 0)).find(
      (s) => s.name === 'POST /api/v1/webhooks/incoming/{listener_id}',
    );
    expect(server?.parentSpanId ?? '').toBe('');
  });

  it('a run approved after its worker was replaced continues its trace', async () => {
    const temporal = await testTemporal();
    const startWorker = async (): Promise<{ worker: Worker; connection: NativeConnection; running: Promise<void> }> => {
      const connection = await connectNative(temporal.address);
      const bundle = testWorkflowBundle();
      const worker = await createAutomationWorker({
        connection,
        namespace: temporal.namespace,
        taskQueue: stack.taskQueue,
        db: stack.service.deps.db,
        activities: (engine) => createActivities({ db: stack.service.deps.db, allowPrivateOutbound: true, engine }),
        codec: testCodec(),
        ...(bundle ? { bundle } : {}),
        maxCachedWorkflows: 0,
        tracing: { processor: tracing.processor, resource: tracing.resource },
      });
      return { worker, connection, running: worker.run() };
    };
    const created = await stack.createAutomation({
      displayName: 'approval traced',
      trigger: { incomingWebhook: { authMethod: 'HMAC' } },
      steps: [
        { id: 'mgr', waitForApproval: { timeout: '86400s' } },
        { id: 'after', setVariables: { done: 'true' } },
      ],
    });
    const senderTrace = randomBytes(16).toString('hex');
    const event = hmacEvent(created.signingSecret!, { eventOf: randomUUID() });
    const res = await deliver(stack, listenerPath(created.automation), {
      ...event,
      headers: { ...event.headers, traceparent: `00-${senderTrace}-${randomBytes(8).toString('hex')}-01` },
    });
    expect(res.status).toBe(200);
    const executionId = res.body.executionId as string;
    const runPath = `/api/v1/automation_executions/${encodeURIComponent(executionId)}`;
    await until(async () => {
      const detail = await auth(api().get(runPath));
      return detail.body.execution?.steps?.[0]?.status === 'WAITING_FOR_APPROVAL';
    }, 'the approval wait');
    // The stack's worker runs it until here; then only a new worker is left to resume it.
    await stack.stopWorker();
    const second = await startWorker();
    try {
      await auth(api().post(`${runPath}/steps/mgr/approve`))
        .send({})
        .expect(200);
      await stack.client.workflow.getHandle(executionId).result();
      const spans = await traceSpans(senderTrace, (all) => all.some((s) => s.name === 'RunWorkflow:automation'));
      const run = spans.find((s) => s.name === 'RunWorkflow:automation')!;
      const steps = spans.filter((s) => attr(s, 'step.id') !== undefined);
      expect(steps.map((s) => [attr(s, 'step.id'), attr(s, 'step.status'), s.parentSpanId])).toEqual(
        expect.arrayContaining([
          ['mgr', 'DONE', run.spanId],
          ['after', 'DONE', run.spanId],
        ]),
      );
      expect(steps).toHaveLength(2);
    } finally {
      second.worker.shutdown();
      await second.running;
      await second.connection.close();
    }
  });
});
