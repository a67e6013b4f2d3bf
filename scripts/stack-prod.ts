/**
 * `npm run stack:prod`: the production shape on one machine, without Docker, in the foreground.
 *
 *   PostgreSQL ─┬─ temporal, temporal_visibility (role temporal; schemas by temporal-sql-tool)
 *               └─ app (role app; the service's store)
 *   Temporal server 1.29.1: frontend, history, matching, worker — four processes, deploy/temporal/;
 *     the server of deploy/temporal/server, whose frontend authorizes by client certificate subject
 *   Temporal Web UI server (read-only, loopback, codec endpoint = <entry>/codec)
 *   api ×2, worker ×2: `node dist/src/main.js api|worker` (compiled JS, prebuilt workflow bundle);
 *     each API serves /ready and /metrics on an admin port of its own (ADMIN_PORT, loopback)
 *   nginx: the single entry in front of both APIs, appending X-Forwarded-For (TRUST_PROXY=1)
 *
 * Ctrl-C stops every process it started; a process that dies is restarted. Logs: one file per
 * process in .data/prod/logs/.
 * Temporal requires mutual TLS: two private CAs made on the first start (deploy/temporal/make-certs.sh,
 * files in .data/prod/tls/, keys 0600). The cluster CA signs the frontend's server certificate and
 * a client certificate each for the APIs, the workers, the Web UI server and Temporal's system
 * worker; the internode CA signs the certificate the services use between them. The frontend gives
 * each client certificate's subject the role deploy/temporal/authorization.yaml names.
 * PostgreSQL: DATABASE_URL (a superuser URL of the server to use) or else the local apt cluster,
 * administered as the `postgres` OS user over its socket (peer authentication). No existing role's
 * password is ever changed; the roles made here get random passwords kept in .data/prod/postgres/.
 * Also importable: the drills (test/drills/) start the same stack with `startProdStack()` and kill
 * its processes one by one.
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Client as PgClient } from 'pg';
import { Connection, type TLSConfig } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { ensureNamespace } from '../src/temporal/setup';
import { newPayloadKeyEntry } from '../src/temporal/codec';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { SERVICE_NODE_FLAGS } = require('./node-flags.js') as { SERVICE_NODE_FLAGS: readonly string[] };
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { ensureConsoleBuilt } = require('./start.js') as { ensureConsoleBuilt: () => Promise<string | undefined> };
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { ensureProdBinaries } = require('./prod-binaries.js') as {
  ensureProdBinaries: (log: (line: string) => void) => {
    'temporal-server': string;
    'temporal-sql-tool': string;
    'temporal-ui-server': string;
    jaeger: string;
    schemaDir: string;
  };
};

const ROOT = path.resolve(__dirname, '..');
export const TEMPORAL_SERVICES = ['frontend', 'history', 'matching', 'worker'] as const;
export type TemporalService = (typeof TEMPORAL_SERVICES)[number];
/** The three databases and two roles, shared with docker-compose.yml (test/unit/prod-shape.test.ts). */
export const DATABASES = { temporal: 'temporal', visibility: 'temporal_visibility', app: 'app' } as const;
export const ROLES = { temporal: 'temporal', app: 'app' } as const;

/** Variables of the caller's environment handed to the API and worker processes as they are. */
export const PASSED_THROUGH = [
  'BOOTSTRAP_CLIENT_ID',
  'BOOTSTRAP_CLIENT_SECRET',
  'ALLOW_INSECURE_JWKS',
  'LOG_LEVEL',
  'ACCESS_TOKEN_TTL_SECONDS',
  'WEBHOOK_MAX_IN_FLIGHT',
  // Outbound calls (callWebhook, notify, provisioning webhooks) to loopback and private addresses: a receiver of a drill's own.
  'ALLOW_PRIVATE_OUTBOUND',
  // The console's sign-in through the organisation's OpenID provider (docs/console.md#signing-in).
  'OIDC_ISSUER',
  'OIDC_CLIENT_ID',
  'OIDC_CLIENT_SECRET',
  'OIDC_ROLES_CLAIM',
  'OIDC_ROLE_MAP',
  'OIDC_ALLOW_INSECURE',
  'CONSOLE_LOCAL_SIGNIN',
];

/**
 * The certificate holders of deploy/temporal/make-certs.sh: the four Temporal services share
 * `temporal` (frontend, internode and system worker certificates); each client kind has its own certificate.
 */
export const TLS_HOLDERS = ['temporal', 'api', 'worker', 'ui'] as const;
export type TlsClient = 'api' | 'worker' | 'ui';
/** The name every client expects in the frontend's certificate (compose's service name). */
export const TEMPORAL_TLS_SERVER_NAME = 'temporal-frontend';

/** The client certificate files of one holder inside the certificate folder. */
export function clientTlsFiles(tlsDir: string, holder: TlsClient): { ca: string; cert: string; key: string } {
  return {
    ca: path.join(tlsDir, holder, 'ca.pem'),
    cert: path.join(tlsDir, holder, 'client.pem'),
    key: path.join(tlsDir, holder, 'client.key'),
  };
}

/**
 * The Temporal environment configuration (@temporalio/envconfig, read by src/temporal/connection.ts;
 * the Temporal CLI reads the same names) that makes an API or a worker connect with its certificate.
 */
export function clientTlsEnvironment(tlsDir: string, holder: 'api' | 'worker'): Record<string, string> {
  const files = clientTlsFiles(tlsDir, holder);
  return {
    TEMPORAL_TLS_CLIENT_CERT_PATH: files.cert,
    TEMPORAL_TLS_CLIENT_KEY_PATH: files.key,
    TEMPORAL_TLS_SERVER_CA_CERT_PATH: files.ca,
    TEMPORAL_TLS_SERVER_NAME: TEMPORAL_TLS_SERVER_NAME,
  };
}

/** Connection options (Connection.connect, NativeConnection.connect) with a client certificate of the stack. */
export function temporalConnectionOptions(
  address: string,
  tlsDir: string,
  holder: TlsClient = 'api',
): { address: string; tls: TLSConfig } {
  const files = clientTlsFiles(tlsDir, holder);
  return {
    address,
    tls: {
      serverNameOverride: TEMPORAL_TLS_SERVER_NAME,
      serverRootCACertificate: fs.readFileSync(files.ca),
      clientCertPair: { crt: fs.readFileSync(files.cert), key: fs.readFileSync(files.key) },
    },
  };
}

/** The same for the Temporal CLI. */
export function temporalCliArgs(address: string, tlsDir: string, holder: TlsClient = 'api'): string[] {
  const files = clientTlsFiles(tlsDir, holder);
  return [
    '--address',
    address,
    '--tls-ca-path',
    files.ca,
    '--tls-cert-path',
    files.cert,
    '--tls-key-path',
    files.key,
    '--tls-server-name',
    TEMPORAL_TLS_SERVER_NAME,
  ];
}

