/**
 * Tracing into a real Jaeger (the binary `npm run stack:prod` runs, test/helpers/jaeger.ts): the
 * SDK configured by OTEL_EXPORTER_OTLP_ENDPOINT alone, exporting OTLP over HTTP; the test reads the
 * traces back from Jaeger's query API, as the operator's tools do.
 * - A signed webhook with a `traceparent` is one trace whose root is the sender's span: the webhook
 *   span, the start, the run and every step under it; the callWebhook receiver saw a `traceparent`
 *   of that trace; nothing Jaeger stored holds a secret or payload value of the test.
 * - A refused delivery is one span with its reason.
 * - A run approved after its worker was replaced has its later steps in the same trace.
 */
import request from 'supertest';
import { randomBytes } from 'node:crypto';
import type { NativeConnection, Worker } from '@temporalio/worker';
import { deliver, hmacEvent, listenerPath, startStack, type Stack } from '../helpers/stack';
import { startReceiver, type Receiver } from '../helpers/receiver';
import { connectNative, testCodec, testTemporal, testWorkflowBundle } from '../helpers/temporal';
import { poll, until } from '../helpers/wait';
import {
  parentOf,
  spanTree,
  startJaeger,
  tagOf,
  type Jaeger,
  type JaegerSpan,
  type JaegerTrace,
} from '../helpers/jaeger';
import { startTracing, type Tracing } from '../../src/tracing/sdk';
import { createAutomationWorker } from '../../src/temporal/worker';
import { createActivities } from '../../activities';

const SECRETS = {
  apiKey: `sk_live_${randomBytes(12).toString('hex')}`,
  ssn: `SSN-${randomBytes(6).toString('hex')}`,
  pathPart: `path${randomBytes(6).toString('hex')}`,
  queryPart: `q${randomBytes(6).toString('hex')}`,
};
const WEBHOOK_SPAN = 'POST /api/v1/webhooks/incoming/{listener_id}';

