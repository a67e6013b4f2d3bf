/**
 * Two API processes on one store and one task queue, for what must be counted across API processes
 * (a rate limit, a circuit breaker): the stack (with its worker) and a second API service on the
 * same store, both sealing with one key. `otherApi()` is the second API as a sender reaches it: on
 * PostgreSQL a real process of its own (`tsx src/main.ts api`) on the same schema, Temporal and
 * sealing key; on PGlite, which lives inside one process, the in-process second service on the
 * same store object.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { SecretBox } from '../../src/crypto/secret-box';
import { openDb, type Db } from '../../src/store/db';
import type { DatabaseTarget } from './databases';
import { PATIENT_START_TIMEOUT_MS, startStack, type Stack } from './stack';
import { startTestService, type TestService } from './test-service';
import { spawnService, waitForHttp } from './processes';
import { reservedPort } from './ports';
import { testTemporal } from './temporal';

export interface OtherApi {
  post(path: string, event: { headers: Record<string, string>; body: string }): Promise<request.Response>;
  /** Its delivery log written: in process, flushed now; a process of its own writes it by its own timer (wait for the entry). */
  flushed(): Promise<void>;
  stop(): Promise<void>;
}

export interface TwoApis {
  stack: Stack;
  /** The second API service, in this process, on the stack's store. */
  second: TestService;
  otherApi(): Promise<OtherApi>;
  close(): Promise<void>;
}

/** A database two services can open independently: PostgreSQL gets a schema of its own; PGlite is one process's store, shared. */
async function sharedDb(
  target: DatabaseTarget,
  name: string,
): Promise<{ schema?: string; open(): Promise<Db>; drop(): Promise<void> }> {
  if (!target.url) {
    const db = await openDb({});
    return { open: async () => db, drop: () => db.close() };
  }
  const schema = `t_${name}_${randomBytes(5).toString('hex')}`;
  const opened: Db[] = [];
  return {
    schema,
    async open() {
      const db = await openDb({ databaseUrl: target.url, schema });
      opened.push(db);
      return db;
    },
    async drop() {
      await opened[0]?.exec(`DROP SCHEMA ${schema} CASCADE`).catch(() => undefined);
      for (const db of opened) await db.close().catch(() => undefined);
    },
  };
}

/** `name` marks what it leaves behind: the PostgreSQL schema (t_<name>_…) and the other process's data directory. */
export async function startTwoApis(target: DatabaseTarget, name: string): Promise<TwoApis> {
  // The sealing key, so that an API process of its own (the PostgreSQL case) reads the same secrets.
  const secretKey = randomBytes(32);
  const store = await sharedDb(target, name);
  let stack: Stack | undefined;
  let second: TestService | undefined;
  const close = async () => {
    await second?.close().catch(() => undefined);
    await stack?.close().catch(() => undefined);
    await store.drop();
  };
  try {
    stack = await startStack({ db: await store.open(), deps: { secretBox: new SecretBox(secretKey) } });
    // A second API process on the same store and Temporal (its own listener cache, its own pool on PostgreSQL).
    second = await startTestService({
      db: await store.open(),
      temporal: { client: stack.client, taskQueue: stack.taskQueue, startTimeoutMs: PATIENT_START_TIMEOUT_MS },
      deps: { secretBox: stack.service.deps.secretBox },
    });
  } catch (err) {
    await close();
    throw err;
  }
  const started = { stack, second };

  async function otherApi(): Promise<OtherApi> {
    if (!target.url) {
      return {
        post: (p, event) => request(started.second.server).post(p).set(event.headers).send(event.body),
        flushed: async () => void (await started.second.deps.deliveryLog?.flush()),
        stop: async () => undefined,
      };
    }
    const port = await reservedPort();
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `${name}-api-`));
    const dbUrl = new URL(target.url);
    dbUrl.searchParams.set('options', `-c search_path=${store.schema}`);
    const temporal = await testTemporal();
    const api = spawnService('api', {
      PORT: String(port),
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      DATABASE_URL: dbUrl.toString(),
      SECRET_KEY: secretKey.toString('hex'),
      TEMPORAL_ADDRESS: temporal.address,
      TEMPORAL_NAMESPACE: temporal.namespace,
      TEMPORAL_TASK_QUEUE: started.stack.taskQueue,
      PAYLOAD_KEYS: process.env.TEST_PAYLOAD_KEYS ?? '',
      LOG_LEVEL: 'warn',
    });
    const baseUrl = `http://127.0.0.1:${port}`;
    await waitForHttp(`${baseUrl}/auth/v1/jwks`, 120_000, api);
    return {
      post: (p, event) => request(baseUrl).post(p).set(event.headers).send(event.body),
      flushed: async () => undefined,
      stop: async () => {
        await api.kill('SIGTERM');
        fs.rmSync(dataDir, { recursive: true, force: true });
      },
    };
  }

  return { ...started, otherApi, close };
}