/** Makes what is missing of the CA and the certificates (a second run keeps every file). */
export function ensureCertificates(tlsDir: string, log: (line: string) => void): void {
  fs.mkdirSync(tlsDir, { recursive: true, mode: 0o700 });
  const output = execFileSync('sh', [path.join(ROOT, 'deploy/temporal/make-certs.sh')], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', CERT_DIR: tlsDir },
  });
  for (const line of output.split('\n')) if (line.trim()) log(`TLS: ${line}`);
}

/** Environment of each Temporal server process (read by deploy/temporal/production.yaml). */
export function temporalEnvironment(p: {
  pgHost: string;
  pgPort: string;
  password: string;
  ports: Record<string, string>;
  /** The certificate folder (make-certs.sh's CERT_DIR); the services read its `temporal/` holder. */
  tlsDir: string;
  logLevel?: string | undefined;
}): Record<string, string> {
  return {
    ...p.ports,
    POSTGRES_HOST: p.pgHost,
    POSTGRES_PORT: p.pgPort,
    TEMPORAL_DB: DATABASES.temporal,
    TEMPORAL_VISIBILITY_DB: DATABASES.visibility,
    TEMPORAL_DB_USER: ROLES.temporal,
    TEMPORAL_DB_PASSWORD: p.password,
    TEMPORAL_BIND_IP: '127.0.0.1',
    TEMPORAL_BROADCAST_ADDRESS: '127.0.0.1',
    TEMPORAL_TLS_DIR: path.join(p.tlsDir, 'temporal'),
    TEMPORAL_AUTHORIZATION_FILE: path.join(ROOT, 'deploy/temporal/authorization.yaml'),
    TEMPORAL_DYNAMIC_CONFIG_FILE: path.join(ROOT, 'deploy/temporal/dynamicconfig/production.yaml'),
    TEMPORAL_LOG_LEVEL: p.logLevel ?? 'warn',
  };
}

/** Environment of the Web UI server (read by deploy/temporal-ui/docker.yaml): read-only, loopback, codec, mTLS. */
export function uiEnvironment(p: {
  temporalAddress: string;
  uiPort: number;
  uiUrl: string;
  entryUrl: string;
  tlsDir: string;
}): Record<string, string> {
  const files = clientTlsFiles(p.tlsDir, 'ui');
  return {
    TEMPORAL_ADDRESS: p.temporalAddress,
    TEMPORAL_TLS_CA: files.ca,
    TEMPORAL_TLS_CERT: files.cert,
    TEMPORAL_TLS_KEY: files.key,
    TEMPORAL_TLS_SERVER_NAME: TEMPORAL_TLS_SERVER_NAME,
    TEMPORAL_TLS_ENABLE_HOST_VERIFICATION: 'true',
    TEMPORAL_UI_HOST: '127.0.0.1',
    TEMPORAL_UI_PORT: String(p.uiPort),
    TEMPORAL_UI_PUBLIC_URL: p.uiUrl,
    TEMPORAL_DISABLE_WRITE_ACTIONS: 'true',
    TEMPORAL_CSRF_COOKIE_INSECURE: 'true',
    TEMPORAL_CODEC_ENDPOINT: `${p.entryUrl}/codec`,
  };
}

/** Environment of an API or worker process (compiled JS: `node dist/src/main.js <role>`). */
export function appEnvironment(
  role: 'api' | 'worker',
  p: {
    databaseUrl: string;
    temporalAddress: string;
    secretKey: string;
    /** PAYLOAD_KEYS shared by every API and worker (each must decrypt what the others encrypt). */
    payloadKeys: string;
    entryUrl: string;
    /** The Web UI's address: the only origin allowed to call the codec endpoint from a browser, and where "Open in Temporal" links. */
    uiUrl: string;
    dataDir: string;
    /** The certificate folder: each role connects to Temporal with its own client certificate. */
    tlsDir: string;
    port?: number;
    /** The API's admin listener (/ready, /metrics; loopback): never the port nginx proxies to. */
    adminPort?: number;
    /** Jaeger's OTLP/HTTP receiver: every API and worker exports its spans there. */
    otlpEndpoint?: string;
    /** The console's "Open trace" link (Jaeger's trace page, `{traceId}` replaced). */
    traceUiUrl?: string;
    passThrough?: Record<string, string>;
  },
): Record<string, string> {
  const common = {
    NODE_ENV: 'production',
    DATABASE_URL: p.databaseUrl,
    TEMPORAL_ADDRESS: p.temporalAddress,
    TEMPORAL_NAMESPACE: 'default',
    TEMPORAL_TASK_QUEUE: 'automations',
    SECRET_KEY: p.secretKey,
    PAYLOAD_KEYS: p.payloadKeys,
    DATA_DIR: p.dataDir,
    ...clientTlsEnvironment(p.tlsDir, role),
    ...(p.otlpEndpoint
      ? { OTEL_EXPORTER_OTLP_ENDPOINT: p.otlpEndpoint, OTEL_SERVICE_NAME: 'automation-governance' }
      : {}),
    ...p.passThrough,
  };
  // The worker's BASE_URL: the origin of the callbackUrl it gives provisioning webhooks.
  if (role === 'worker') {
    return { ...common, BASE_URL: p.entryUrl, WORKFLOW_BUNDLE: path.join(ROOT, 'dist/workflow-bundle.js') };
  }
  // One proxy (nginx) in front: the source address is the X-Forwarded-For entry it appended.
  // /ready and /metrics only on the admin listener, so no spelling of them reaches the API port.
  return {
    ...common,
    PORT: String(p.port ?? 8080),
    HOST: '127.0.0.1',
    ADMIN_PORT: String(p.adminPort ?? 9090),
    BASE_URL: p.entryUrl,
    TRUST_PROXY: '1',
    CODEC_CORS_ORIGINS: p.uiUrl,
    TEMPORAL_UI_URL: p.uiUrl,
    ...(p.traceUiUrl ? { TRACE_UI_URL: p.traceUiUrl } : {}),
  };
}

/** Jaeger's listeners (deploy/jaeger/config.yaml reads them), every one on loopback. */
export function jaegerEnvironment(ports: JaegerPorts): Record<string, string> {
  return {
    JAEGER_OTLP_HTTP_PORT: String(ports.otlpHttp),
    JAEGER_OTLP_GRPC_PORT: String(ports.otlpGrpc),
    JAEGER_QUERY_PORT: String(ports.query),
    JAEGER_QUERY_GRPC_PORT: String(ports.queryGrpc),
  };
}

