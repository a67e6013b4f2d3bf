/**
 * Typed, validated configuration read from the environment. No side effects at import time:
 * call `loadConfig(process.env)` where the process starts.
 */
import path from 'node:path';
import { ConfigError } from './errors';
import { parseDuration } from './duration';

export interface Config {
  port: number;
  host: string;
  baseUrl: string;
  dataDir: string;
  databaseUrl: string | undefined;
  temporal: {
    /** External frontend address; undefined means: run the embedded dev server. */
    address: string | undefined;
    namespace: string;
    taskQueue: string;
    uiPort: number;
    embeddedPort: number;
    /** host:port where the Temporal SDK serves its Prometheus metrics (worker side); unset = off. */
    metricsBind: string | undefined;
  };
  worker: {
    /** Prebuilt workflow bundle (npm run bundle); unset = bundle from source at start. */
    workflowBundlePath?: string;
    maxConcurrentActivityTaskExecutions?: number;
    maxConcurrentWorkflowTaskExecutions?: number;
    /** WORKER_MAX_CACHED_WORKFLOWS: runs kept in the worker's sticky cache; unset = the worker's default. */
    maxCachedWorkflows?: number;
    /** WORKER_VERIFY_HISTORIES: refuse to start unless the workflow code replays the committed histories. */
    verifyHistories?: boolean;
  };
  /** Webhook deliveries processed at once; beyond it the receiver answers 429 with Retry-After. */
  webhookMaxInFlight: number;
  /**
   * Under the global cap: deliveries in progress per listener and per source address (429 beyond),
   * and the least body data rate after a grace period (408 below it).
   */
  webhookAdmission: { perListener: number; perSource: number; minBytesPerSecond: number; graceMs: number };
  bootstrap: { clientId: string; clientSecret: string } | undefined;
  /** SECRET_KEY: 32-byte key sealing secrets at rest; unset = a key file in DATA_DIR. */
  secretKey: string | undefined;
  /**
   * TRUST_PROXY: how many proxies in front of the API append to X-Forwarded-For. 0 = the socket's
   * address is the source; N = the N-th entry from the right (the one the outermost trusted proxy
   * appended). Entries to its left are written by the client and never trusted.
   */
  trustProxy: number;
  /** Settings that were accepted but deserve a warning in the log at start-up. */
  warnings: string[];
  /** ALLOW_INSECURE_JWKS: `http://` and non-public JWKS URLs (development and tests only). */
  allowInsecureJwks: boolean;
  /** ALLOW_PRIVATE_OUTBOUND: callWebhook steps may reach `http://` and loopback/private addresses (never link-local or metadata ones). */
  allowPrivateOutbound: boolean;
  accessTokenTtlSeconds: number;
  logLevel: string;
  /** LOG_FORMAT: `json` or `pretty`; unset = pretty on a terminal, JSON otherwise (src/logger.ts). */
  logFormat: 'json' | 'pretty' | undefined;
  /** Token-endpoint flood guards: requests per source address and minute; slow verifications at once. */
  tokenEndpoint: { perSourcePerMinute: number; maxSlowVerifications: number };
  /**
   * Where /metrics and /ready are served: `adminPort` set = only there (on `adminHost`); else on the
   * API port, and only with `Authorization: Bearer <adminToken>` when ADMIN_TOKEN is set.
   */
  admin: { port: number | undefined; host: string; token: string | undefined };
  /** Payload encryption in Temporal and the codec endpoint for the Web UI. */
  codec: {
    /** PAYLOAD_KEYS: `kid:key,...` newest first; unset = a key file in DATA_DIR. */
    payloadKeys: string | undefined;
    /** Origins (the Web UI's) allowed to call /codec from a browser. */
    corsOrigins: string[];
    /** Callers on loopback may decode without a token (the embedded dev UI). */
    allowLoopback: boolean;
  };
  /** The console's sign-in and sessions (src/http/console). */
  console: ConsoleConfig;
}

