/**
 * Payloads encrypted in Temporal: a marker sent in a webhook body is not in the raw history (read
 * with the Temporal CLI, which has no key), the executions API still shows the decoded step
 * outputs, the codec endpoint decodes for authorised callers only (the CLI through it shows the
 * marker again), and after a key rotation the old runs stay readable.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import request from 'supertest';
import { Client } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import { startStack, hmacEvent, deliver, listenerPath, type Stack } from '../helpers/stack';
import { testCodec, testTemporal, connectClient } from '../helpers/temporal';
import {
  EncryptionCodec,
  encryptedDataConverter,
  KEY_ID_METADATA,
  newPayloadKeyEntry,
  parsePayloadKeys,
} from '../../src/temporal/codec';
import { createTemporalEngine } from '../../src/temporal/engine';
import type { RunState } from '../../src/contract/run';
import { poll } from '../helpers/wait';

const run = promisify(execFile);
type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const MARKER = `marker-${Math.random().toString(36).slice(2)}@example.com`;
const STEPS = [{ id: 'vars', setVariables: { email: 'ctx.trigger.email', upper: 'ctx.trigger.email.upperAscii()' } }];

describe('payloads encrypted in Temporal', () => {
  let stack: Stack;
  let executionId: string;
  let cli: string;
  let address: string;

  const showHistory = async (extra: string[] = []): Promise<string> =>
    (
      await run(
        cli,
        [
          'workflow',
          'show',
          '--address',
          address,
          '--namespace',
          'default',
          '--workflow-id',
          executionId,
          '--output',
          'json',
          ...extra,
        ],
        {
          maxBuffer: 16 * 1024 * 1024,
        },
      )
    ).stdout;

  beforeAll(async () => {
    const temporal = await testTemporal();
    cli = temporal.cliPath;
    address = temporal.address;
    stack = await startStack();
    const created = await stack.createAutomation({
      displayName: 'encrypted',
      trigger: { incomingWebhook: { authMethod: 'HMAC' } },
      steps: STEPS,
    });
    const res = await deliver(
      stack,
      listenerPath(created.automation),
      hmacEvent(created.signingSecret!, { email: MARKER }),
    );
    expect(res.status).toBe(200);
    executionId = res.body.executionId;
    const state: RunState = await stack.client.workflow.getHandle(executionId).result();
    expect(state.steps[0]!.output).toEqual({ email: MARKER, upper: MARKER.toUpperCase() });
  });
  afterAll(async () => stack?.close());

  it('keeps the webhook body and step outputs out of the raw history', async () => {
    const raw = await showHistory();
    expect(raw).toContain('workflowExecutionStartedEventAttributes');
    expect(raw).not.toContain(MARKER);
    expect(raw).not.toContain(MARKER.toUpperCase());
    expect(raw).not.toContain(Buffer.from(MARKER).toString('base64').slice(0, 16));
    // Payloads are marked encrypted (base64 of "binary/encrypted").
    expect(raw).toContain(Buffer.from('binary/encrypted').toString('base64'));
  });

  it('the executions API still shows the decoded step outputs (result and history)', async () => {
    const res = await request(stack.service.server)
      .get(`/api/v1/automation_executions/${encodeURIComponent(executionId)}`)
      .set('Authorization', `Bearer ${stack.adminToken}`);
    expect(res.status).toBe(200);
    expect(res.body.execution.steps[0].output).toEqual({ email: MARKER, upper: MARKER.toUpperCase() });
  });

  it('the codec endpoint decodes for a super_admin token and for loopback callers; not for other roles or origins', async () => {
    const raw = JSON.parse(await showHistory()) as Json;
    const started = (raw.events as Json[]).find((e) => e.workflowExecutionStartedEventAttributes)!;
    const payloads = started.workflowExecutionStartedEventAttributes.input.payloads as Json[];
    const server = stack.service.server;

    const decoded = await request(server)
      .post('/codec/decode')
      .set('Authorization', `Bearer ${stack.adminToken}`)
      .set('X-Namespace', 'default')
      .send({ payloads });
    expect(decoded.status).toBe(200);
    const input = defaultPayloadConverter.fromPayload({
      metadata: Object.fromEntries(
        Object.entries(decoded.body.payloads[0].metadata as Record<string, string>).map(([k, v]) => [
          k,
          Buffer.from(v, 'base64'),
        ]),
      ),
      data: Buffer.from(decoded.body.payloads[0].data, 'base64'),
    }) as Json;
    expect(input.trigger).toEqual({ email: MARKER });

    // Loopback without a token: allowed by default with the embedded dev server (the test's config).
    expect((await request(server).post('/codec/decode').send({ payloads })).status).toBe(200);
    const readOnly = await stack.service.tokenFor('read_only');
    const refused = await request(server)
      .post('/codec/decode')
      .set('Authorization', `Bearer ${readOnly}`)
      .send({ payloads });
    expect(refused.status).toBe(403);
    expect(refused.body).toEqual({ code: 7, message: expect.any(String), details: [] });
    expect(
      (await request(server).post('/codec/decode').set('Authorization', 'Bearer nonsense').send({ payloads })).status,
    ).toBe(401);
    expect(
      (await request(server).post('/codec/decode').set('Origin', 'https://evil.example').send({ payloads })).status,
    ).toBe(403);
    expect((await request(server).post('/codec/decode').set('X-Namespace', 'other').send({ payloads })).status).toBe(
      400,
    );
    expect(
      (
        await request(server)
          .post('/codec/decode')
          .send({ payloads: [{ data: '***' }] })
      ).status,
    ).toBe(400);

    // CORS: the Web UI's origin only.
    const uiOrigin = stack.service.deps.config.codec.corsOrigins[0]!;
    const preflight = await request(server)
      .options('/codec/decode')
      .set('Origin', uiOrigin)
      .set('Access-Control-Request-Method', 'POST')
      .set('Access-Control-Request-Headers', 'content-type,x-namespace');
    expect(preflight.status).toBe(204);
    expect(preflight.headers['access-control-allow-origin']).toBe(uiOrigin);
    expect(preflight.headers['access-control-allow-headers']).toMatch(/X-Namespace/i);

    // Encode then decode round trip.
    const plain = defaultPayloadConverter.toPayload('hello');
    const asJson = {
      metadata: { encoding: Buffer.from(plain.metadata!.encoding!).toString('base64') },
      data: Buffer.from(plain.data!).toString('base64'),
    };
    const encoded = await request(server)
      .post('/codec/encode')
      .set('Authorization', `Bearer ${stack.adminToken}`)
      .send({ payloads: [asJson] });
    expect(encoded.status).toBe(200);
    expect(Buffer.from(encoded.body.payloads[0].metadata.encoding, 'base64').toString()).toBe('binary/encrypted');
    const back = await request(server)
      .post('/codec/decode')
      .set('Authorization', `Bearer ${stack.adminToken}`)
      .send(encoded.body);
    expect(back.body.payloads[0]).toEqual(asJson);
  });

  it('with loopback callers not allowed, a call without a token is 401', async () => {
    const strict = await startStack({
      worker: false,
      config: { codec: { ...stack.service.deps.config.codec, allowLoopback: false } },
    });
    try {
      const res = await request(strict.service.server).post('/codec/decode').send({ payloads: [] });
      expect(res.status).toBe(401);
      expect(res.headers['www-authenticate']).toBe('Bearer');
      expect(
        (
          await request(strict.service.server)
            .post('/codec/decode')
            .set('Authorization', `Bearer ${strict.adminToken}`)
            .send({ payloads: [] })
        ).status,
      ).toBe(200);
    } finally {
      await strict.close();
    }
  });

  it('the Temporal CLI, pointed at the codec endpoint with a token, shows the decoded payloads', async () => {
    const { port } = stack.service.server.address() as { port: number };
    const decoded = JSON.parse(
      await showHistory([
        '--codec-endpoint',
        `http://127.0.0.1:${port}/codec`,
        '--codec-auth',
        `Bearer ${stack.adminToken}`,
      ]),
    ) as Json;
    const started = (decoded.events as Json[]).find((e) => e.workflowExecutionStartedEventAttributes)!;
    const input = started.workflowExecutionStartedEventAttributes.input.payloads[0] as Json;
    // Proto JSON: the decoded payload is json/plain, its bytes base64.
    expect(Buffer.from(input.metadata.encoding, 'base64').toString()).toBe('json/plain');
    expect(Buffer.from(input.data, 'base64').toString()).toContain(MARKER);
  });

  it('after a key rotation old runs stay readable, new payloads use the new key', async () => {
    const temporal = await testTemporal();
    const newest = parsePayloadKeys(newPayloadKeyEntry())[0]!;
    const oldKeys = parsePayloadKeys(process.env.TEST_PAYLOAD_KEYS!);
    const rotated = new EncryptionCodec([newest, ...oldKeys]);
    const connection = await connectClient(temporal.address);
    try {
      const client = new Client({ connection, namespace: 'default', dataConverter: encryptedDataConverter(rotated) });
      const detail = await poll(
        () => createTemporalEngine({ client, taskQueue: 'unused', db: stack.service.deps.db }).get(executionId),
        (d) => d !== undefined,
      );
      expect(detail!.steps[0]!.output).toEqual({ email: MARKER, upper: MARKER.toUpperCase() });
      const [fresh] = await rotated.encode([defaultPayloadConverter.toPayload(MARKER)]);
      expect(Buffer.from(fresh!.metadata![KEY_ID_METADATA]!).toString()).toBe(newest.id);
      expect(newest.id).not.toBe(testCodec().currentKeyId);
      // Dropping the old key too early makes the old run unreadable: keys are kept while runs are retained.
      const withoutOld = new Client({
        connection,
        namespace: 'default',
        dataConverter: encryptedDataConverter(new EncryptionCodec([newest])),
      });
      await expect(withoutOld.workflow.getHandle(executionId).result()).rejects.toThrow(/not configured/);
    } finally {
      await connection.close();
    }
  });
});