export interface JaegerPorts {
  otlpHttp: number;
  otlpGrpc: number;
  /** The query API (HTTP): /api/traces/{traceId}. */
  query: number;
  queryGrpc: number;
}

export interface StackOptions {
  /** Superuser URL of the PostgreSQL server; unset = the local apt cluster (or `localPostgres`). */
  adminUrl?: string;
  /** The local PostgreSQL administered over its socket as the `postgres` OS user; unset = the apt cluster. */
  localPostgres?: LocalPostgres;
  /** Entry (nginx) port; 0 = a free port. */
  port?: number;
  /**
   * The address people and senders open (the APIs' BASE_URL, the Web UI's codec endpoint) when
   * something in front of nginx ends TLS; unset = nginx's own `http://127.0.0.1:<port>`.
   */
  baseUrl?: string;
  temporalPort?: number;
  uiPort?: number;
  stateDir?: string;
  env?: Record<string, string | undefined>;
  log?: (line: string) => void;
}

export class StackProcess {
  child: ChildProcess | undefined;
  exited: Promise<void> = Promise.resolve();
  private expectedExit = false;

  constructor(
    readonly name: string,
    readonly command: string,
    readonly args: string[],
    readonly env: Record<string, string>,
    readonly logFile: string,
    private readonly onUnexpectedExit: (name: string, code: number | null, signal: string | null) => void,
  ) {}

  get pid(): number | undefined {
    return this.child?.pid;
  }

  get running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  start(): void {
    const out = fs.openSync(this.logFile, 'a');
    fs.writeSync(out, `\n---- ${new Date().toISOString()} start ${this.name}\n`);
    this.expectedExit = false;
    const child = spawn(this.command, this.args, { cwd: ROOT, env: this.env, stdio: ['ignore', out, out] });
    fs.closeSync(out);
    this.child = child;
    this.exited = new Promise((resolve) =>
      child.once('exit', (code, signal) => {
        if (!this.expectedExit) this.onUnexpectedExit(this.name, code, signal);
        resolve();
      }),
    );
  }

  /** Sends a signal; SIGKILL is the crash the drills make. */
  async kill(signal: NodeJS.Signals = 'SIGTERM', expected = true): Promise<void> {
    if (!this.child || this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.expectedExit = expected;
    this.child.kill(signal);
    const timer = setTimeout(() => this.child?.kill('SIGKILL'), 15_000);
    await this.exited;
    clearTimeout(timer);
  }

  /** Lines of the log file (for readiness markers such as "worker running"). */
  logText(): string {
    try {
      return fs.readFileSync(this.logFile, 'utf8');
    } catch {
      return '';
    }
  }
}

export interface ProdStack {
  /** The super_admin client made on the first start of a new store (to print once), if any. */
  bootstrapCreated: { clientId: string; clientSecret: string } | undefined;
  /** nginx: http://127.0.0.1:<port>. */
  entryUrl: string;
  /** The address people open (StackOptions.baseUrl, else entryUrl). */
  baseUrl: string;
  uiUrl: string;
  /** Jaeger's query API (http://127.0.0.1:<port>): /api/traces/{traceId}. */
  jaegerUrl: string;
  temporalAddress: string;
  appDatabaseUrl: string;
  logDir: string;
  /** The certificate folder (deploy/temporal/make-certs.sh): ca/, temporal/, api/, worker/, ui/. */
  tlsDir: string;
  /** Options for a Temporal connection with a client certificate of the stack (default: the APIs'). */
  temporalConnectionOptions(holder?: TlsClient): { address: string; tls: TLSConfig };
  /** The Temporal CLI's flags for the same (`temporal workflow list ${flags}`). */
  temporalCliArgs(holder?: TlsClient): string[];
  processes: Map<string, StackProcess>;
  /** Waits until a process answers again after a (re)start. */
  waitReady(name: string): Promise<void>;
  restart(name: string): Promise<void>;
  /** Starts the four Temporal processes again (after the drills stopped them). */
  startTemporal(): Promise<void>;
  stop(): Promise<void>;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/**
 * A free port below 32768, the start of the kernel's ephemeral range: Temporal stores membership
 * ports in a PostgreSQL smallint; and a port picked from the ephemeral range is free when picked but
 * may be taken by any outgoing connection (Temporal's, the APIs' to PostgreSQL) in the seconds before
 * its process binds it.
 */
export async function freeLowPort(): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt += 1) {
    const port = 20000 + Math.floor(Math.random() * 12000);
    const free = await new Promise<boolean>((resolve) => {
      const server = net.createServer();
      server.once('error', () => resolve(false));
      server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
    });
    if (free) return port;
  }
  throw new Error('no free port between 20000 and 32000');
}

/**
 * A chooser of the stack's ports: each call a free port below the ephemeral range (freeLowPort),
 * never one it gave before (the ports are bound only later, when each process starts).
 */
export function lowPorts(): () => Promise<number> {
  const chosen = new Set<number>();
  return async () => {
    for (;;) {
      const candidate = await freeLowPort();
      if (!chosen.has(candidate)) {
        chosen.add(candidate);
        return candidate;
      }
    }
  };
}

export async function isListening(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, host);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** A process that exited or did not become ready while the stack started: named in the error with its log's tail. */
class StartError extends Error {
  constructor(
    message: string,
    readonly proc: StackProcess | undefined,
  ) {
    super(message);
  }
}

/** The last `count` lines of a process's log (what a failed start shows). */
function logTail(proc: StackProcess, count = 20): string {
  return proc.logText().trimEnd().split('\n').slice(-count).join('\n');
}

async function until<T>(
  what: string,
  timeoutMs: number,
  probe: () => Promise<T | undefined | false>,
  proc?: StackProcess,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    if (proc && !proc.running)
      throw new StartError(`${proc.name} exited while starting; its log: ${proc.logFile}`, proc);
    try {
      const value = await probe();
      if (value !== undefined && value !== false) return value;
    } catch (err) {
      lastError = err;
    }
    await sleep(250);
  }
  throw new StartError(
    `${what} not ready within ${Math.round(timeoutMs / 1000)} s${lastError ? `: ${(lastError as Error).message}` : ''}`,
    proc,
  );
}

/** The local PostgreSQL, administered as its `postgres` OS user over the Unix socket (peer authentication). */
export interface LocalPostgres {
  port: number;
  /** The socket folder (Debian: /var/run/postgresql). */
  socketDir: string;
}

