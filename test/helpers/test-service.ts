/**
 * A real service instance for HTTP tests: the real Koa app on a real store (PGlite in memory, or a
 * fresh PostgreSQL schema), real access tokens. Drive it with supertest(ctx.server). Every response
 * it sends is checked against its OpenAPI document (./contract.ts): a drift fails the test.
 */
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import { createApp } from '../../src/http/app';
import { composeApp, type AppInputs } from '../../src/compose';
import type { EventDispatcher } from '../../src/delivery/event-dispatcher';
import { Metrics } from '../../src/http/metrics';
import { SecretBox } from '../../src/crypto/secret-box';
import type { AppDeps } from '../../src/http/context';
import { loadConfig, type Config } from '../../src/config';
import { createLogger, type Logger } from '../../src/logger';
import { createClient } from '../../src/auth/clients';
import type { Role } from '../../src/auth/roles';
import type { RunEngine } from '../../src/domain/engine';
import type { TemporalEngineOptions } from '../../src/temporal/engine';
import type { Db } from '../../src/store/db';
import { defaultTarget, openTestDb, type DatabaseTarget } from './databases';
import { testCodec } from './temporal';
import { installContractCheck } from './contract';
import { NO_TEMPORAL } from './engine';

export { NO_TEMPORAL };

export interface TestService {
  deps: AppDeps;
  /** The directory events' dispatcher, when the test asked for one (`eventDispatch`). */
  dispatcher: EventDispatcher | undefined;
  server: http.Server;
  baseUrl: string;
  /** A bearer token for a caller with these roles. */
  tokenFor(...roles: Role[]): Promise<string>;
  close(): Promise<void>;
}

export interface TestServiceOptions {
  target?: DatabaseTarget;
  db?: Db;
  /** The run engine on Temporal with these options (the store is the service's)... */
  temporal?: Omit<TemporalEngineOptions, 'db' | 'laneQueueLimit'>;
  /** ...or a fake of the test's own (default: NO_TEMPORAL, every call 503). */
  engine?: RunEngine;
  env?: Record<string, string>;
  config?: Partial<Config>;
  /** Logger of the app (default: silent). */
  logger?: Logger;
  /** Dependencies to use instead of the defaults (e.g. a `tokenGuard` the test holds). */
  deps?: Partial<AppDeps>;
  /** Bound of each /ready check (default: generous, for a loaded test machine). */
  readinessTimeoutMs?: number;
  /** The webhook receiver's clock (default: Date.now). */
  clock?: () => number;
  /** Run the directory events' dispatcher with these options (default: none, as the outbox tests read events undispatched). */
  eventDispatch?: AppInputs['eventDispatch'];
}

export async function startTestService(options: TestServiceOptions = {}): Promise<TestService> {
  const db = options.db ?? (await openTestDb(options.target ?? defaultTarget()));
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  const config = {
    ...loadConfig({ PORT: String(port), ALLOW_INSECURE_JWKS: 'true', ALLOW_PRIVATE_OUTBOUND: 'true', ...options.env }),
    ...options.config,
  };
  const secretBox = options.deps?.secretBox ?? new SecretBox(randomBytes(32));
  const deps = await composeApp({
    config,
    db,
    logger: options.logger ?? createLogger('silent'),
    secretBox,
    ...(options.temporal ? { temporal: options.temporal } : { engine: options.engine ?? NO_TEMPORAL }),
    pageTokenKey: randomBytes(32),
    metrics: new Metrics({ defaultMetrics: false }),
    ...(process.env.TEST_PAYLOAD_KEYS ? { payloadCodec: testCodec() } : {}),
    deliveryLog: { flushIntervalMs: 200 },
    eventDispatch: options.eventDispatch ?? false,
    overrides: {
      readinessTimeoutMs: options.readinessTimeoutMs ?? 60_000,
      ...(options.clock ? { clock: options.clock } : {}),
      ...options.deps,
    },
  });
  const app = createApp(deps);
  server.on('request', app.callback());
  await installContractCheck(server, port);
  return {
    deps,
    dispatcher: deps.eventDispatcher,
    server,
    baseUrl: config.baseUrl,
    // A real API client per call: tokens of deleted (or never made) clients are refused.
    tokenFor: async (...roles: Role[]) => {
      const { client } = await createClient(db, deps.secretBox, { displayName: `test ${roles.join(' ')}`, roles });
      return deps.tokens.issue(client.clientId, roles);
    },
    async close() {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await deps.close();
      if (!options.db) await db.close();
    },
  };
}
