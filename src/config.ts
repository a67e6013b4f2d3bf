/**
 * Typed, validated configuration read from the environment. No side effects at import time:
 * call `loadConfig(process.env)` where the process starts. One schema, CONFIG_SCHEMA (each
 * variable's type, default, description and reader), gives the loader, the `Config` type (what
 * `arrange` makes of the values) and the configuration table of docs/operations.md#configuration
 * (`npm run docs:config`).
 */
import path from 'node:path';
import { ConfigError } from './errors';
import { parseDuration } from './duration';

/** Shortest BOOTSTRAP_CLIENT_SECRET (and ADMIN_TOKEN) accepted: an operator-chosen secret. */
export const MIN_BOOTSTRAP_SECRET_LENGTH = 32;

/**
 * Runs one concurrency key may have waiting: the default, and the most LANE_QUEUE_LIMIT accepts (a
 * lane carries its waiting run ids through continue-as-new: 10,000 ids stay well below Temporal's
 * 2 MiB payload limit).
 */
export const LANE_QUEUE_LIMITS = { default: 1000, max: 10_000 } as const;

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

/** The console's sign-in and sessions (src/http/console). */
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

/**
 * One environment variable: what the configuration table of docs/operations.md#configuration says of it, and how
 * it is read.
 */
export interface ConfigVariable<T> {
  /** Its type as the table shows it, e.g. `integer 0..65535`. */
  readonly type: string;
  /** Its default as the table shows it (markdown). */
  readonly default: string;
  /** What it sets (markdown). */
  readonly description: string;
  /** Its value in `env`; throws ConfigError naming the variable when the value is invalid. */
  read(env: NodeJS.ProcessEnv, warnings: string[]): T;
}

function optional(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const raw = env[name]?.trim();
  return raw ? raw : undefined;
}

function readInteger(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(`${name} must be an integer between ${min} and ${max}`);
  }
  return value;
}

function readFlag(env: NodeJS.ProcessEnv, name: string): boolean {
  const raw = (env[name] ?? '').trim().toLowerCase();
  if (raw === '' || raw === 'false' || raw === '0' || raw === 'no') return false;
  if (raw === 'true' || raw === '1' || raw === 'yes') return true;
  throw new ConfigError(`${name} must be true or false`);
}

// The variable's own name is given by its key in CONFIG_SCHEMA; `variable` binds it.
type Unnamed<T> = Omit<ConfigVariable<T>, 'read'> & {
  read(env: NodeJS.ProcessEnv, name: string, warnings: string[]): T;
};

const integer = (min: number, max: number, fallback: number, description: string): Unnamed<number> => ({
  type: `integer ${min}..${max}`,
  default: `\`${fallback}\``,
  description,
  read: (env, name) => readInteger(env, name, fallback, min, max),
});

/** An integer whose absence leaves the choice to someone else (`defaultText` says whom). */
const optionalInteger = (
  min: number,
  max: number,
  defaultText: string,
  description: string,
): Unnamed<number | undefined> => ({
  type: `integer ${min}..${max}`,
  default: defaultText,
  description,
  read: (env, name) => (env[name] ? readInteger(env, name, 0, min, max) : undefined),
});

const text = (fallback: string, description: string): Unnamed<string> => ({
  type: 'string',
  default: `\`${fallback}\``,
  description,
  read: (env, name) => optional(env, name) ?? fallback,
});

const optionalText = (type: string, description: string, defaultText = 'unset'): Unnamed<string | undefined> => ({
  type,
  default: defaultText,
  description,
  read: (env, name) => optional(env, name),
});

const flag = (description: string, defaultText = '`false`'): Unnamed<boolean> => ({
  type: 'boolean',
  default: defaultText,
  description,
  read: (env, name) => readFlag(env, name),
});