/** The apt cluster (as in .ci/run): made and started if needed. Nothing about its roles is changed. */
function localCluster(log: (line: string) => void): LocalPostgres {
  const versions = fs.existsSync('/usr/lib/postgresql')
    ? fs.readdirSync('/usr/lib/postgresql').sort((a, b) => Number(a) - Number(b))
    : [];
  const version = versions.at(-1);
  if (!version)
    throw new Error('PostgreSQL is not installed: apt-get install postgresql, or set DATABASE_URL to a superuser URL');
  const clusters = execFileSync('pg_lsclusters', ['-h'], { encoding: 'utf8' });
  if (!clusters.split('\n').some((line) => line.startsWith(`${version} main `))) {
    execFileSync('pg_createcluster', [version, 'main'], { stdio: 'ignore' });
  }
  const line = execFileSync('pg_lsclusters', ['-h'], { encoding: 'utf8' })
    .split('\n')
    .find((l) => l.startsWith(`${version} main `))!;
  const port = Number(line.split(/\s+/)[2]);
  if (!line.includes('online')) {
    log(`starting the PostgreSQL ${version} cluster on port ${port}`);
    execFileSync('pg_ctlcluster', [version, 'main', 'start'], { stdio: 'ignore' });
  }
  return { port, socketDir: '/var/run/postgresql' };
}

/** Administrative SQL: over DATABASE_URL, or with psql as the `postgres` OS user over the socket. */
interface PgAdmin {
  /** Rows as arrays of text values. */
  query(sql: string): Promise<string[][]>;
  close(): Promise<void>;
}

async function urlAdmin(adminUrl: string): Promise<PgAdmin> {
  // A pg client cannot connect twice: a new one per attempt while the server comes up.
  const client = await until('PostgreSQL', 60_000, async () => {
    const c = new PgClient({ connectionString: adminUrl });
    c.on('error', () => undefined);
    try {
      await c.connect();
      return c;
    } catch (err) {
      await c.end().catch(() => undefined);
      throw err;
    }
  });
  return {
    query: async (sql) =>
      (await client.query({ text: sql, rowMode: 'array' })).rows.map((row: unknown[]) => row.map(String)),
    close: () => client.end(),
  };
}

function socketAdmin(local: LocalPostgres): PgAdmin {
  const psql = [
    'psql',
    '-X',
    '-q',
    '-At',
    '-v',
    'ON_ERROR_STOP=1',
    '-h',
    local.socketDir,
    '-p',
    String(local.port),
    '-d',
    'postgres',
  ];
  // As root: `su postgres` (peer authentication maps the OS user to the role of the same name).
  const [command, args] =
    process.getuid?.() === 0
      ? ['su', ['postgres', '-s', '/bin/sh', '-c', psql.map((a) => `'${a}'`).join(' ')]]
      : [psql[0]!, psql.slice(1)];
  return {
    query: async (sql) => {
      const out = execFileSync(command, args as string[], {
        input: sql,
        encoding: 'utf8',
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      return out
        .split('\n')
        .filter((line) => line !== '')
        .map((line) => line.split('|'));
    },
    close: async () => undefined,
  };
}

export interface PreparedPostgres {
  host: string;
  port: string;
  /** The passwords of the roles this stack uses (read from, or first written to, the state directory). */
  passwords: { temporal: string; app: string };
  /** True per database made now. */
  created: Record<string, boolean>;
}

/**
 * Roles and databases, made once. A role made here gets a random password, written first to
 * <stateDir>/postgres/<role>.password (0600); a role that exists keeps its password, which must be in
 * that file: no password of any role (the superuser's included) is ever set or changed here.
 */
export async function preparePostgres(p: {
  adminUrl?: string;
  local?: LocalPostgres;
  stateDir: string;
}): Promise<PreparedPostgres> {
  const dir = path.join(p.stateDir, 'postgres');
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  let admin: PgAdmin;
  let host: string;
  let port: string;
  if (p.adminUrl) {
    const url = new URL(p.adminUrl);
    host = url.hostname;
    port = url.port || '5432';
    admin = await urlAdmin(p.adminUrl);
  } else {
    if (!p.local) throw new Error('preparePostgres: adminUrl or local is required');
    host = '127.0.0.1';
    port = String(p.local.port);
    const local = socketAdmin(p.local);
    await until('PostgreSQL', 60_000, async () => (await local.query('SELECT 1')).length === 1);
    admin = local;
  }
  const passwords = { temporal: '', app: '' };
  const created: Record<string, boolean> = {};
  try {
    for (const role of [ROLES.temporal, ROLES.app] as const) {
      const file = path.join(dir, `${role}.password`);
      const exists = (await admin.query(`SELECT 1 FROM pg_roles WHERE rolname = '${role}'`)).length > 0;
      if (exists) {
        if (!fs.existsSync(file)) {
          throw new Error(
            `the PostgreSQL role "${role}" exists but its password is not in ${file}: stack:prod never changes an existing role's password; ` +
              'write it to that file (mode 0600), or drop the role and its databases to have them made anew',
          );
        }
        passwords[role] = fs.readFileSync(file, 'utf8').trim();
      } else {
        // base64url: no quote can end the literal.
        const password = randomBytes(24).toString('base64url');
        fs.writeFileSync(file, `${password}\n`, { mode: 0o600 });
        await admin.query(`CREATE ROLE ${role} LOGIN PASSWORD '${password}'`);
        passwords[role] = password;
      }
    }
    for (const [db, owner] of [
      [DATABASES.temporal, ROLES.temporal],
      [DATABASES.visibility, ROLES.temporal],
      [DATABASES.app, ROLES.app],
    ] as const) {
      const exists = (await admin.query(`SELECT 1 FROM pg_database WHERE datname = '${db}'`)).length > 0;
      created[db] = !exists;
      if (!exists) await admin.query(`CREATE DATABASE ${db} OWNER ${owner}`);
    }
  } finally {
    await admin.close();
  }
  return { host, port, passwords, created };
}

function readOrCreate(file: string, make: () => string): string {
  if (fs.existsSync(file)) return fs.readFileSync(file, 'utf8').trim();
  const value = make();
  fs.writeFileSync(file, `${value}\n`, { mode: 0o600 });
  return value;
}

/** `${NAME}` placeholders from `vars`, as the nginx image's envsubst does; `$name` is left alone. */
export function renderTemplate(template: string, vars: Record<string, string>): string {
  return template.replace(/\$\{(\w+)\}/g, (match, name: string) => vars[name] ?? match);
}

/**
 * nginx as the stack runs it: the site rendered from deploy/nginx/api.conf.template (in front of
 * `apiPorts`, listening on `listen`) inside a main configuration of its own in `dir` (no system
 * nginx needed), logs in `logDir`. Returns the command line and the temp folder it made (remove it
 * after stopping nginx). Also used by the test of the entry's hidden paths
 * (test/integration/nginx-entry.test.ts), so the test runs the configuration the stack runs.
 */
export function nginxSetup(o: { dir: string; logDir: string; apiPorts: readonly number[]; listen: string }): {
  bin: string;
  args: string[];
  tempDir: string;
} {
  fs.mkdirSync(o.dir, { recursive: true, mode: 0o700 });
  // nginx's worker (`nobody` when started as root) writes request bodies over the in-memory buffer
  // and large responses to its temp folders: they live in a folder of its own under the system's
  // temp folder, since it cannot enter the state directory (0700, the stack's user).
  const temp = fs.mkdtempSync(path.join(os.tmpdir(), 'stack-nginx-'));
  if (process.getuid?.() === 0) {
    const nobody = Number(execFileSync('id', ['-u', 'nobody'], { encoding: 'utf8' }).trim());
    fs.chownSync(temp, nobody, -1);
  }
  const site = renderTemplate(fs.readFileSync(path.join(ROOT, 'deploy/nginx/api.conf.template'), 'utf8'), {
    API_SERVERS: o.apiPorts.map((port) => `server 127.0.0.1:${port} max_fails=1 fail_timeout=2s;`).join('\n    '),
    LISTEN_PORT: o.listen,
  });
  fs.writeFileSync(path.join(o.dir, 'api.conf'), site);
  fs.writeFileSync(
    path.join(o.dir, 'nginx.conf'),
    [
      'daemon off;',
      'worker_processes 1;',
      `pid ${path.join(o.dir, 'nginx.pid')};`,
      `error_log ${path.join(o.logDir, 'nginx-error.log')} warn;`,
      'events { worker_connections 4096; }',
      'http {',
      `  access_log ${path.join(o.logDir, 'nginx-access.log')};`,
      `  client_body_temp_path ${temp}/body; proxy_temp_path ${temp}/proxy; fastcgi_temp_path ${temp}/fastcgi;`,
      `  uwsgi_temp_path ${temp}/uwsgi; scgi_temp_path ${temp}/scgi;`,
      `  include ${path.join(o.dir, 'api.conf')};`,
      '}',
      '',
    ].join('\n'),
  );
  const bin = ['/usr/sbin/nginx', '/usr/local/sbin/nginx', '/usr/bin/nginx'].find((p) => fs.existsSync(p));
  if (!bin) throw new Error('nginx is not installed: apt-get install nginx');
  return {
    bin,
    args: ['-e', path.join(o.logDir, 'nginx-error.log'), '-p', o.dir, '-c', path.join(o.dir, 'nginx.conf')],
    tempDir: temp,
  };
}

/** The dist/ build (tsc) and the workflow bundle, redone only when a source file is newer. */
function ensureBuild(log: (line: string) => void): void {
  const marker = path.join(ROOT, 'dist', 'workflow-bundle.js');
  const newest = (dir: string): number => {
    let latest = 0;
    for (const entry of fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true, recursive: true })) {
      if (entry.isFile()) latest = Math.max(latest, fs.statSync(path.join(entry.parentPath, entry.name)).mtimeMs);
    }
    return latest;
  };
  const sources = Math.max(
    newest('src'),
    newest('workflows'),
    newest('activities'),
    fs.statSync(path.join(ROOT, 'package-lock.json')).mtimeMs,
  );
  if (
    fs.existsSync(marker) &&
    fs.existsSync(path.join(ROOT, 'dist/src/main.js')) &&
    fs.statSync(marker).mtimeMs > sources
  )
    return;
  log('building dist/ (npm run build) and the workflow bundle (npm run bundle)');
  execFileSync('npm', ['run', '--silent', 'build'], { cwd: ROOT, stdio: 'inherit' });
  execFileSync('npm', ['run', '--silent', 'bundle'], { cwd: ROOT, stdio: 'inherit' });
}