/** OIDC sign-in for people: the organisation's OpenID provider, and how its groups map to roles. */
export interface OidcConfig {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** OIDC_ROLES_CLAIM: the ID-token claim holding the person's groups. */
  rolesClaim: string;
  /** OIDC_ROLE_MAP: group → role name (a group name may hold commas); src/auth/oidc.ts checks the names. */
  roleMap: Record<string, string>;
}

export interface ConsoleConfig {
  /** Set when OIDC_ISSUER, OIDC_CLIENT_ID and OIDC_CLIENT_SECRET are. */
  oidc: OidcConfig | undefined;
  /** CONSOLE_LOCAL_SIGNIN: sign-in with an API client's id and secret (default: on without OIDC). */
  localSignIn: boolean;
  /** CONSOLE_SESSION_IDLE and CONSOLE_SESSION_MAX, in seconds. */
  sessionIdleSeconds: number;
  sessionMaxSeconds: number;
  /** OIDC_ALLOW_INSECURE: an `http://` issuer is accepted (tests and development). */
  oidcAllowInsecure: boolean;
  /** TEMPORAL_UI_URL: where "Open in Temporal" links. */
  temporalUiUrl: string;
}

/** Every environment variable the service reads (the configuration table in docs/operations.md lists them all). */
export const CONFIG_VARIABLES = [
  'PORT',
  'HOST',
  'BASE_URL',
  'DATA_DIR',
  'DATABASE_URL',
  'TEMPORAL_ADDRESS',
  'TEMPORAL_NAMESPACE',
  'TEMPORAL_TASK_QUEUE',
  'TEMPORAL_PORT',
  'TEMPORAL_UI_PORT',
  'TEMPORAL_METRICS_BIND',
  'WORKFLOW_BUNDLE',
  'WORKER_MAX_CONCURRENT_ACTIVITIES',
  'WORKER_MAX_CONCURRENT_WORKFLOW_TASKS',
  'WORKER_MAX_CACHED_WORKFLOWS',
  'WEBHOOK_MAX_IN_FLIGHT',
  'WEBHOOK_MAX_IN_FLIGHT_PER_LISTENER',
  'WEBHOOK_MAX_IN_FLIGHT_PER_SOURCE',
  'WEBHOOK_MIN_BODY_BYTES_PER_SECOND',
  'BOOTSTRAP_CLIENT_ID',
  'BOOTSTRAP_CLIENT_SECRET',
  'SECRET_KEY',
  'TRUST_PROXY',
  'ALLOW_INSECURE_JWKS',
  'ALLOW_PRIVATE_OUTBOUND',
  'ACCESS_TOKEN_TTL_SECONDS',
  'LOG_LEVEL',
  'LOG_FORMAT',
  'TOKEN_RATE_LIMIT_PER_MINUTE',
  'TOKEN_MAX_SLOW_VERIFICATIONS',
  'ADMIN_PORT',
  'ADMIN_HOST',
  'ADMIN_TOKEN',
  'WORKER_VERIFY_HISTORIES',
  'PAYLOAD_KEYS',
  'CODEC_CORS_ORIGINS',
  'CODEC_ALLOW_LOOPBACK',
  'OIDC_ISSUER',
  'OIDC_CLIENT_ID',
  'OIDC_CLIENT_SECRET',
  'OIDC_ROLES_CLAIM',
  'OIDC_ROLE_MAP',
  'OIDC_ALLOW_INSECURE',
  'TEMPORAL_UI_URL',
  'CONSOLE_LOCAL_SIGNIN',
  'CONSOLE_SESSION_IDLE',
  'CONSOLE_SESSION_MAX',
] as const;

/** Shortest BOOTSTRAP_CLIENT_SECRET (and ADMIN_TOKEN) accepted: an operator-chosen secret. */
export const MIN_BOOTSTRAP_SECRET_LENGTH = 32;

function integer(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(`${name} must be an integer between ${min} and ${max}`);
  }
  return value;
}

function flag(env: NodeJS.ProcessEnv, name: string): boolean {
  const raw = (env[name] ?? '').trim().toLowerCase();
  if (raw === '' || raw === 'false' || raw === '0' || raw === 'no') return false;
  if (raw === 'true' || raw === '1' || raw === 'yes') return true;
  throw new ConfigError(`${name} must be true or false`);
}