/** TRUST_PROXY as a hop count; `true` (the old boolean) means one proxy, with a warning. */
function readProxyHops(env: NodeJS.ProcessEnv, warnings: string[]): number {
  const raw = (env.TRUST_PROXY ?? '').trim().toLowerCase();
  if (raw === '' || raw === 'false' || raw === 'no') return 0;
  if (raw === 'true' || raw === 'yes') {
    warnings.push(
      'TRUST_PROXY=true is read as TRUST_PROXY=1 (one proxy in front appends X-Forwarded-For); set the number of proxies explicitly',
    );
    return 1;
  }
  if (!/^\d+$/.test(raw) || Number(raw) > 10) {
    throw new ConfigError('TRUST_PROXY must be the number of proxies in front of the API (0 to 10), or false');
  }
  return Number(raw);
}

/** Seconds of a CONSOLE_SESSION_* duration (`"1800s"`; a bare number of seconds is read as seconds too). */
function readSessionSeconds(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = optional(env, name);
  if (raw === undefined) return fallback;
  const ms = parseDuration(/^\d+$/.test(raw) ? `${raw}s` : raw);
  if (ms === undefined || ms < 60_000 || ms > 30 * 86_400_000) {
    throw new ConfigError(`${name} must be a duration between 60s and 2592000s (30 days), such as "1800s"`);
  }
  return Math.ceil(ms / 1000);
}

/** OIDC_ROLE_MAP: a JSON object of group → role name. */
function readRoleMap(env: NodeJS.ProcessEnv): Record<string, string> {
  const raw = optional(env, 'OIDC_ROLE_MAP');
  if (raw === undefined) return {};
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    throw new ConfigError('OIDC_ROLE_MAP must be a JSON object {"<group>": "<role>", ...}');
  }
  if (!value || typeof value !== 'object' || Array.isArray(value))
    throw new ConfigError('OIDC_ROLE_MAP must be a JSON object {"<group>": "<role>", ...}');
  const map: Record<string, string> = {};
  for (const [group, role] of Object.entries(value)) {
    if (typeof role !== 'string')
      throw new ConfigError(
        `OIDC_ROLE_MAP: the role of "${group}" must be a role name (super_admin, admin, read_only)`,
      );
    map[group] = role;
  }
  return map;
}

/**
 * Every environment variable the service reads, in the order of the configuration table in
 * docs/operations.md#configuration, which `npm run docs:config` writes from it (test/unit/config-table.test.ts
 * fails when the table is stale). Nothing else in the service reads the environment.
 */