/** `http://…` answers 2xx within 2 s. */
async function httpOk(url: string): Promise<boolean> {
  const res = await fetch(url, { signal: AbortSignal.timeout(2000) });
  return res.ok;
}

/**
 * The stack's processes by name, each with the probe that waits until it answers. A process that dies
 * is started again a second later, as a process supervisor (or compose's `restart: unless-stopped`)
 * would; the drills rely on it after their SIGKILLs.
 */
class StackProcesses {
  readonly byName = new Map<string, StackProcess>();
  /** Waits until the named process answers (after a start or a restart). */
  readonly readiness: Record<string, () => Promise<void>> = {};
  /** Set by the stack's stop: no process is restarted any more. */
  stopping = false;

  constructor(
    private readonly logDir: string,
    private readonly env: Record<string, string | undefined>,
    private readonly log: (line: string) => void,
  ) {}

  /** Adds a process (not started) with PATH and HOME of the stack's environment besides `childEnv`. */
  add(name: string, command: string, args: string[], childEnv: Record<string, string>): StackProcess {
    const base: Record<string, string> = { PATH: this.env.PATH ?? '/usr/bin:/bin', HOME: this.env.HOME ?? '/tmp' };
    const proc = new StackProcess(
      name,
      command,
      args,
      { ...base, ...childEnv },
      path.join(this.logDir, `${name}.log`),
      this.onUnexpectedExit,
    );
    this.byName.set(name, proc);
    return proc;
  }

  get(name: string): StackProcess {
    return this.byName.get(name)!;
  }

  private readonly onUnexpectedExit = (name: string, code: number | null, signal: string | null): void => {
    if (this.stopping) return;
    this.log(
      `${name} exited (${signal ?? `code ${code}`}); restarting it in 1 s; its log: ${path.join(this.logDir, `${name}.log`)}`,
    );
    setTimeout(() => {
      const proc = this.byName.get(name);
      if (!this.stopping && proc && !proc.running) proc.start();
    }, 1000).unref();
  };
}

/** Every port the stack listens on, chosen at once (see lowPorts); the options' ports where given. */
interface StackPorts {
  entryPort: number;
  temporalPort: number;
  uiPort: number;
  /** The Temporal services' TEMPORAL_<SERVICE>_PORT, _MEMBERSHIP_PORT (and the frontend's _HTTP_PORT) variables. */
  temporalPorts: Record<string, string>;
  apiPorts: number[];
  /** The APIs' admin listeners (/ready, /metrics). */
  adminPorts: number[];
  jaeger: JaegerPorts;
}

