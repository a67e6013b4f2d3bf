/**
 * Mutual TLS of the production shape, by what the real server does: the Temporal frontend built by
 * scripts/prod-binaries.js, started exactly as `npm run stack:prod` starts it (deploy/temporal,
 * --env production) on a PostgreSQL database of its own with the schemas temporal-sql-tool makes.
 * Without TEMPORAL_TLS_DIR it refuses to start (no default serves plaintext); with it, it accepts
 * only clients that present a certificate of the cluster CA. The service's own connections (the
 * API's lazy client and its direct one, the worker's native connection: src/temporal/connection.ts,
 * as src/main.ts builds them) are held to the same test: with the certificates the production shape
 * gives them through the Temporal environment configuration they are answered, from the address
 * alone they are refused.
 *
 * Needs PostgreSQL (DATABASE_URL) and the production binaries (.temporal/bin, built by
 * `node scripts/prod-binaries.js`); CI has both, and fails when this is skipped.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { Pool } from 'pg';
import {
  clientTlsEnvironment,
  clientTlsFiles,
  ensureCertificates,
  freeLowPort,
  freePort,
  isListening,
  TEMPORAL_SERVICES,
  TEMPORAL_TLS_SERVER_NAME,
  temporalEnvironment,
} from '../../scripts/stack-prod';
import { poll } from '../helpers/wait';
import { testCodec } from '../helpers/temporal';
import {
  connectClientConnection,
  connectWorkerConnection,
  createLazyClient,
  TEMPORAL_ENVCONFIG_VARIABLES,
} from '../../src/temporal/connection';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { BIN, SCHEMA_DIR } = require('../../scripts/prod-binaries.js') as { BIN: string; SCHEMA_DIR: string };

const ROOT = path.resolve(__dirname, '../..');
// The server the production shape runs: ours (deploy/temporal/server), which authorizes by certificate subject.
const SERVER = path.join(BIN, 'temporal-server-authz');
const AUTHORIZATION_FILE = path.join(path.resolve(__dirname, '../..'), 'deploy/temporal/authorization.yaml');
const SQL_TOOL = path.join(BIN, 'temporal-sql-tool');
const DATABASE_URL = process.env.DATABASE_URL;
const HAVE_BINARIES =
  fs.existsSync(SERVER) && fs.existsSync(SQL_TOOL) && fs.existsSync(path.join(SCHEMA_DIR, 'visibility', 'versioned'));
const skipReason = !DATABASE_URL
  ? 'needs DATABASE_URL'
  : !HAVE_BINARIES
    ? 'needs the production Temporal binaries: node scripts/prod-binaries.js'
    : undefined;
const describeWithServer = skipReason ? describe.skip : describe;

describeWithServer(
  `the production-shape Temporal frontend and mutual TLS${skipReason ? ` [skipped: ${skipReason}]` : ''}`,
  () => {
    const work = fs.mkdtempSync(path.join(os.tmpdir(), 'prod-tls-'));
    const tlsDir = path.join(work, 'tls');
    const suffix = randomBytes(4).toString('hex');
    const databases = { temporal: `tls_${suffix}`, visibility: `tls_${suffix}_vis` };
    let admin: Pool;
    let env: Record<string, string>;
    let frontendPort: number;
    const children: ChildProcess[] = [];

    beforeAll(async () => {
      const url = new URL(DATABASE_URL!);
      admin = new Pool({ connectionString: DATABASE_URL, max: 1 });
      for (const db of Object.values(databases)) await admin.query(`CREATE DATABASE ${db}`);
      execFileSync('sh', [path.join(ROOT, 'deploy/temporal/setup-schema.sh')], {
        stdio: 'pipe',
        env: {
          PATH: process.env.PATH ?? '/usr/bin:/bin',
          SQL_TOOL,
          SCHEMA_DIR,
          POSTGRES_HOST: url.hostname,
          POSTGRES_PORT: url.port || '5432',
          TEMPORAL_DB_USER: decodeURIComponent(url.username),
          SQL_PASSWORD: decodeURIComponent(url.password),
          TEMPORAL_DB: databases.temporal,
          TEMPORAL_VISIBILITY_DB: databases.visibility,
        },
      });
      ensureCertificates(tlsDir, () => undefined);
      frontendPort = await freePort();
      const ports: Record<string, string> = {
        TEMPORAL_FRONTEND_PORT: String(frontendPort),
        TEMPORAL_FRONTEND_HTTP_PORT: String(await freePort()),
      };
      for (const service of TEMPORAL_SERVICES) {
        if (service !== 'frontend') ports[`TEMPORAL_${service.toUpperCase()}_PORT`] = String(await freePort());
        ports[`TEMPORAL_${service.toUpperCase()}_MEMBERSHIP_PORT`] = String(await freeLowPort());
      }
      env = {
        ...temporalEnvironment({
          pgHost: url.hostname,
          pgPort: url.port || '5432',
          password: decodeURIComponent(url.password),
          ports,
          tlsDir,
        }),
        TEMPORAL_DB: databases.temporal,
        TEMPORAL_VISIBILITY_DB: databases.visibility,
        TEMPORAL_DB_USER: decodeURIComponent(url.username),
        TEMPORAL_LOG_LEVEL: 'info',
      };
    }, 180_000);

    afterAll(async () => {
      for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await Promise.all(
        children.map((child) =>
          child.exitCode === null && child.signalCode === null
            ? new Promise((resolve) => child.once('exit', resolve))
            : undefined,
        ),
      );
      for (const db of Object.values(databases))
        await admin?.query(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`).catch(() => undefined);
      await admin?.end();
      fs.rmSync(work, { recursive: true, force: true });
    });

    /** The frontend as stack:prod starts it, with `environment`; its output and exit collected. */
    function startFrontend(environment: Record<string, string>): {
      child: ChildProcess;
      output: () => string;
      exit: () => number | string | undefined;
    } {
      const child = spawn(
        SERVER,
        ['--root', ROOT, '--config', 'deploy/temporal', '--env', 'production', 'start', '--service', 'frontend'],
        {
          cwd: ROOT,
          env: {
            PATH: process.env.PATH ?? '/usr/bin:/bin',
            TEMPORAL_AUTHORIZATION_FILE: AUTHORIZATION_FILE,
            ...environment,
          },
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      children.push(child);
      let output = '';
      let exit: number | string | undefined;
      child.stdout!.on('data', (chunk: Buffer) => (output = (output + chunk.toString()).slice(-20_000)));
      child.stderr!.on('data', (chunk: Buffer) => (output = (output + chunk.toString()).slice(-20_000)));
      child.once('exit', (code, signal) => (exit = code ?? signal ?? 'unknown'));
      return { child, output: () => output, exit: () => exit };
    }

    it('without TEMPORAL_TLS_DIR the frontend refuses to start: it exits with an error and never serves its port', async () => {
      const { TEMPORAL_TLS_DIR: _dropped, ...withoutTls } = env;
      const frontend = startFrontend(withoutTls);
      // Either it exits, or it serves the port (the bug): whichever comes first ends the wait.
      const outcome = await poll(
        async () => ({ exit: frontend.exit(), listening: await isListening(frontendPort) }),
        (o) => o.exit !== undefined || o.listening,
        { timeoutMs: 120_000, intervalMs: 250, what: 'the frontend without TEMPORAL_TLS_DIR to exit or to listen' },
      );
      expect({ listening: outcome.listening, failed: outcome.exit !== undefined && outcome.exit !== 0 }).toEqual({
        listening: false,
        failed: true,
      });
      expect(frontend.output()).toMatch(/\/(internode|frontend)\.(pem|key)|tls|certificate/i);
    }, 180_000);

    /** The frontend with TEMPORAL_TLS_DIR, started once for the tests that need it: its start, once listening. */
    let served:
      Promise<{ up: { exit: number | string | undefined; listening: boolean }; output: () => string }> | undefined;
    function serveFrontend(): NonNullable<typeof served> {
      served ??= (async () => {
        const frontend = startFrontend(env);
        const up = await poll(
          async () => ({ exit: frontend.exit(), listening: await isListening(frontendPort) }),
          (o) => o.exit !== undefined || o.listening,
          { timeoutMs: 150_000, intervalMs: 250, what: 'the frontend with TEMPORAL_TLS_DIR to listen' },
        );
        return { up, output: frontend.output };
      })();
      return served;
    }

    type Tls = Parameters<typeof Connection.connect>[0] extends infer O
      ? O extends { tls?: infer T }
        ? T
        : never
      : never;
    /** 'answered' when a client with `tls` gets the frontend's system info, else why not. */
    const attempt = async (tls: Tls): Promise<string> => {
      try {
        const connection = await Connection.connect({
          address: `127.0.0.1:${frontendPort}`,
          tls,
          connectTimeout: 10_000,
        });
        try {
          await connection.workflowService.getSystemInfo({});
          return 'answered';
        } finally {
          await connection.close();
        }
      } catch (err) {
        return `refused: ${(err as Error).message.split('\n')[0]}`;
      }
    };
    const withCertificateOf = (holder: 'api' | 'worker'): Tls => {
      const files = clientTlsFiles(tlsDir, holder);
      return {
        serverNameOverride: TEMPORAL_TLS_SERVER_NAME,
        serverRootCACertificate: fs.readFileSync(files.ca),
        clientCertPair: { crt: fs.readFileSync(files.cert), key: fs.readFileSync(files.key) },
      };
    };

    it('with TEMPORAL_TLS_DIR it serves, and refuses a client without a certificate of the cluster CA', async () => {
      const { up, output } = await serveFrontend();
      expect([up, up.exit === undefined ? '' : output().slice(-3000)]).toEqual([
        { exit: undefined, listening: true },
        '',
      ]);

      const files = clientTlsFiles(tlsDir, 'api');
      const serverTls = {
        serverNameOverride: TEMPORAL_TLS_SERVER_NAME,
        serverRootCACertificate: fs.readFileSync(files.ca),
      };
      // Plaintext, and TLS without a client certificate: refused. A certificate of the cluster CA: answered.
      expect(await attempt(false)).toMatch(/^refused: /);
      expect(await attempt(serverTls)).toMatch(/^refused: /);
      const withCertificate = await poll(
        () => attempt(withCertificateOf('api')),
        (answer) => answer === 'answered',
        {
          timeoutMs: 120_000,
          intervalMs: 1000,
          what: 'the frontend to answer a client with a certificate of the cluster CA',
        },
      );
      expect(withCertificate).toBe('answered');
    }, 360_000);

    it("the service's own connections (the API's lazy and direct clients, the worker's) use the certificates of the Temporal environment configuration, and none connects without them", async () => {
      const { up } = await serveFrontend();
      expect(up).toEqual({ exit: undefined, listening: true });
      // The frontend answers a client with a certificate (it may take a while after it listens).
      const ready = await poll(
        () => attempt(withCertificateOf('worker')),
        (answer) => answer === 'answered',
        { timeoutMs: 120_000, intervalMs: 1000, what: 'the frontend to answer a client with a certificate' },
      );
      expect(ready).toBe('answered');

      const target = { address: `127.0.0.1:${frontendPort}`, embedded: false };
      /** The frontend's answer to each of the service's connections, as main.ts builds them. */
      const builders = {
        'API, lazy client (createLazyClient)': async () => {
          const { client, connection } = createLazyClient(target, 'default', testCodec());
          try {
            await client.workflowService.getSystemInfo({});
          } finally {
            await connection.close();
          }
        },
        'API, direct client (connectClientConnection)': async () => {
          const connection = await connectClientConnection(target);
          try {
            await connection.workflowService.getSystemInfo({});
          } finally {
            await connection.close();
          }
        },
        'worker (connectWorkerConnection)': async () => {
          const connection = await connectWorkerConnection(target);
          try {
            await connection.workflowService.getSystemInfo({});
          } finally {
            await connection.close();
          }
        },
      };
      const holderOf = (name: string): 'api' | 'worker' => (name.startsWith('worker') ? 'worker' : 'api');
      const answerOf = async (connect: () => Promise<void>, environment: Record<string, string>): Promise<string> => {
        const saved = Object.fromEntries(TEMPORAL_ENVCONFIG_VARIABLES.map((name) => [name, process.env[name]]));
        for (const name of TEMPORAL_ENVCONFIG_VARIABLES) delete process.env[name];
        Object.assign(process.env, environment);
        try {
          await connect();
          return 'answered';
        } catch (err) {
          return `refused: ${(err as Error).message.split('\n')[0]}`;
        } finally {
          for (const [name, value] of Object.entries(saved)) {
            if (value === undefined) delete process.env[name];
            else process.env[name] = value;
          }
        }
      };
      const answers: Record<string, { withCertificate: string; withoutTls: string }> = {};
      for (const [name, connect] of Object.entries(builders)) {
        answers[name] = {
          withCertificate: await answerOf(connect, clientTlsEnvironment(tlsDir, holderOf(name))),
          withoutTls: await answerOf(connect, {}),
        };
      }
      // The same assertion for each: answered with its certificate, refused from the address alone.
      const expected = { withCertificate: 'answered', withoutTls: expect.stringMatching(/^refused: /) };
      expect(answers).toEqual(Object.fromEntries(Object.keys(builders).map((name) => [name, expected])));
    }, 360_000);
  },
);