function logFormat(env: NodeJS.ProcessEnv): Config['logFormat'] {
  const raw = optional(env, 'LOG_FORMAT')?.toLowerCase();
  if (raw === undefined || raw === 'json' || raw === 'pretty') return raw;
  throw new ConfigError('LOG_FORMAT must be json or pretty (unset: pretty on a terminal, JSON otherwise)');
}

/** TRUST_PROXY as a hop count; `true` (the old boolean) means one proxy, with a warning. */
function proxyHops(env: NodeJS.ProcessEnv, warnings: string[]): number {
  const raw = (env.TRUST_PROXY ?? '').trim().toLowerCase();
  if (raw === '' || raw === 'false' || raw === 'no') return 0;
  if (raw === 'true' || raw === 'yes') {
    warnings.push('TRUST_PROXY=true is read as TRUST_PROXY=1 (one proxy in front appends X-Forwarded-For); set the number of proxies explicitly');
    return 1;
  }
  if (!/^\d+$/.test(raw) || Number(raw) > 10) {
    throw new ConfigError('TRUST_PROXY must be the number of proxies in front of the API (0 to 10), or false');
  }
  return Number(raw);
}

function optional(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const raw = env[name]?.trim();
  return raw ? raw : undefined;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const port = integer(env, 'PORT', 8080, 0, 65535);
  const baseUrl = (optional(env, 'BASE_URL') ?? `http://localhost:${port}`).replace(/\/+$/, '');
  try {
    const parsed = new URL(baseUrl);
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new Error();
  } catch {
    throw new ConfigError('BASE_URL must be an absolute http(s) URL');
  }
  const clientId = optional(env, 'BOOTSTRAP_CLIENT_ID');
  const clientSecret = optional(env, 'BOOTSTRAP_CLIENT_SECRET');
  if ((clientId === undefined) !== (clientSecret === undefined)) {
    throw new ConfigError('BOOTSTRAP_CLIENT_ID and BOOTSTRAP_CLIENT_SECRET must be set together');
  }
  if (clientSecret !== undefined && clientSecret.length < MIN_BOOTSTRAP_SECRET_LENGTH) {
    throw new ConfigError(
      `BOOTSTRAP_CLIENT_SECRET must be at least ${MIN_BOOTSTRAP_SECRET_LENGTH} characters (e.g. \`openssl rand -base64 32\`)`,
    );
  }
  const adminToken = optional(env, 'ADMIN_TOKEN');
  if (adminToken !== undefined && adminToken.length < MIN_BOOTSTRAP_SECRET_LENGTH) {
    throw new ConfigError(`ADMIN_TOKEN must be at least ${MIN_BOOTSTRAP_SECRET_LENGTH} characters`);
  }
  const warnings: string[] = [];
  const trustProxy = proxyHops(env, warnings);
  return {
    port,
    host: optional(env, 'HOST') ?? '0.0.0.0',
    baseUrl,
    dataDir: path.resolve(optional(env, 'DATA_DIR') ?? './.data'),
    databaseUrl: optional(env, 'DATABASE_URL'),
    temporal: {
      address: optional(env, 'TEMPORAL_ADDRESS'),
      namespace: optional(env, 'TEMPORAL_NAMESPACE') ?? 'default',
      taskQueue: optional(env, 'TEMPORAL_TASK_QUEUE') ?? 'automations',
      uiPort: integer(env, 'TEMPORAL_UI_PORT', 8233, 1, 65535),
      embeddedPort: integer(env, 'TEMPORAL_PORT', 7233, 1, 65535),
      metricsBind: optional(env, 'TEMPORAL_METRICS_BIND'),
    },
    worker: {
      ...(optional(env, 'WORKFLOW_BUNDLE') ? { workflowBundlePath: path.resolve(optional(env, 'WORKFLOW_BUNDLE')!) } : {}),
      ...(env.WORKER_MAX_CONCURRENT_ACTIVITIES
        ? { maxConcurrentActivityTaskExecutions: integer(env, 'WORKER_MAX_CONCURRENT_ACTIVITIES', 100, 1, 10000) }
        : {}),
      ...(env.WORKER_MAX_CONCURRENT_WORKFLOW_TASKS
        ? { maxConcurrentWorkflowTaskExecutions: integer(env, 'WORKER_MAX_CONCURRENT_WORKFLOW_TASKS', 40, 2, 10000) }
        : {}),
      ...(env.WORKER_MAX_CACHED_WORKFLOWS ? { maxCachedWorkflows: integer(env, 'WORKER_MAX_CACHED_WORKFLOWS', 200, 0, 100000) } : {}),
      ...(flag(env, 'WORKER_VERIFY_HISTORIES') ? { verifyHistories: true } : {}),
    },
    webhookMaxInFlight: integer(env, 'WEBHOOK_MAX_IN_FLIGHT', 256, 1, 100000),
    webhookAdmission: {
      perListener: integer(env, 'WEBHOOK_MAX_IN_FLIGHT_PER_LISTENER', 128, 1, 100000),
      perSource: integer(env, 'WEBHOOK_MAX_IN_FLIGHT_PER_SOURCE', 64, 1, 100000),
      minBytesPerSecond: integer(env, 'WEBHOOK_MIN_BODY_BYTES_PER_SECOND', 512, 0, 100_000_000),
      graceMs: 2000,
    },
    bootstrap: clientId && clientSecret ? { clientId, clientSecret } : undefined,
    secretKey: optional(env, 'SECRET_KEY'),
    trustProxy,
    warnings,
    allowInsecureJwks: flag(env, 'ALLOW_INSECURE_JWKS'),
    allowPrivateOutbound: flag(env, 'ALLOW_PRIVATE_OUTBOUND'),
    accessTokenTtlSeconds: integer(env, 'ACCESS_TOKEN_TTL_SECONDS', 600, 60, 86400),
    logLevel: optional(env, 'LOG_LEVEL') ?? 'info',
    logFormat: logFormat(env),
    tokenEndpoint: {
      perSourcePerMinute: integer(env, 'TOKEN_RATE_LIMIT_PER_MINUTE', 60, 1, 1_000_000),
      maxSlowVerifications: integer(env, 'TOKEN_MAX_SLOW_VERIFICATIONS', 2, 1, 64),
    },
    admin: {
      port: env.ADMIN_PORT ? integer(env, 'ADMIN_PORT', 0, 0, 65535) : undefined,
      host: optional(env, 'ADMIN_HOST') ?? '127.0.0.1',
      token: adminToken,
    },
    codec: codecConfig(env),
    console: consoleConfig(env),
  };
}