async function choosePorts(options: StackOptions): Promise<StackPorts> {
  const port = lowPorts();
  const entryPort = options.port || (await port());
  const temporalPort = options.temporalPort || (await port());
  const uiPort = options.uiPort || (await port());
  // Temporal: one process per service, every port chosen here.
  const temporalPorts: Record<string, string> = {
    TEMPORAL_FRONTEND_PORT: String(temporalPort),
    TEMPORAL_FRONTEND_HTTP_PORT: String(await port()),
  };
  for (const service of TEMPORAL_SERVICES) {
    if (service !== 'frontend') temporalPorts[`TEMPORAL_${service.toUpperCase()}_PORT`] = String(await port());
    // Also: Temporal keeps membership ports in a PostgreSQL smallint (below 32768).
    temporalPorts[`TEMPORAL_${service.toUpperCase()}_MEMBERSHIP_PORT`] = String(await port());
  }
  const apiPorts = [await port(), await port()];
  const adminPorts = [await port(), await port()];
  const jaeger = { otlpHttp: await port(), otlpGrpc: await port(), query: await port(), queryGrpc: await port() };
  return { entryPort, temporalPort, uiPort, temporalPorts, apiPorts, adminPorts, jaeger };
}

/** Temporal's schemas, exactly as an operator makes them with temporal-sql-tool (the script compose runs too). */
function setUpTemporalSchemas(p: {
  bins: ReturnType<typeof ensureProdBinaries>;
  pg: PreparedPostgres;
  env: Record<string, string | undefined>;
  logDir: string;
  log: (line: string) => void;
}): void {
  p.log('Temporal schemas: temporal-sql-tool setup-schema -v 0.0, update-schema -d …/versioned');
  const schemaLog = fs.openSync(path.join(p.logDir, 'schema.log'), 'a');
  execFileSync('sh', [path.join(ROOT, 'deploy/temporal/setup-schema.sh')], {
    stdio: ['ignore', schemaLog, schemaLog],
    env: {
      PATH: p.env.PATH ?? '/usr/bin:/bin',
      SQL_TOOL: p.bins['temporal-sql-tool'],
      SCHEMA_DIR: p.bins.schemaDir,
      POSTGRES_HOST: p.pg.host,
      POSTGRES_PORT: p.pg.port,
      TEMPORAL_DB_USER: ROLES.temporal,
      SQL_PASSWORD: p.pg.passwords.temporal,
      TEMPORAL_DB: DATABASES.temporal,
      TEMPORAL_VISIBILITY_DB: DATABASES.visibility,
    },
  });
  fs.closeSync(schemaLog);
}

/** The four Temporal services (deploy/temporal, production.yaml), each a process, and their readiness. */
function addTemporal(
  processes: StackProcesses,
  p: { bin: string; pg: PreparedPostgres; ports: StackPorts; tlsDir: string; logLevel: string | undefined },
): void {
  const { temporalPort, temporalPorts } = p.ports;
  const temporalEnv = temporalEnvironment({
    pgHost: p.pg.host,
    pgPort: p.pg.port,
    password: p.pg.passwords.temporal,
    ports: temporalPorts,
    tlsDir: p.tlsDir,
    logLevel: p.logLevel,
  });
  for (const service of TEMPORAL_SERVICES) {
    processes.add(
      `temporal-${service}`,
      p.bin,
      ['--root', ROOT, '--config', 'deploy/temporal', '--env', 'production', 'start', '--service', service],
      temporalEnv,
    );
  }
  const { readiness } = processes;
  readiness['temporal-frontend'] = () =>
    until('temporal frontend', 120_000, () => isListening(temporalPort), processes.get('temporal-frontend')).then(
      () => undefined,
    );
  for (const service of ['history', 'matching', 'worker'] as const) {
    readiness[`temporal-${service}`] = () =>
      // The internal worker serves no gRPC: it is up when its membership (ringpop) port answers.
      until(
        `temporal ${service}`,
        120_000,
        () =>
          isListening(
            Number(temporalPorts[`TEMPORAL_${service.toUpperCase()}_${service === 'worker' ? 'MEMBERSHIP_' : ''}PORT`]),
          ),
        processes.get(`temporal-${service}`),
      ).then(() => undefined);
  }
}

/**
 * Starts the Temporal services, the frontend first: it writes the cluster metadata (e.g. a new
 * frontend address) that the others would otherwise race to update at the same moment.
 */
async function startTemporal(processes: StackProcesses): Promise<void> {
  processes.get('temporal-frontend').start();
  await processes.readiness['temporal-frontend']!();
  for (const service of ['history', 'matching', 'worker']) processes.get(`temporal-${service}`).start();
  await Promise.all(['history', 'matching', 'worker'].map((service) => processes.readiness[`temporal-${service}`]!()));
}

/** The default namespace (retention, search attributes), made by the code the APIs and workers run at their start. */
async function prepareNamespace(temporalAddress: string, tlsDir: string, log: (line: string) => void): Promise<void> {
  const report = await until('the default namespace', 120_000, async () => {
    const connection = await Connection.connect({
      ...temporalConnectionOptions(temporalAddress, tlsDir),
      connectTimeout: 2000,
    });
    try {
      return await ensureNamespace(connection, 'default');
    } finally {
      await connection.close();
    }
  });
  log(
    `Temporal namespace default: retention 7 days${report.createdNamespace ? ' (created)' : ''}; search attributes ready`,
  );
}

/** Jaeger (deploy/jaeger/config.yaml: in memory, OTLP in, the query API) and its readiness. */
function addJaeger(processes: StackProcesses, p: { bin: string; ports: JaegerPorts }): void {
  processes.add(
    'jaeger',
    p.bin,
    ['--config', path.join(ROOT, 'deploy/jaeger/config.yaml')],
    jaegerEnvironment(p.ports),
  );
  processes.readiness.jaeger = () =>
    until(
      'Jaeger',
      60_000,
      () => httpOk(`http://127.0.0.1:${p.ports.query}/api/services`),
      processes.get('jaeger'),
    ).then(() => undefined);
}

/** The Temporal Web UI server (deploy/temporal-ui) and its readiness. */
function addTemporalUi(
  processes: StackProcesses,
  p: { bin: string; temporalAddress: string; uiPort: number; uiUrl: string; baseUrl: string; tlsDir: string },
): void {
  processes.add(
    'temporal-ui',
    p.bin,
    ['--root', path.join(ROOT, 'deploy'), '--config', 'temporal-ui', '--env', 'docker', 'start'],
    uiEnvironment({
      temporalAddress: p.temporalAddress,
      uiPort: p.uiPort,
      uiUrl: p.uiUrl,
      entryUrl: p.baseUrl,
      tlsDir: p.tlsDir,
    }),
  );
  processes.readiness['temporal-ui'] = () =>
    until('Temporal Web UI', 60_000, () => isListening(p.uiPort), processes.get('temporal-ui')).then(() => undefined);
}