const SCHEMA = {
  PORT: integer(0, 65535, 8080, 'API port'),
  HOST: text('0.0.0.0', 'API listen address'),
  BASE_URL: {
    type: 'URL',
    default: '`http://localhost:$PORT`',
    description:
      'tenant base URL (absolute http(s)): the JWT `sub`, the prefix of listener URLs and of the JWT `aud`; a trailing `/` is dropped',
    read: (env: NodeJS.ProcessEnv): string => {
      const baseUrl = (
        optional(env, 'BASE_URL') ?? `http://localhost:${readInteger(env, 'PORT', 8080, 0, 65535)}`
      ).replace(/\/+$/, '');
      try {
        const parsed = new URL(baseUrl);
        if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new Error();
      } catch {
        throw new ConfigError('BASE_URL must be an absolute http(s) URL');
      }
      return baseUrl;
    },
  },
  DATA_DIR: {
    type: 'path',
    default: '`./.data`',
    description: 'embedded data: Temporal’s SQLite file, the embedded store, the key files',
    read: (env: NodeJS.ProcessEnv): string => path.resolve(optional(env, 'DATA_DIR') ?? './.data'),
  },
  DATABASE_URL: optionalText('URL', 'PostgreSQL connection string; unset = embedded PGlite store in `DATA_DIR`'),
  TEMPORAL_ADDRESS: optionalText('host:port', 'external Temporal frontend; unset = embedded dev server'),
  TEMPORAL_NAMESPACE: text('default', 'Temporal namespace'),
  TEMPORAL_TASK_QUEUE: text('automations', 'task queue of the automation worker'),
  TEMPORAL_PORT: integer(1, 65535, 7233, 'port of the embedded dev server'),
  TEMPORAL_UI_PORT: integer(1, 65535, 8233, 'port of the embedded dev server’s Web UI'),
  TEMPORAL_METRICS_BIND: optionalText(
    'host:port',
    'where the worker serves the Temporal SDK’s Prometheus metrics',
    'unset (off)',
  ),
  BOOTSTRAP_CLIENT_ID: optionalText(
    'string',
    'a `super_admin` client with exactly these credentials (with `BOOTSTRAP_CLIENT_SECRET`) is ensured at start-up; set both or neither',
  ),
  BOOTSTRAP_CLIENT_SECRET: optionalText(
    'string',
    `the secret of the bootstrap client (with \`BOOTSTRAP_CLIENT_ID\`); at least ${MIN_BOOTSTRAP_SECRET_LENGTH} characters`,
  ),
  SECRET_KEY: optionalText(
    'hex or base64url, 32 bytes',
    'key sealing, in the database, the HMAC signing secrets, the access-token signing keys, the page-token key and the outbound ' +
      'secrets (AES-256-GCM), and keying the hashes of generated client secrets; unset = `DATA_DIR/secret.key`, made with mode ' +
      '0600. Every API and worker process sharing a database needs the same key',
  ),
  PAYLOAD_KEYS: optionalText(
    '`kid:key,kid:key`',
    'keys encrypting Temporal payloads (AES-256-GCM), newest first, each key 32 bytes as hex or base64url; unset = ' +
      '`DATA_DIR/payload.keys`, made with one key and mode 0600. API and workers must share them ' +
      '([security.md](security.md#payload-encryption-in-temporal-and-the-codec-endpoint))',
  ),
  CODEC_CORS_ORIGINS: {
    type: 'comma-separated origins',
    default:
      'with the embedded dev server `http://127.0.0.1:$TEMPORAL_UI_PORT`, `http://localhost:$TEMPORAL_UI_PORT`; else none',
    description: 'origins (the Temporal Web UI’s) allowed to call `/codec` from a browser',
    read: (env: NodeJS.ProcessEnv): string[] => codecCorsOrigins(env),
  },
  CODEC_ALLOW_LOOPBACK: {
    type: 'boolean',
    default: '`true` with the embedded dev server, else `false`',
    description: 'loopback callers may use `/codec` without a token',
    read: (env: NodeJS.ProcessEnv): boolean =>
      env.CODEC_ALLOW_LOOPBACK === undefined || env.CODEC_ALLOW_LOOPBACK === ''
        ? optional(env, 'TEMPORAL_ADDRESS') === undefined
        : readFlag(env, 'CODEC_ALLOW_LOOPBACK'),
  },
  TRUST_PROXY: {
    type: 'integer 0..10, or `false`',
    default: '`0`',
    description:
      'number of proxies in front that append to `X-Forwarded-For`: the source address is the N-th entry from the right ' +
      '(`1` behind one nginx); entries the client wrote are never trusted; `true` is read as `1` with a warning; `false` = `0`',
    read: (env: NodeJS.ProcessEnv, _name: string, warnings: string[]): number => readProxyHops(env, warnings),
  },
  ALLOW_INSECURE_JWKS: flag(
    'allow `http://` and loopback/private **JWKS URLs** of JWT listeners (development and tests only); it opens nothing else — ' +
      '`callWebhook` targets are governed by `ALLOW_PRIVATE_OUTBOUND`',
  ),
  ALLOW_PRIVATE_OUTBOUND: flag(
    'let `callWebhook` steps (and their dry runs) reach `http://` and loopback/private addresses (development and tests only); ' +
      'link-local and cloud metadata addresses stay refused',
  ),
  ACCESS_TOKEN_TTL_SECONDS: integer(60, 86400, 600, 'lifetime of access tokens in seconds'),
  LOG_LEVEL: text('info', 'pino log level'),
  LOG_FORMAT: {
    type: '`json` or `pretty`',
    default: 'unset',
    description:
      '`json` (one JSON object per line) or `pretty` (readable lines); unset = `pretty` when stdout is a terminal, else `json`',
    read: (env: NodeJS.ProcessEnv): 'json' | 'pretty' | undefined => {
      const raw = optional(env, 'LOG_FORMAT')?.toLowerCase();
      if (raw === undefined || raw === 'json' || raw === 'pretty') return raw;
      throw new ConfigError('LOG_FORMAT must be json or pretty (unset: pretty on a terminal, JSON otherwise)');
    },
  },
  WEBHOOK_MAX_IN_FLIGHT: integer(
    1,
    100000,
    256,
    'webhook deliveries processed at once per API process; beyond it 429 with `Retry-After`',
  ),
  WEBHOOK_MAX_IN_FLIGHT_PER_LISTENER: integer(
    1,
    100000,
    128,
    'under the global cap: deliveries in progress for one listener; beyond it 429 with `Retry-After`',
  ),
  WEBHOOK_MAX_IN_FLIGHT_PER_SOURCE: integer(
    1,
    100000,
    64,
    'under the global cap: deliveries in progress from one source address; beyond it 429 with `Retry-After`',
  ),
  WEBHOOK_MIN_BODY_BYTES_PER_SECOND: integer(
    0,
    100_000_000,
    512,
    'least average data rate of a webhook body after a 2 s grace; slower is 408 (`0` = off)',
  ),
  LANE_QUEUE_LIMIT: integer(
    1,
    LANE_QUEUE_LIMITS.max,
    LANE_QUEUE_LIMITS.default,
    'runs of one concurrency key that may wait (`QUEUED`) at a time, exactly, across API processes (set it the same on each); a delivery for a key whose queue is at the bound answers 429 with `Retry-After` and records nothing ([api.md](api.md#flow-control-between-runs))',
  ),
  TOKEN_RATE_LIMIT_PER_MINUTE: integer(
    1,
    1_000_000,
    60,
    '`/auth/v1/token` requests per source (an IPv4 address or an IPv6 /64) and minute, across all API processes; beyond it 429 with `Retry-After`. OIDC sign-in starts (`/console/auth/login`) get as many, counted apart',
  ),
  TOKEN_MAX_SLOW_VERIFICATIONS: integer(
    1,
    64,
    2,
    'scrypt verifications (operator-chosen secrets, and one per refused attempt) running at once; beyond it 503 with `Retry-After`',
  ),
  ADMIN_PORT: optionalInteger(
    0,
    65535,
    'unset',
    'serve `/ready` and `/metrics` only on this separate listener (not on `PORT`)',
  ),
  ADMIN_HOST: text('127.0.0.1', 'listen address of `ADMIN_PORT`'),
  ADMIN_TOKEN: optionalText(
    'string',
    `\`/ready\` and \`/metrics\` need \`Authorization: Bearer <ADMIN_TOKEN>\`; at least ${MIN_BOOTSTRAP_SECRET_LENGTH} characters`,
  ),
  WORKFLOW_BUNDLE: {
    type: 'path',
    default: 'unset',
    description: 'a prebuilt workflow bundle (`npm run bundle`); unset = bundle from source at start',
    read: (env: NodeJS.ProcessEnv): string | undefined => {
      const raw = optional(env, 'WORKFLOW_BUNDLE');
      return raw === undefined ? undefined : path.resolve(raw);
    },
  },
  WORKER_MAX_CONCURRENT_ACTIVITIES: optionalInteger(1, 10000, 'SDK default', 'worker: activities run at once'),
  WORKER_MAX_CONCURRENT_WORKFLOW_TASKS: optionalInteger(2, 10000, 'SDK default', 'worker: workflow tasks run at once'),
  // (the worker applies its default, DEFAULT_MAX_CACHED_WORKFLOWS in src/temporal/worker.ts)
  WORKER_MAX_CACHED_WORKFLOWS: optionalInteger(
    0,
    100000,
    '`200` (the worker’s)',
    'worker: runs kept in the sticky cache (0 = no cache, every task replays its history)',
  ),
  WORKER_VERIFY_HISTORIES: flag(
    '`true`: the worker replays the committed workflow histories (`histories/`) against its bundle at start and refuses to start ' +
      'when any fails ([upgrades.md](upgrades.md))',
    'off',
  ),
  MEMORY_TRIM: {
    type: 'boolean',
    default: '`true`',
    description:
      'hand the C heap’s free pages back to the kernel while the process is idle (glibc’s `malloc_trim`, through the optional `koffi` package; ' +
      'a no-op where either is missing); `false` turns it off ([performance.md](performance.md))',
    read: (env: NodeJS.ProcessEnv): boolean =>
      env.MEMORY_TRIM === undefined || env.MEMORY_TRIM.trim() === '' ? true : readFlag(env, 'MEMORY_TRIM'),
  },
  OIDC_ISSUER: optionalText(
    'URL',
    'console sign-in through the organisation’s OpenID Connect provider (with `OIDC_CLIENT_ID`, `OIDC_CLIENT_SECRET`); https unless `OIDC_ALLOW_INSECURE`; the redirect URI to register is `$BASE_URL/console/auth/callback`',
    'unset (local sign-in)',
  ),
  OIDC_CLIENT_ID: optionalText('string', 'the console’s client id at the OpenID provider'),
  OIDC_CLIENT_SECRET: optionalText('string', 'the console’s client secret at the OpenID provider'),
  OIDC_ROLES_CLAIM: text('groups', 'the ID-token claim holding the person’s groups'),
  OIDC_ROLE_MAP: {
    type: 'JSON object',
    default: 'unset (no one gets a role)',
    description:
      'group → role (`super_admin`, `admin`, `read_only`), e.g. `{"cn=iam,ou=groups": "admin"}`; a person with no mapped role gets no session',
    read: (env: NodeJS.ProcessEnv): Record<string, string> => readRoleMap(env),
  },
  OIDC_ALLOW_INSECURE: flag('allow an `http://` OIDC issuer (tests and development only)'),
  TEMPORAL_UI_URL: {
    type: 'URL',
    default: 'the embedded Web UI (`http://localhost:$TEMPORAL_UI_PORT`)',
    description: 'where the console’s “Open in Temporal” links',
    read: (env: NodeJS.ProcessEnv): string =>
      (
        optional(env, 'TEMPORAL_UI_URL') ?? `http://localhost:${readInteger(env, 'TEMPORAL_UI_PORT', 8233, 1, 65535)}`
      ).replace(/\/+$/, ''),
  },
  TRACE_UI_URL: optionalText(
    'URL template',
    'where the console’s “Open trace” links on a traced run: `{traceId}` is replaced by the run’s trace id, e.g. `http://jaeger:16686/trace/{traceId}`',
    'unset: no link',
  ),
  OTEL_EXPORTER_OTLP_ENDPOINT: optionalText(
    'URL',
    'turns tracing on: the OTLP endpoint spans are exported to (OpenTelemetry’s own variable; with `OTEL_EXPORTER_OTLP_PROTOCOL`, `OTEL_SERVICE_NAME`, `OTEL_TRACES_SAMPLER`, `OTEL_RESOURCE_ATTRIBUTES`: docs/operations.md#tracing)',
    'unset: tracing off, the SDK not loaded',
  ),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: optionalText(
    'URL',
    'turns tracing on too: the endpoint for traces only (used as given, no `/v1/traces` appended)',
  ),
  OTEL_SERVICE_NAME: optionalText(
    'string',
    'the service name every process exports its spans under (read by OpenTelemetry’s SDK)',
    '`automation-governance`',
  ),
  OTEL_SDK_DISABLED: flag('`true` keeps tracing off even with an endpoint set'),
  CONSOLE_LOCAL_SIGNIN: {
    type: 'boolean',
    default: '`true` without OIDC, `false` with it',
    description: 'console sign-in with an API client’s id and secret',
    read: (env: NodeJS.ProcessEnv): boolean | undefined =>
      optional(env, 'CONSOLE_LOCAL_SIGNIN') === undefined ? undefined : readFlag(env, 'CONSOLE_LOCAL_SIGNIN'),
  },
  CONSOLE_SESSION_IDLE: {
    type: 'duration 60s..2592000s',
    default: '`1800s`',
    description: 'console session idle lifetime',
    read: (env: NodeJS.ProcessEnv): number => readSessionSeconds(env, 'CONSOLE_SESSION_IDLE', 1800),
  },
  CONSOLE_SESSION_MAX: {
    type: 'duration 60s..2592000s',
    default: '`43200s`',
    description: 'console session absolute lifetime',
    read: (env: NodeJS.ProcessEnv): number => readSessionSeconds(env, 'CONSOLE_SESSION_MAX', 43200),
  },
} satisfies Record<string, Unnamed<unknown>>;