/** Seconds of a CONSOLE_SESSION_* duration (`"1800s"`; a bare number of seconds is read as seconds too). */
function sessionSeconds(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = optional(env, name);
  if (raw === undefined) return fallback;
  const ms = parseDuration(/^\d+$/.test(raw) ? `${raw}s` : raw);
  if (ms === undefined || ms < 60_000 || ms > 30 * 86_400_000) {
    throw new ConfigError(`${name} must be a duration between 60s and 2592000s (30 days), such as "1800s"`);
  }
  return Math.ceil(ms / 1000);
}

function oidcConfig(env: NodeJS.ProcessEnv): OidcConfig | undefined {
  const issuer = optional(env, 'OIDC_ISSUER');
  const clientId = optional(env, 'OIDC_CLIENT_ID');
  const clientSecret = optional(env, 'OIDC_CLIENT_SECRET');
  if (issuer === undefined && clientId === undefined && clientSecret === undefined) return undefined;
  if (issuer === undefined || clientId === undefined || clientSecret === undefined) {
    throw new ConfigError('OIDC_ISSUER, OIDC_CLIENT_ID and OIDC_CLIENT_SECRET must be set together');
  }
  let url: URL;
  try {
    url = new URL(issuer);
  } catch {
    throw new ConfigError('OIDC_ISSUER must be an absolute https URL');
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && flag(env, 'OIDC_ALLOW_INSECURE'))) {
    throw new ConfigError('OIDC_ISSUER must be an https URL (OIDC_ALLOW_INSECURE=true allows http:// in tests and development only)');
  }
  return { issuer, clientId, clientSecret, rolesClaim: optional(env, 'OIDC_ROLES_CLAIM') ?? 'groups', roleMap: roleMap(env) };
}

