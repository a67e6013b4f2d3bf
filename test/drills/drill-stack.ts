/**
 * The production shape as every drill starts it: a PostgreSQL of the drill's own, `startProdStack()`
 * on it (a bootstrap client of the drill's own, payloads encrypted with a fresh key), a bearer token
 * for that client through the entry, and a Temporal client over mutual TLS that decodes the stack's
 * payloads. `stop()` undoes all of it, whatever was reached.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import {
  EncryptionCodec,
  encryptedDataConverter,
  newPayloadKeyEntry,
  parsePayloadKeys,
} from '../../src/temporal/codec';
import { startProdStack, type ProdStack } from '../../scripts/stack-prod';
import { OwnPostgres } from './postgres';
import { callApi } from '../helpers/api-call';
import { sleep } from '../helpers/wait';

export interface DrillStack {
  pg: OwnPostgres;
  stack: ProdStack;
  stateDir: string;
  /** The entry's (nginx's) port on 127.0.0.1. */
  entryPort: number;
  /** A bearer token of the drill's bootstrap client (every scope). */
  token: string;
  temporalConnection: Connection;
  /** A client of the stack's namespace that decodes its encrypted payloads. */
  temporal: Client;
  codec: EncryptionCodec;
  /** Seconds from the stack's start (its PostgreSQL already up) to an entry that answers. */
  startSeconds: number;
}

/** What a drill's `afterAll` stops: each part that was started, in reverse order. */
export interface DrillStackParts {
  pg?: OwnPostgres;
  stack?: ProdStack;
  stateDir?: string;
  temporalConnection?: Connection;
}

/**
 * Starts the stack. `name` names the state folder (`drill-<name>-…`); `beforeStart` runs once the
 * drill's PostgreSQL is up and before the stack touches it; `env` adds variables the stack passes
 * through to its APIs and workers (scripts/stack-prod.ts: PASSED_THROUGH). `parts` is filled as each part starts, so
 * that a failed start can still be stopped by `stopDrillStack(parts)`.
 */
export async function startDrillStack(
  name: string,
  parts: DrillStackParts,
  beforeStart?: (pg: OwnPostgres) => Promise<void>,
  env: Record<string, string> = {},
): Promise<DrillStack> {
  const pg = (parts.pg = await OwnPostgres.create());
  if (beforeStart) await beforeStart(pg);
  const began = Date.now();
  const stateDir = (parts.stateDir = fs.mkdtempSync(path.join(os.tmpdir(), `drill-${name}-`)));
  const clientId = `drill-${randomBytes(4).toString('hex')}`;
  const clientSecret = randomBytes(32).toString('base64url');
  const payloadKeys = newPayloadKeyEntry();
  const stack = (parts.stack = await startProdStack({
    adminUrl: pg.adminUrl,
    stateDir,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      BOOTSTRAP_CLIENT_ID: clientId,
      BOOTSTRAP_CLIENT_SECRET: clientSecret,
      LOG_LEVEL: 'warn',
      PAYLOAD_KEYS: payloadKeys,
      ...env,
    },
    log: (line) => console.log(`[stack] ${line}`),
  }));
  const startSeconds = Math.round((Date.now() - began) / 1000);
  const form = new URLSearchParams({
    grant_type: 'client_credentials',
    client_id: clientId,
    client_secret: clientSecret,
  });
  const answer = await fetch(`${stack.entryUrl}/auth/v1/token`, { method: 'POST', body: form });
  if (answer.status !== 200) throw new Error(`the drill's token: ${answer.status} ${await answer.text()}`);
  const token = ((await answer.json()) as { access_token: string }).access_token;
  // The frontend requires mutual TLS: the drill connects with the APIs' client certificate.
  const temporalConnection = (parts.temporalConnection = await Connection.connect(
    stack.temporalConnectionOptions('api'),
  ));
  // Payloads are encrypted in Temporal: the drill reads runs with the stack's own keys.
  const codec = new EncryptionCodec(parsePayloadKeys(payloadKeys));
  const temporal = new Client({
    connection: temporalConnection,
    namespace: 'default',
    dataConverter: encryptedDataConverter(codec),
  });
  return {
    pg,
    stack,
    stateDir,
    entryPort: Number(new URL(stack.entryUrl).port),
    token,
    temporalConnection,
    temporal,
    codec,
    startSeconds,
  };
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Json = Record<string, any>;

/**
 * An API call through the entry, retried (every 0.5 s, about 2 minutes) while the stack is being
 * killed: connection refused, a 502 or 503 of the entry. A 4xx is the answer and is thrown at once.
 */
export async function persistently(
  entryPort: number,
  token: string,
  method: 'GET' | 'POST',
  pathname: string,
  body?: unknown,
): Promise<Json> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await callApi(entryPort, token, method, pathname, body);
    } catch (err) {
      if (attempt > 240 || /: 4\d\d /.test(String(err))) throw err;
      await sleep(500);
    }
  }
}

export async function stopDrillStack(parts: DrillStackParts): Promise<void> {
  await parts.temporalConnection?.close().catch(() => undefined);
  await parts.stack?.stop().catch(() => undefined);
  parts.pg?.destroy();
  if (parts.stateDir) fs.rmSync(parts.stateDir, { recursive: true, force: true });
}