type Schema = typeof SCHEMA;
export type ConfigVariableName = keyof Schema;

/** Every variable the service reads, with its type, default and description (the configuration table). */
export const CONFIG_SCHEMA: { readonly [K in ConfigVariableName]: ConfigVariable<ReturnType<Schema[K]['read']>> } =
  Object.fromEntries(
    Object.entries(SCHEMA).map(([name, variable]) => [
      name,
      {
        ...variable,
        read: (env: NodeJS.ProcessEnv, warnings: string[]) =>
          (variable.read as Unnamed<unknown>['read'])(env, name, warnings),
      },
    ]),
  ) as never;

/** Every environment variable the service reads (the keys of CONFIG_SCHEMA). */
export const CONFIG_VARIABLES = Object.keys(SCHEMA) as ConfigVariableName[];

/** The value of every variable, typed by CONFIG_SCHEMA. */
export type ConfigValues = { [K in ConfigVariableName]: ReturnType<Schema[K]['read']> };

function readValues(env: NodeJS.ProcessEnv, warnings: string[]): ConfigValues {
  const values: Partial<Record<ConfigVariableName, unknown>> = {};
  for (const name of CONFIG_VARIABLES) values[name] = CONFIG_SCHEMA[name].read(env, warnings);
  return values as ConfigValues;
}