function roleMap(env: NodeJS.ProcessEnv): Record<string, string> {
  const raw = optional(env, 'OIDC_ROLE_MAP');
  if (raw === undefined) return {};
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    throw new ConfigError('OIDC_ROLE_MAP must be a JSON object {"<group>": "<role>", ...}');
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) throw new ConfigError('OIDC_ROLE_MAP must be a JSON object {"<group>": "<role>", ...}');
  const map: Record<string, string> = {};
  for (const [group, role] of Object.entries(value)) {
    if (typeof role !== 'string') throw new ConfigError(`OIDC_ROLE_MAP: the role of "${group}" must be a role name (super_admin, admin, read_only)`);
    map[group] = role;
  }
  return map;
}

function consoleConfig(env: NodeJS.ProcessEnv): ConsoleConfig {
  const oidc = oidcConfig(env);
  const local = env.CONSOLE_LOCAL_SIGNIN === undefined || env.CONSOLE_LOCAL_SIGNIN.trim() === '' ? oidc === undefined : flag(env, 'CONSOLE_LOCAL_SIGNIN');
  const sessionIdleSeconds = sessionSeconds(env, 'CONSOLE_SESSION_IDLE', 1800);
  const sessionMaxSeconds = sessionSeconds(env, 'CONSOLE_SESSION_MAX', 43200);
  if (sessionIdleSeconds > sessionMaxSeconds) throw new ConfigError('CONSOLE_SESSION_IDLE must not be longer than CONSOLE_SESSION_MAX');
  const uiPort = integer(env, 'TEMPORAL_UI_PORT', 8233, 1, 65535);
  return {
    oidc,
    localSignIn: local,
    oidcAllowInsecure: flag(env, 'OIDC_ALLOW_INSECURE'),
    sessionIdleSeconds,
    sessionMaxSeconds,
    temporalUiUrl: (optional(env, 'TEMPORAL_UI_URL') ?? `http://localhost:${uiPort}`).replace(/\/+$/, ''),
  };
}

/**
 * With the embedded dev server (no TEMPORAL_ADDRESS) the Web UI is on 127.0.0.1:TEMPORAL_UI_PORT
 * in a browser on this machine: its origin is allowed and loopback callers need no token.
 * Elsewhere both are off unless configured.
 */
function codecConfig(env: NodeJS.ProcessEnv): Config['codec'] {
  const embedded = optional(env, 'TEMPORAL_ADDRESS') === undefined;
  const uiPort = integer(env, 'TEMPORAL_UI_PORT', 8233, 1, 65535);
  const listed = optional(env, 'CODEC_CORS_ORIGINS');
  const corsOrigins = listed
    ? listed.split(',').map((origin) => origin.trim()).filter((origin) => origin !== '')
    : embedded
      ? [`http://127.0.0.1:${uiPort}`, `http://localhost:${uiPort}`]
      : [];
  for (const origin of corsOrigins) {
    let parsed: URL;
    try {
      parsed = new URL(origin);
    } catch {
      throw new ConfigError(`CODEC_CORS_ORIGINS: "${origin}" is not an origin such as https://temporal-ui.example.com`);
    }
    if ((parsed.protocol !== 'http:' && parsed.protocol !== 'https:') || parsed.origin !== origin) {
      throw new ConfigError(`CODEC_CORS_ORIGINS: "${origin}" is not an origin such as https://temporal-ui.example.com (scheme, host, port; no path)`);
    }
  }
  return {
    payloadKeys: optional(env, 'PAYLOAD_KEYS'),
    corsOrigins,
    allowLoopback: env.CODEC_ALLOW_LOOPBACK === undefined || env.CODEC_ALLOW_LOOPBACK === '' ? embedded : flag(env, 'CODEC_ALLOW_LOOPBACK'),
  };
}