/**
 * The variables of the caller's environment the APIs and workers get (PASSED_THROUGH), and the bootstrap
 * super_admin client: the first start of a new store makes it here, so its secret is shown once on the
 * terminal and never lands in a log file; later starts keep the stored client.
 */
function appPassThrough(
  env: Record<string, string | undefined>,
  created: PreparedPostgres['created'],
): { passThrough: Record<string, string>; bootstrapCreated: ProdStack['bootstrapCreated'] } {
  let bootstrapCreated: { clientId: string; clientSecret: string } | undefined;
  if (created[DATABASES.app] && !env.BOOTSTRAP_CLIENT_ID) {
    bootstrapCreated = { clientId: 'bootstrap-admin', clientSecret: randomBytes(32).toString('base64url') };
  }
  const passThrough: Record<string, string> = {};
  for (const name of PASSED_THROUGH) if (env[name]) passThrough[name] = env[name]!;
  if (bootstrapCreated) {
    passThrough.BOOTSTRAP_CLIENT_ID = bootstrapCreated.clientId;
    passThrough.BOOTSTRAP_CLIENT_SECRET = bootstrapCreated.clientSecret;
  }
  return { passThrough, bootstrapCreated };
}

/** What every API and worker process is given alike (appEnvironment). */
type AppShared = Omit<Parameters<typeof appEnvironment>[1], 'dataDir' | 'port' | 'adminPort'>;

/** The two APIs (`node dist/src/main.js api`), each with a data folder and an admin listener of its own, and their readiness. */
function addApis(processes: StackProcesses, shared: AppShared, ports: StackPorts, stateDir: string): void {
  const { apiPorts, adminPorts } = ports;
  apiPorts.forEach((port, i) =>
    processes.add(
      `api-${i + 1}`,
      process.execPath,
      [...SERVICE_NODE_FLAGS, 'dist/src/main.js', 'api'],
      appEnvironment('api', {
        ...shared,
        port,
        adminPort: adminPorts[i],
        dataDir: path.join(stateDir, `api-${i + 1}`),
      }),
    ),
  );
  const { readiness } = processes;
  adminPorts.forEach((port, i) => {
    readiness[`api-${i + 1}`] = () =>
      until(
        `api-${i + 1}`,
        120_000,
        () => httpOk(`http://127.0.0.1:${port}/ready`),
        processes.get(`api-${i + 1}`),
      ).then(() => undefined);
  });
}

/** The identities Temporal lists among the `automations` task queue's workflow pollers, over one connection made on first use. */
class Pollers {
  private connection: Connection | undefined;

  constructor(
    private readonly temporalAddress: string,
    private readonly tlsDir: string,
  ) {}