/** The service's configuration: the values of CONFIG_SCHEMA, arranged by who uses them. */
function arrange(v: ConfigValues, warnings: string[]) {
  return {
    port: v.PORT,
    host: v.HOST,
    baseUrl: v.BASE_URL,
    dataDir: v.DATA_DIR,
    databaseUrl: v.DATABASE_URL,
    temporal: {
      /** External frontend address; undefined means: run the embedded dev server. */
      address: v.TEMPORAL_ADDRESS,
      namespace: v.TEMPORAL_NAMESPACE,
      taskQueue: v.TEMPORAL_TASK_QUEUE,
      uiPort: v.TEMPORAL_UI_PORT,
      embeddedPort: v.TEMPORAL_PORT,
      metricsBind: v.TEMPORAL_METRICS_BIND,
    },
    worker: {
      ...(v.WORKFLOW_BUNDLE !== undefined ? { workflowBundlePath: v.WORKFLOW_BUNDLE } : {}),
      ...(v.WORKER_MAX_CONCURRENT_ACTIVITIES !== undefined
        ? { maxConcurrentActivityTaskExecutions: v.WORKER_MAX_CONCURRENT_ACTIVITIES }
        : {}),
      ...(v.WORKER_MAX_CONCURRENT_WORKFLOW_TASKS !== undefined
        ? { maxConcurrentWorkflowTaskExecutions: v.WORKER_MAX_CONCURRENT_WORKFLOW_TASKS }
        : {}),
      ...(v.WORKER_MAX_CACHED_WORKFLOWS !== undefined ? { maxCachedWorkflows: v.WORKER_MAX_CACHED_WORKFLOWS } : {}),
      ...(v.WORKER_VERIFY_HISTORIES ? { verifyHistories: true } : {}),
    },
    /** Trim the C heap while idle (src/memory-trim.ts). */
    memoryTrim: v.MEMORY_TRIM,
    webhookMaxInFlight: v.WEBHOOK_MAX_IN_FLIGHT,
    webhookAdmission: {
      perListener: v.WEBHOOK_MAX_IN_FLIGHT_PER_LISTENER,
      perSource: v.WEBHOOK_MAX_IN_FLIGHT_PER_SOURCE,
      minBytesPerSecond: v.WEBHOOK_MIN_BODY_BYTES_PER_SECOND,
      graceMs: 2000,
    },
    bootstrap:
      v.BOOTSTRAP_CLIENT_ID && v.BOOTSTRAP_CLIENT_SECRET
        ? { clientId: v.BOOTSTRAP_CLIENT_ID, clientSecret: v.BOOTSTRAP_CLIENT_SECRET }
        : undefined,
    secretKey: v.SECRET_KEY,
    trustProxy: v.TRUST_PROXY,
    /** Settings that were accepted but deserve a warning in the log at start-up. */
    warnings,
    allowInsecureJwks: v.ALLOW_INSECURE_JWKS,
    allowPrivateOutbound: v.ALLOW_PRIVATE_OUTBOUND,
    accessTokenTtlSeconds: v.ACCESS_TOKEN_TTL_SECONDS,
    logLevel: v.LOG_LEVEL,
    logFormat: v.LOG_FORMAT,
    laneQueueLimit: v.LANE_QUEUE_LIMIT,
    tokenEndpoint: {
      perSourcePerMinute: v.TOKEN_RATE_LIMIT_PER_MINUTE,
      maxSlowVerifications: v.TOKEN_MAX_SLOW_VERIFICATIONS,
    },
    /**
     * Where /metrics and /ready are served: `port` set = only there (on `host`); else on the API
     * port, and only with `Authorization: Bearer <token>` when ADMIN_TOKEN is set.
     */
    admin: { port: v.ADMIN_PORT, host: v.ADMIN_HOST, token: v.ADMIN_TOKEN },
    /** Payload encryption in Temporal and the codec endpoint for the Web UI. */
    codec: { payloadKeys: v.PAYLOAD_KEYS, corsOrigins: v.CODEC_CORS_ORIGINS, allowLoopback: v.CODEC_ALLOW_LOOPBACK },
    /** The console's sign-in and sessions (src/http/console). */
    console: consoleOf(v),
    /** OpenTelemetry tracing (src/tracing): on when an OTLP endpoint is set and the SDK is not disabled. */
    tracing: {
      enabled:
        !v.OTEL_SDK_DISABLED &&
        (v.OTEL_EXPORTER_OTLP_ENDPOINT !== undefined || v.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT !== undefined),
      /** TRACE_UI_URL: the console's "Open trace" link, `{traceId}` replaced. */
      uiUrl: v.TRACE_UI_URL,
    },
  };
}

