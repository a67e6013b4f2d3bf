import { ApplicationFailure, Connection, WorkflowFailedError, Client } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { EncryptionCodec, encryptedDataConverter, parsePayloadKeys } from '../../src/temporal/codec';
import { decodePayloadsInPlace } from '../../src/temporal/payloads';
import { sleep } from './wait';
/** The real Temporal dev server that jest's globalSetup started for this run. */
export interface TestTemporal {
  address: string;
  namespace: string;
  /** Path of the Temporal CLI binary (for tests that start servers of their own). */
  cliPath: string;
}

export async function testTemporal(): Promise<TestTemporal> {
  const address = process.env.TEMPORAL_TEST_ADDRESS;
  const cliPath = process.env.TEMPORAL_TEST_CLI ?? '';
  if (!address)
    throw new Error(
      'TEMPORAL_TEST_ADDRESS is not set: run the tests with `npm test` (jest globalSetup starts Temporal)',
    );
  return { address, namespace: 'default', cliPath };
}

let codec: EncryptionCodec | undefined;

/**
 * The payload codec of this test run (keys made by globalSetup, in TEST_PAYLOAD_KEYS): every test
 * worker and client encrypts payloads as production does.
 */
export function testCodec(): EncryptionCodec {
  const keys = process.env.TEST_PAYLOAD_KEYS;
  if (!keys)
    throw new Error(
      'TEST_PAYLOAD_KEYS is not set: run the tests with `npm test` (jest globalSetup makes the payload keys)',
    );
  codec ??= new EncryptionCodec(parsePayloadKeys(keys));
  return codec;
}

/** Client options that encrypt payloads with the test run's codec: `new Client({ ..., ...testDataConverter() })`. */
export function testDataConverter(): { dataConverter: ReturnType<typeof encryptedDataConverter> } {
  return { dataConverter: encryptedDataConverter(testCodec()) };
}

/** A task queue no other test uses. */
export function uniqueTaskQueue(prefix = 'test'): string {
  return `${prefix}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
}

/** The automation workflow bundle built once by globalSetup, for Worker.create({ workflowBundle }). */
export function testWorkflowBundle(): { codePath: string } | undefined {
  const codePath = process.env.TEST_WORKFLOW_BUNDLE;
  return codePath ? { codePath } : undefined;
}

/** The ApplicationFailure a run failed with; fails the test when the run did not fail that way. */
export async function expectRunFailure(handle: { result(): Promise<unknown> }): Promise<ApplicationFailure> {
  const err = await handle.result().then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(WorkflowFailedError);
  const cause = (err as WorkflowFailedError).cause;
  expect(cause).toBeInstanceOf(ApplicationFailure);
  return cause as ApplicationFailure;
}

/**
 * A client connection to a test Temporal server. The SDK's connect gives up after a few seconds,
 * which a starved machine can exceed: retry (with a long connect timeout) until `timeoutMs`.
 */
export async function connectClient(address: string, timeoutMs = 120_000): Promise<Connection> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await Connection.connect({ address, connectTimeout: 30_000 });
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await sleep(500);
    }
  }
}

/** The worker-side (native) connection, retried the same way. */
export async function connectNative(address: string, timeoutMs = 120_000): Promise<NativeConnection> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await NativeConnection.connect({ address });
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await sleep(500);
    }
  }
}

/** A worker (native) connection and a client to the test server (namespace `default`); `close()` ends both connections. */
export async function connectTestTemporal(): Promise<{
  connection: NativeConnection;
  client: Client;
  close(): Promise<void>;
}> {
  const { address } = await testTemporal();
  const connection = await connectNative(address);
  const clientConnection = await connectClient(address);
  return {
    connection,
    client: new Client({ connection: clientConnection, namespace: 'default' }),
    async close() {
      await connection.close();
      await clientConnection.close();
    },
  };
}

/**
 * A run's whole history, payloads decoded through the tests' codec, as text: every string and byte
 * field (bytes as UTF-8), walked directly (protobuf's toJSON would base64 the bytes). For checking
 * that a value never reached the history.
 */
export async function historyText(client: Client, executionId: string): Promise<string> {
  const history = await client.workflow.getHandle(executionId).fetchHistory();
  await decodePayloadsInPlace(history, [testCodec()]);
  const parts: string[] = [];
  const work: unknown[] = [history];
  while (work.length > 0) {
    const node = work.pop();
    if (node instanceof Uint8Array) parts.push(Buffer.from(node).toString('utf8'));
    else if (typeof node === 'string') parts.push(node);
    else if (node !== null && typeof node === 'object') work.push(...Object.values(node));
  }
  return parts.join('\n');
}