describe('tracing into Jaeger', () => {
  let jaeger: Jaeger;
  let tracing: Tracing;
  let stack: Stack;
  let receiver: Receiver;
  const saved = { ...process.env };

  beforeAll(async () => {
    jaeger = await startJaeger();
    // OpenTelemetry's own variables, read by the SDK and its exporter as in `npm start`.
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = jaeger.otlpEndpoint;
    process.env.OTEL_SERVICE_NAME = 'automation-governance';
    tracing = startTracing(process.env);
    receiver = await startReceiver(() => ({ status: 200, body: { ok: true } }));
    stack = await startStack({ tracing: { processor: tracing.processor, resource: tracing.resource } });
  });
  afterAll(async () => {
    await stack?.close();
    await receiver?.close();
    await tracing?.shutdown();
    await jaeger?.close();
    process.env = saved;
  });

  const api = () => request(stack.service.server);
  const auth = (req: request.Test) => req.set('Authorization', `Bearer ${stack.adminToken}`);
  const traceparent = (traceId: string, spanId = randomBytes(8).toString('hex')) => `00-${traceId}-${spanId}-01`;

  /** The trace as Jaeger serves it, once `complete` holds for it. */
  async function jaegerTrace(traceId: string, complete: (spans: JaegerSpan[]) => boolean): Promise<JaegerTrace> {
    return poll(
      async () => {
        await tracing.forceFlush();
        return jaeger.trace(traceId);
      },
      (found) => found !== undefined && complete(found.spans),
      { timeoutMs: 30_000, intervalMs: 200, what: `trace ${traceId} in Jaeger` },
    ) as Promise<JaegerTrace>;
  }

  it('one trace from the sender’s span to the receiver, with nothing secret in it', async () => {
    await auth(api().post('/api/v1/secrets'))
      .send({ name: 'jaeger_key', value: SECRETS.apiKey, allowedOrigins: [receiver.origin] })
      .expect(200);
    const created = await stack.createAutomation({
      displayName: 'traced into jaeger',
      trigger: { incomingWebhook: { authMethod: 'HMAC' } },
      steps: [
        { id: 'vars', setVariables: { who: 'ctx.trigger.ssn' } },
        {
          id: 'hook',
          retry: { maximumAttempts: 1 },
          callWebhook: {
            url: `'${receiver.origin}/hooks/${SECRETS.pathPart}?k=${SECRETS.queryPart}'`,
            body: { who: 'ctx.steps.vars.who' },
            headers: { Authorization: "'Bearer ' + secrets.jaeger_key" },
          },
        },
      ],
    });
    const senderTrace = randomBytes(16).toString('hex');
    const senderSpan = randomBytes(8).toString('hex');
    const event = hmacEvent(created.signingSecret!, { ssn: SECRETS.ssn });
    const res = await deliver(stack, listenerPath(created.automation), {
      ...event,
      headers: { ...event.headers, traceparent: traceparent(senderTrace, senderSpan) },
    });
    expect(res.status).toBe(200);
    const executionId = res.body.executionId as string;
    await stack.client.workflow.getHandle(executionId).result();

    const trace = await jaegerTrace(senderTrace, (spans) =>
      spans.some((s) => s.operationName === 'RunWorkflow:automation'),
    );
    const byId = new Map(trace.spans.map((s) => [s.spanID, s]));
    const named = (name: string) => trace.spans.filter((s) => s.operationName === name);
    const parent = (span: JaegerSpan) => byId.get(parentOf(span) ?? '');

    const [server] = named(WEBHOOK_SPAN);
    expect(named(WEBHOOK_SPAN)).toHaveLength(1);
    expect(parentOf(server!)).toBe(senderSpan); // the root: under the sender's span
    expect(tagOf(server!, 'webhook.outcome')).toBe('accepted');
    const [start] = named('StartWorkflow:automation');
    expect(parent(start!)).toBe(server);
    const [run] = named('RunWorkflow:automation');
    expect(parent(run!)).toBe(start);
    const steps = trace.spans.filter((s) => tagOf(s, 'step.id') !== undefined);
    expect(steps.map((s) => [tagOf(s, 'step.id'), parent(s)?.spanID]).sort()).toEqual([
      ['hook', run!.spanID],
      ['vars', run!.spanID],
    ]);
    const client = trace.spans.find((s) => s.operationName === 'POST' && tagOf(s, 'span.kind') === 'client');
    expect(receiver.received.at(-1)!.headers.traceparent).toBe(`00-${senderTrace}-${client!.spanID}-01`);
    expect(Object.values(trace.processes).map((p) => p.serviceName)).toContain('automation-governance');

    const stored = JSON.stringify(trace);
    for (const [name, value] of Object.entries(SECRETS))
      expect({ name, found: stored.includes(value) }).toEqual({ name, found: false });
    expect(stored).not.toContain(created.signingSecret!);
    console.log(`span tree of trace ${senderTrace}, from Jaeger's query API:\n${spanTree(trace)}`);
  });

  it('a refused delivery is one span with its reason', async () => {
    const created = await stack.createAutomation({
      displayName: 'refused into jaeger',
      trigger: { incomingWebhook: { authMethod: 'HMAC' } },
      steps: [{ id: 'vars', setVariables: { a: '1' } }],
    });
    const traceId = randomBytes(16).toString('hex');
    const bad = hmacEvent('whsec_' + randomBytes(24).toString('base64'), { ssn: SECRETS.ssn });
    const res = await deliver(stack, listenerPath(created.automation), {
      ...bad,
      headers: { ...bad.headers, traceparent: traceparent(traceId) },
    });
    expect(res.status).toBe(401);
    const trace = await jaegerTrace(traceId, (spans) => spans.length > 0);
    expect(
      trace.spans.map((s) => [s.operationName, tagOf(s, 'webhook.outcome'), tagOf(s, 'http.response.status_code')]),
    ).toEqual([[WEBHOOK_SPAN, 'signature_mismatch', 401]]);
  });

  it('a run approved after its worker was replaced has its later steps in the same trace', async () => {
    const temporal = await testTemporal();
    const created = await stack.createAutomation({
      displayName: 'approval into jaeger',
      trigger: { incomingWebhook: { authMethod: 'HMAC' } },
      steps: [
        { id: 'mgr', waitForApproval: { timeout: '86400s' } },
        { id: 'after', setVariables: { done: 'true' } },
      ],
    });
    const traceId = randomBytes(16).toString('hex');
    const event = hmacEvent(created.signingSecret!, {});
    const res = await deliver(stack, listenerPath(created.automation), {
      ...event,
      headers: { ...event.headers, traceparent: traceparent(traceId) },
    });
    expect(res.status).toBe(200);
    const runPath = `/api/v1/automation_executions/${encodeURIComponent(res.body.executionId as string)}`;
    await until(
      async () => (await auth(api().get(runPath))).body.execution?.steps?.[0]?.status === 'WAITING_FOR_APPROVAL',
      'the approval wait',
    );
    await stack.stopWorker();
    const connection: NativeConnection = await connectNative(temporal.address);
    const bundle = testWorkflowBundle();
    const worker: Worker = await createAutomationWorker({
      connection,
      namespace: temporal.namespace,
      taskQueue: stack.taskQueue,
      db: stack.service.deps.db,
      activities: (engine) => createActivities({ db: stack.service.deps.db, allowPrivateOutbound: true, engine }),
      codec: testCodec(),
      ...(bundle ? { bundle } : {}),
      tracing: { processor: tracing.processor, resource: tracing.resource },
    });
    const running = worker.run();
    try {
      await auth(api().post(`${runPath}/steps/mgr/approve`))
        .send({})
        .expect(200);
      await stack.client.workflow.getHandle(res.body.executionId as string).result();
      const trace = await jaegerTrace(traceId, (spans) =>
        spans.some((s) => s.operationName === 'RunWorkflow:automation'),
      );
      const run = trace.spans.find((s) => s.operationName === 'RunWorkflow:automation')!;
      const steps = trace.spans.filter((s) => tagOf(s, 'step.id') !== undefined);
      expect(steps.map((s) => [tagOf(s, 'step.id'), tagOf(s, 'step.status'), parentOf(s)]).sort()).toEqual([
        ['after', 'DONE', run.spanID],
        ['mgr', 'DONE', run.spanID],
      ]);
    } finally {
      worker.shutdown();
      await running;
      await connection.close();
    }
  });
});