/** The console's settings; throws ConfigError for an incomplete or insecure OIDC set-up. */
function consoleOf(v: ConfigValues): ConsoleConfig {
  let oidc: OidcConfig | undefined;
  const [issuer, clientId, clientSecret] = [v.OIDC_ISSUER, v.OIDC_CLIENT_ID, v.OIDC_CLIENT_SECRET];
  if (issuer !== undefined || clientId !== undefined || clientSecret !== undefined) {
    if (issuer === undefined || clientId === undefined || clientSecret === undefined) {
      throw new ConfigError('OIDC_ISSUER, OIDC_CLIENT_ID and OIDC_CLIENT_SECRET must be set together');
    }
    let url: URL;
    try {
      url = new URL(issuer);
    } catch {
      throw new ConfigError('OIDC_ISSUER must be an absolute https URL');
    }
    if (url.protocol !== 'https:' && !(url.protocol === 'http:' && v.OIDC_ALLOW_INSECURE)) {
      throw new ConfigError(
        'OIDC_ISSUER must be an https URL (OIDC_ALLOW_INSECURE=true allows http:// in tests and development only)',
      );
    }
    oidc = { issuer, clientId, clientSecret, rolesClaim: v.OIDC_ROLES_CLAIM, roleMap: v.OIDC_ROLE_MAP };
  }
  if (v.CONSOLE_SESSION_IDLE > v.CONSOLE_SESSION_MAX)
    throw new ConfigError('CONSOLE_SESSION_IDLE must not be longer than CONSOLE_SESSION_MAX');
  return {
    oidc,
    localSignIn: v.CONSOLE_LOCAL_SIGNIN ?? oidc === undefined,
    oidcAllowInsecure: v.OIDC_ALLOW_INSECURE,
    sessionIdleSeconds: v.CONSOLE_SESSION_IDLE,
    sessionMaxSeconds: v.CONSOLE_SESSION_MAX,
    temporalUiUrl: v.TEMPORAL_UI_URL,
  };
}