  async identities(): Promise<string[]> {
    this.connection ??= await Connection.connect({
      ...temporalConnectionOptions(this.temporalAddress, this.tlsDir),
      connectTimeout: 2000,
    });
    const described = await this.connection.workflowService.describeTaskQueue({
      namespace: 'default',
      taskQueue: { name: 'automations', kind: temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
      taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
    });
    return (described.pollers ?? []).map((p) => p.identity ?? '');
  }

  async close(): Promise<void> {
    await this.connection?.close().catch(() => undefined);
  }
}

/**
 * The two workers (`node dist/src/main.js worker`, the prebuilt workflow bundle), each with a data
 * folder of its own. A worker is ready when Temporal lists it (identity "<pid>@<host>") among the
 * task queue's pollers.
 */
function addWorkers(processes: StackProcesses, shared: AppShared, stateDir: string, pollers: Pollers): void {
  for (const i of [1, 2]) {
    processes.add(
      `worker-${i}`,
      process.execPath,
      [...SERVICE_NODE_FLAGS, 'dist/src/main.js', 'worker'],
      appEnvironment('worker', { ...shared, dataDir: path.join(stateDir, `worker-${i}`) }),
    );
    processes.readiness[`worker-${i}`] = () =>
      until(
        `worker-${i}`,
        180_000,
        async () =>
          (await pollers.identities()).some((identity) => identity.startsWith(`${processes.get(`worker-${i}`).pid}@`)),
        processes.get(`worker-${i}`),
      ).then(() => undefined);
  }
}

/** nginx, the single entry in front of both APIs (nginxSetup), and its readiness; answers its temp folder. */
function addNginx(
  processes: StackProcesses,
  p: { stateDir: string; logDir: string; ports: StackPorts; entryUrl: string },
): string {
  const nginx = nginxSetup({
    dir: path.join(p.stateDir, 'nginx'),
    logDir: p.logDir,
    apiPorts: p.ports.apiPorts,
    listen: `127.0.0.1:${p.ports.entryPort}`,
  });
  processes.add('nginx', nginx.bin, nginx.args, {});
  processes.readiness.nginx = () =>
    until('nginx', 30_000, () => httpOk(`${p.entryUrl}/health`), processes.get('nginx')).then(() => undefined);
  return nginx.tempDir;
}

/** Stops the stack's processes: the entry first, then the APIs, workers and Web UI, then Temporal. */
async function stopProcesses(processes: StackProcesses): Promise<void> {
  const order = [
    'nginx',
    'api-1',
    'api-2',
    'worker-1',
    'worker-2',
    'temporal-ui',
    'jaeger',
    'temporal-frontend',
    'temporal-matching',
    'temporal-history',
    'temporal-worker',
  ];
  for (const group of [order.slice(0, 1), order.slice(1, 7), order.slice(7)]) {
    await Promise.all(group.map((name) => processes.byName.get(name)?.kill('SIGTERM')));
  }
}

/** Starts every process in order, each once the ones it needs answer. */
async function startAll(
  processes: StackProcesses,
  temporalAddress: string,
  tlsDir: string,
  log: (line: string) => void,
): Promise<void> {
  const { readiness } = processes;
  processes.get('jaeger').start();
  await startTemporal(processes);
  await readiness.jaeger!();
  await prepareNamespace(temporalAddress, tlsDir, log);
  processes.get('temporal-ui').start();
  // API 1 first: it migrates the store and makes the bootstrap client; then the others.
  processes.get('api-1').start();
  await readiness['api-1']!();
  for (const name of ['api-2', 'worker-1', 'worker-2']) processes.get(name).start();
  await Promise.all(['api-2', 'worker-1', 'worker-2', 'temporal-ui'].map((name) => readiness[name]!()));
  processes.get('nginx').start();
  await readiness.nginx!();
}

/** The error of a failed start: the processes that exited, and the one that was not ready in time, each named with its log's tail. */
function startFailure(err: unknown, exited: StackProcess[], logDir: string): Error {
  const blamed = new Set(exited);
  if (err instanceof StartError && err.proc) blamed.add(err.proc);
  const tails = [...blamed].map((p) => `\n---- ${p.name}: the end of ${p.logFile}\n${logTail(p)}`).join('');
  const names = exited.length
    ? ` (exited: ${exited.map((p) => p.name).join(', ')}; logs in ${logDir})`
    : ` (logs in ${logDir})`;
  return new Error(`${(err as Error).message}${names}${tails}`);
}

export async function startProdStack(options: StackOptions = {}): Promise<ProdStack> {
  const log = options.log ?? ((line: string) => console.log(line));
  const env = options.env ?? process.env;
  const stateDir = path.resolve(options.stateDir ?? path.join(ROOT, '.data', 'prod'));
  const logDir = path.join(stateDir, 'logs');
  fs.mkdirSync(logDir, { recursive: true, mode: 0o700 });

  const bins = ensureProdBinaries(log);
  ensureBuild(log);
  // The console the APIs serve at /console (dist/console), built as npm start builds it.
  await ensureConsoleBuilt();

  const tlsDir = path.join(stateDir, 'tls');
  ensureCertificates(tlsDir, log);
  const pg = await preparePostgres({
    stateDir,
    ...(options.adminUrl ? { adminUrl: options.adminUrl } : { local: options.localPostgres ?? localCluster(log) }),
  });
  setUpTemporalSchemas({ bins, pg, env, logDir, log });

  const secretKey =
    env.SECRET_KEY || readOrCreate(path.join(stateDir, 'secret.key'), () => randomBytes(32).toString('hex'));
  const payloadKeys = env.PAYLOAD_KEYS || readOrCreate(path.join(stateDir, 'payload.keys'), () => newPayloadKeyEntry());
  const ports = await choosePorts(options);
  const entryUrl = `http://127.0.0.1:${ports.entryPort}`;
  const baseUrl = (options.baseUrl ?? entryUrl).replace(/\/+$/, '');
  const uiUrl = `http://127.0.0.1:${ports.uiPort}`;
  const temporalAddress = `127.0.0.1:${ports.temporalPort}`;
  const appDatabaseUrl = `postgres://${ROLES.app}:${encodeURIComponent(pg.passwords.app)}@${pg.host}:${pg.port}/${DATABASES.app}`;

  const processes = new StackProcesses(logDir, env, log);
  addTemporal(processes, { bin: bins['temporal-server'], pg, ports, tlsDir, logLevel: env.TEMPORAL_LOG_LEVEL });
  addTemporalUi(processes, {
    bin: bins['temporal-ui-server'],
    temporalAddress,
    uiPort: ports.uiPort,
    uiUrl,
    baseUrl,
    tlsDir,
  });
  addJaeger(processes, { bin: bins.jaeger, ports: ports.jaeger });
  const jaegerUrl = `http://127.0.0.1:${ports.jaeger.query}`;
  const { passThrough, bootstrapCreated } = appPassThrough(env, pg.created);
  const shared: AppShared = {
    databaseUrl: appDatabaseUrl,
    temporalAddress,
    secretKey,
    payloadKeys,
    entryUrl: baseUrl,
    uiUrl,
    tlsDir,
    otlpEndpoint: `http://127.0.0.1:${ports.jaeger.otlpHttp}`,
    traceUiUrl: `${jaegerUrl}/trace/{traceId}`,
    passThrough,
  };
  addApis(processes, shared, ports, stateDir);
  const pollers = new Pollers(temporalAddress, tlsDir);
  addWorkers(processes, shared, stateDir, pollers);
  const temp = addNginx(processes, { stateDir, logDir, ports, entryUrl });

  const stack: ProdStack = {
    bootstrapCreated,
    entryUrl,
    baseUrl,
    uiUrl,
    jaegerUrl,
    temporalAddress,
    appDatabaseUrl,
    logDir,
    tlsDir,
    temporalConnectionOptions: (holder = 'api') => temporalConnectionOptions(temporalAddress, tlsDir, holder),
    temporalCliArgs: (holder = 'api') => temporalCliArgs(temporalAddress, tlsDir, holder),
    processes: processes.byName,
    waitReady: (name) => processes.readiness[name]!(),
    startTemporal: () => startTemporal(processes),
    async restart(name) {
      const proc = processes.get(name);
      await proc.kill('SIGTERM');
      proc.start();
      await processes.readiness[name]!();
    },
    async stop() {
      processes.stopping = true;
      await pollers.close();
      await stopProcesses(processes);
      fs.rmSync(temp, { recursive: true, force: true });
    },
  };
  process.once('exit', () => {
    for (const proc of processes.byName.values()) proc.child?.kill('SIGKILL');
  });

  try {
    await startAll(processes, temporalAddress, tlsDir, log);
  } catch (err) {
    const exited = [...processes.byName.values()].filter((p) => p.child && !p.running);
    await stack.stop().catch(() => undefined);
    throw startFailure(err, exited, logDir);
  }
  return stack;
}

async function main(): Promise<void> {
  const started = Date.now();
  const port = process.env.PORT ? Number(process.env.PORT) : 8080;
  const stack = await startProdStack({
    ...(process.env.DATABASE_URL ? { adminUrl: process.env.DATABASE_URL } : {}),
    ...(process.env.BASE_URL ? { baseUrl: process.env.BASE_URL } : {}),
    port,
    temporalPort: process.env.TEMPORAL_PORT ? Number(process.env.TEMPORAL_PORT) : 7233,
    uiPort: process.env.TEMPORAL_UI_PORT ? Number(process.env.TEMPORAL_UI_PORT) : 8233,
  });
  const bootstrap = stack.bootstrapCreated;
  console.log(`
Production stack up in ${Math.round((Date.now() - started) / 1000)} s (Ctrl-C stops every process)
  entry (nginx → api-1, api-2):  ${stack.entryUrl}
  console:                       ${stack.baseUrl}/console
  Temporal frontend (mTLS):      ${stack.temporalAddress}
    temporal workflow list ${stack.temporalCliArgs('api').join(' ')}
  Temporal Web UI (read-only):   ${stack.uiUrl}
  Jaeger query API (traces):     ${stack.jaegerUrl}/api/traces/<traceId>
  logs:                          ${stack.logDir}
${bootstrap ? `  a super_admin API client was created; its secret is shown only now:\n    client_id ${bootstrap.clientId}\n    client_secret ${bootstrap.clientSecret}\n` : ''}`);
  let stopping = false;
  const stop = (): void => {
    if (stopping) return;
    stopping = true;
    console.log('stopping…');
    stack.stop().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

if (require.main === module) {
  main().catch((err: unknown) => {
    console.error(`stack:prod failed: ${(err as Error).message}`);
    process.exit(1);
  });
}