/** The configuration's type: what `arrange` makes of CONFIG_SCHEMA's values. */
export type Config = ReturnType<typeof arrange>;

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const warnings: string[] = [];
  const v = readValues(env, warnings);
  if ((v.BOOTSTRAP_CLIENT_ID === undefined) !== (v.BOOTSTRAP_CLIENT_SECRET === undefined)) {
    throw new ConfigError('BOOTSTRAP_CLIENT_ID and BOOTSTRAP_CLIENT_SECRET must be set together');
  }
  if (v.BOOTSTRAP_CLIENT_SECRET !== undefined && v.BOOTSTRAP_CLIENT_SECRET.length < MIN_BOOTSTRAP_SECRET_LENGTH) {
    throw new ConfigError(
      `BOOTSTRAP_CLIENT_SECRET must be at least ${MIN_BOOTSTRAP_SECRET_LENGTH} characters (e.g. \`openssl rand -base64 32\`)`,
    );
  }
  if (v.ADMIN_TOKEN !== undefined && v.ADMIN_TOKEN.length < MIN_BOOTSTRAP_SECRET_LENGTH) {
    throw new ConfigError(`ADMIN_TOKEN must be at least ${MIN_BOOTSTRAP_SECRET_LENGTH} characters`);
  }
  return arrange(v, warnings);
}

/**
 * With the embedded dev server (no TEMPORAL_ADDRESS) the Web UI is on 127.0.0.1:TEMPORAL_UI_PORT
 * in a browser on this machine: its origin is allowed (and loopback callers need no token:
 * CODEC_ALLOW_LOOPBACK). Elsewhere both are off unless configured.
 */
function codecCorsOrigins(env: NodeJS.ProcessEnv): string[] {
  const embedded = optional(env, 'TEMPORAL_ADDRESS') === undefined;
  const uiPort = readInteger(env, 'TEMPORAL_UI_PORT', 8233, 1, 65535);
  const listed = optional(env, 'CODEC_CORS_ORIGINS');
  const corsOrigins = listed
    ? listed
        .split(',')
        .map((origin) => origin.trim())
        .filter((origin) => origin !== '')
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
      throw new ConfigError(
        `CODEC_CORS_ORIGINS: "${origin}" is not an origin such as https://temporal-ui.example.com (scheme, host, port; no path)`,
      );
    }
  }
  return corsOrigins;
}
