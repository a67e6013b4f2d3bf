/**
 * docker-compose.yml and `npm run stack:prod` (scripts/stack-prod.ts) describe the same production
 * shape: the same versions, the same Temporal server config and schema commands, the same three
 * databases and two roles, the same namespace set-up, the same UI settings and the same app
 * environment. A change to one without the other fails here.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parse } from 'yaml';
import { CONFIG_VARIABLES, loadConfig } from '../../src/config';
import { RETENTION_SECONDS } from '../../src/temporal/setup';
import { TEMPORAL_ENVCONFIG_VARIABLES, connectionOptions } from '../../src/temporal/connection';
import {
  DATABASES,
  ROLES,
  TEMPORAL_SERVICES,
  TEMPORAL_TLS_SERVER_NAME,
  TLS_HOLDERS,
  appEnvironment,
  lowPorts,
  renderTemplate,
  temporalEnvironment,
  uiEnvironment,
} from '../../scripts/stack-prod';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const binaries = require('../../scripts/prod-binaries.js') as {
  TEMPORAL_VERSION: string;
  UI_VERSION: string;
  SERVER_SOURCE: string;
};

const root = path.resolve(__dirname, '../..');
const read = (file: string): string => fs.readFileSync(path.join(root, file), 'utf8');

interface Service {
  image?: string;
  build?: unknown;
  depends_on?: Record<string, { condition: string }> | string[];
  command?: string[];
  entrypoint?: string[];
  environment?: Record<string, unknown>;
  volumes?: string[];
  ports?: string[];
  healthcheck?: { test?: string[] };
}
const compose = parse(read('docker-compose.yml'), { merge: true }) as { services: Record<string, Service> };
const shellEnv: Record<string, string> = {
  SECRET_KEY: 'a'.repeat(64),
  PAYLOAD_KEYS: `k1:${'d'.repeat(43)}`,
  POSTGRES_PASSWORD: 'pg',
  TEMPORAL_DB_PASSWORD: 'temporal-password',
  APP_DB_PASSWORD: 'app-password',
  BASE_URL: 'https://hooks.example.com',
};
function substitute(value: unknown): string {
  return String(value).replace(/\$\{(\w+)(?::([-?])([^}]*))?\}/g, (_m, name: string, op?: string, arg?: string) => {
    if (shellEnv[name] !== undefined) return shellEnv[name]!;
    if (op === '-') return arg ?? '';
    throw new Error(`${name} must be set: ${arg}`);
  });
}
const envOf = (service: string): Record<string, string> =>
  Object.fromEntries(Object.entries(compose.services[service]?.environment ?? {}).map(([k, v]) => [k, substitute(v)]));

const TLS_DIR = '/state/tls';
const scriptTemporalEnv = temporalEnvironment({
  pgHost: '127.0.0.1',
  pgPort: '5432',
  password: 'x',
  ports: { TEMPORAL_FRONTEND_PORT: '7233' },
  tlsDir: TLS_DIR,
});
const scriptApp = {
  tlsDir: TLS_DIR,
  databaseUrl: `postgres://${ROLES.app}:pw@127.0.0.1:5432/${DATABASES.app}`,
  temporalAddress: '127.0.0.1:7233',
  secretKey: 'b'.repeat(64),
  payloadKeys: `k1:${'c'.repeat(43)}`,
  uiUrl: 'http://127.0.0.1:8233',
  entryUrl: 'http://127.0.0.1:8080',
  dataDir: '/tmp/x',
};

describe('versions', () => {
  it('the Temporal server, its schema tool and the Web UI are the versions the script builds', () => {
    const temporal = binaries.TEMPORAL_VERSION.replace(/^v/, '');
    // The server of deploy/temporal/server, on both sides: its go.mod pins the version, and compose's
    // image replaces the binary of temporalio/server of that version with it.
    expect(path.relative(root, binaries.SERVER_SOURCE)).toBe('deploy/temporal/server');
    expect(read('deploy/temporal/server/go.mod')).toMatch(
      new RegExp(`^\\s*go\\.temporal\\.io/server ${binaries.TEMPORAL_VERSION.replace(/\./g, '\\.')}$`, 'm'),
    );
    const dockerfile = read('deploy/temporal/server/Dockerfile');
    expect(dockerfile).toMatch(new RegExp(`^FROM temporalio/server:${temporal.replace(/\./g, '\\.')}$`, 'm'));
    expect(dockerfile).toMatch(/COPY --from=build [^\n]*\/out\/temporal-server \/usr\/local\/bin\/temporal-server$/m);
    for (const service of TEMPORAL_SERVICES) {
      expect(compose.services[`temporal-${service}`]?.build).toBe('./deploy/temporal/server');
      expect(compose.services[`temporal-${service}`]?.image).toBe(`automation-governance/temporal-server:${temporal}`);
    }
    expect(compose.services['temporal-schema']?.image).toBe(`temporalio/admin-tools:${temporal}`);
    expect(compose.services['temporal-ui']?.image).toBe(`temporalio/ui:${binaries.UI_VERSION.replace(/^v/, '')}`);
  });

  it('no auto-setup image (Temporal says it is for development)', () => {
    expect(read('docker-compose.yml')).not.toMatch(/auto-setup/);
  });
});

describe('the Temporal server', () => {
  it('four services, each its own process from the same config file and environment name', () => {
    for (const service of TEMPORAL_SERVICES) {
      const s = compose.services[`temporal-${service}`]!;
      expect(s.command).toEqual([service]);
      expect(s.entrypoint?.join(' ')).toMatch(
        /temporal-server --root \/etc\/temporal --config config --env production start --service \$\$0/,
      );
      expect(s.volumes).toContain('./deploy/temporal:/etc/temporal/config:ro');
    }
    expect(fs.existsSync(path.join(root, 'deploy/temporal/production.yaml'))).toBe(true);
    expect(read('scripts/stack-prod.ts')).toMatch(
      /'--config', 'deploy\/temporal', '--env', 'production', 'start', '--service'/,
    );
    // An authorizer on both sides: no `--allow-no-auth` anywhere.
    expect(read('docker-compose.yml')).not.toMatch(/allow-no-auth/);
    expect(read('scripts/stack-prod.ts')).not.toMatch(/allow-no-auth/);
  });

  it('the frontend authorizes by the same file on both sides, and its subjects are the certificates the script makes', () => {
    for (const service of TEMPORAL_SERVICES) {
      const file = envOf(`temporal-${service}`).TEMPORAL_AUTHORIZATION_FILE!;
      // deploy/temporal is mounted at /etc/temporal/config.
      expect(path.posix.relative('/etc/temporal/config', file)).toBe('authorization.yaml');
    }
    expect(path.relative(root, scriptTemporalEnv.TEMPORAL_AUTHORIZATION_FILE!)).toBe(
      'deploy/temporal/authorization.yaml',
    );
    const authorization = parse(read('deploy/temporal/authorization.yaml')) as {
      roles: Record<string, { access: string }>;
      subjects: Record<string, string>;
    };
    const script = read('deploy/temporal/make-certs.sh');
    const issued = [...script.matchAll(/^issue (\S+) (\S+) (\S+) (\S+) /gm)].map((m) => ({
      ca: m[1],
      holder: m[2],
      cn: m[4],
    }));
    const clients = issued.filter((c) => c.ca === 'ca' && c.cn !== TEMPORAL_TLS_SERVER_NAME);
    expect(clients.map((c) => c.cn).sort()).toEqual(Object.keys(authorization.subjects).sort());
    const access = (cn: string): string | undefined => authorization.roles[authorization.subjects[cn]!]?.access;
    expect(access('temporal-client-ui')).toBe('read');
    expect([access('temporal-client-api'), access('temporal-client-worker')]).toEqual(['write', 'write']);
    expect(access('temporal-system-worker')).toBe('admin');
  });

  it('the config reads every variable both sides set, and both set the same persistence variables', () => {
    const config = read('deploy/temporal/production.yaml');
    const composeEnv = envOf('temporal-frontend');
    // TEMPORAL_AUTHORIZATION_FILE is read by the server's command line, not by the config.
    const configNames = [...Object.keys(composeEnv), ...Object.keys(scriptTemporalEnv)].filter(
      (name) => name !== 'TEMPORAL_AUTHORIZATION_FILE',
    );
    for (const name of configNames) expect([name, config.includes(`"${name}"`)]).toEqual([name, true]);
    for (const name of [
      'POSTGRES_HOST',
      'POSTGRES_PORT',
      'TEMPORAL_DB',
      'TEMPORAL_VISIBILITY_DB',
      'TEMPORAL_DB_USER',
      'TEMPORAL_DB_PASSWORD',
      'TEMPORAL_DYNAMIC_CONFIG_FILE',
    ]) {
      expect([name, name in composeEnv, name in scriptTemporalEnv]).toEqual([name, true, true]);
    }
    for (const name of ['TEMPORAL_DB', 'TEMPORAL_VISIBILITY_DB', 'TEMPORAL_DB_USER', 'TEMPORAL_LOG_LEVEL'])
      expect([name, composeEnv[name]]).toEqual([name, scriptTemporalEnv[name]]);
    expect(path.basename(composeEnv.TEMPORAL_DYNAMIC_CONFIG_FILE!)).toBe(
      path.basename(scriptTemporalEnv.TEMPORAL_DYNAMIC_CONFIG_FILE!),
    );
  });

  it('PostgreSQL persistence and SQL visibility, no Elasticsearch', () => {
    const config = read('deploy/temporal/production.yaml').replace(/^\s*#.*$/gm, '');
    expect(config.match(/pluginName: postgres12/g)).toHaveLength(2);
    expect(config).not.toMatch(/elasticsearch/i);
  });

  it('the schema job runs the same temporal-sql-tool script as the stack, on the same databases', () => {
    const job = compose.services['temporal-schema']!;
    expect(job.entrypoint).toEqual(['sh', '/deploy/temporal/setup-schema.sh']);
    expect(read('scripts/stack-prod.ts')).toMatch(/deploy\/temporal\/setup-schema\.sh/);
    const script = read('deploy/temporal/setup-schema.sh');
    expect(script).toMatch(/setup-schema -v 0\.0/);
    expect(script).toMatch(/update-schema -d "\$SCHEMA_DIR\/\$dir\/versioned"/);
    const env = envOf('temporal-schema');
    expect([env.TEMPORAL_DB, env.TEMPORAL_VISIBILITY_DB, env.TEMPORAL_DB_USER]).toEqual([
      DATABASES.temporal,
      DATABASES.visibility,
      ROLES.temporal,
    ]);
    expect(env.SQL_PASSWORD).toBe(env.TEMPORAL_DB_PASSWORD);
  });
});

describe('databases', () => {
  it('three databases, two roles: Temporal has its own role, distinct from the app', () => {
    expect(ROLES.temporal).not.toBe(ROLES.app);
    const init = read('deploy/postgres/init-databases.sh');
    expect(init).toContain(`CREATE DATABASE ${DATABASES.temporal} OWNER ${ROLES.temporal};`);
    expect(init).toContain(`CREATE DATABASE ${DATABASES.visibility} OWNER ${ROLES.temporal};`);
    expect(init).toContain(`CREATE DATABASE ${DATABASES.app} OWNER ${ROLES.app};`);
    expect(compose.services.postgres?.volumes).toContain(
      './deploy/postgres/init-databases.sh:/docker-entrypoint-initdb.d/init-databases.sh:ro',
    );
    for (const name of ['api', 'worker']) {
      const url = new URL(loadConfig(envOf(name)).databaseUrl!);
      expect([url.username, url.pathname]).toEqual([ROLES.app, `/${DATABASES.app}`]);
    }
    const scriptUrl = new URL(scriptApp.databaseUrl);
    expect([scriptUrl.username, scriptUrl.pathname]).toEqual([ROLES.app, `/${DATABASES.app}`]);
  });
});

describe('namespace', () => {
  it('retention 7 days, made by the same code on both sides (ensureNamespace at api/worker start, and by the script)', () => {
    expect(RETENTION_SECONDS).toBe(7 * 24 * 3600);
    expect(read('scripts/stack-prod.ts')).toMatch(/ensureNamespace\(connection, 'default'\)/);
    expect(read('src/main.ts')).toMatch(/await prepareNamespace\(target, config, logger\)/);
    expect(loadConfig(envOf('api')).temporal.namespace).toBe('default');
  });
});

describe('the app processes', () => {
  it.each(['api', 'worker'] as const)(
    '%s: the same namespace, task queue, proxy trust and variables on both sides',
    (role) => {
      const composeEnv = envOf(role);
      const scriptEnv = appEnvironment(role, { ...scriptApp, port: 8080 });
      // The service's own variables, or Temporal's environment configuration (TLS, checked below).
      const names = [...Object.keys(composeEnv), ...Object.keys(scriptEnv)].filter((name) => name !== 'NODE_ENV');
      const known: readonly string[] = [...CONFIG_VARIABLES, ...TEMPORAL_ENVCONFIG_VARIABLES];
      for (const name of names) expect(known).toContain(name);
      const a = loadConfig(composeEnv);
      const b = loadConfig(scriptEnv);
      expect([a.temporal.namespace, a.temporal.taskQueue, a.trustProxy]).toEqual([
        b.temporal.namespace,
        b.temporal.taskQueue,
        b.trustProxy,
      ]);
      for (const name of ['DATABASE_URL', 'TEMPORAL_ADDRESS', 'SECRET_KEY', 'PAYLOAD_KEYS', 'BASE_URL'])
        expect([name, name in composeEnv, name in scriptEnv]).toEqual([name, true, true]);
      // Traced on both sides, to the trace backend beside them (compose: the jaegertracing service).
      const traced = appEnvironment(role, { ...scriptApp, port: 8080, otlpEndpoint: 'http://127.0.0.1:4318' });
      expect([a.tracing.enabled, loadConfig(traced).tracing.enabled]).toEqual([true, true]);
      expect(composeEnv.OTEL_SERVICE_NAME).toBe(traced.OTEL_SERVICE_NAME);
      expect(new URL(composeEnv.OTEL_EXPORTER_OTLP_ENDPOINT!).hostname).toBe('jaegertracing');
      expect(compose.services.jaegertracing?.image).toMatch(/^jaegertracing\/jaeger:/);
      expect(compose.services[role]?.command).toEqual([role]);
    },
  );

  it('the APIs trust exactly the one proxy in front (nginx)', () => {
    expect(loadConfig(envOf('api')).trustProxy).toBe(1);
    expect(loadConfig(appEnvironment('api', scriptApp)).trustProxy).toBe(1);
  });

  it('the APIs serve /ready and /metrics on an admin port only (never the port nginx proxies to), and are probed there', () => {
    const composeApi = loadConfig(envOf('api'));
    const scriptApi = loadConfig(appEnvironment('api', { ...scriptApp, port: 8080, adminPort: 9090 }));
    for (const config of [composeApi, scriptApi]) {
      expect(config.admin.port).toEqual(expect.any(Number));
      expect(config.admin.port).not.toBe(config.port);
    }
    expect(JSON.stringify(compose.services.api?.healthcheck)).toContain(`127.0.0.1:${composeApi.admin.port}/ready`);
    expect(read('scripts/stack-prod.ts')).toMatch(
      /adminPorts\.forEach\(\(port, i\) => \{\s+readiness\[`api-\$\{i \+ 1\}`\] = \(\) =>\s+until\(\s*`api-\$\{i \+ 1\}`,\s+120_000,\s+\(\) => httpOk\(`http:\/\/127\.0\.0\.1:\$\{port\}\/ready`\)/,
    );
  });

  it('the workers run the prebuilt workflow bundle (Dockerfile and script)', () => {
    expect(read('Dockerfile')).toMatch(/WORKFLOW_BUNDLE=\/app\/dist\/workflow-bundle\.js/);
    expect(appEnvironment('worker', scriptApp).WORKFLOW_BUNDLE).toMatch(/dist\/workflow-bundle\.js$/);
    expect(read('scripts/stack-prod.ts')).toMatch(/'dist\/src\/main\.js', 'worker'/);
  });
});

describe('nginx', () => {
  it('one template for both: appends X-Forwarded-For in front of the API', () => {
    const template = read('deploy/nginx/api.conf.template');
    expect(template).toMatch(/proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;/);
    expect(compose.services.nginx?.volumes).toContain('./deploy/nginx:/etc/nginx/templates:ro');
    const env = envOf('nginx');
    const rendered = renderTemplate(template, env);
    expect(rendered).toMatch(/upstream api \{\s+server api:8080/);
    expect(rendered).not.toMatch(/\$\{\w+\}/);
    expect(rendered).toContain('$proxy_add_x_forwarded_for');
    expect(compose.services.api?.ports).toBeUndefined();
  });
});

describe('the Temporal Web UI', () => {
  it('read-only, loopback only, payloads decoded by <entry>/codec — in compose and in the script', () => {
    const ui = envOf('temporal-ui');
    const script = uiEnvironment({
      temporalAddress: '127.0.0.1:7233',
      uiPort: 8233,
      uiUrl: 'http://127.0.0.1:8233',
      entryUrl: scriptApp.entryUrl,
      tlsDir: TLS_DIR,
    });
    expect(ui.TEMPORAL_DISABLE_WRITE_ACTIONS).toBe('true');
    expect(script.TEMPORAL_DISABLE_WRITE_ACTIONS).toBe('true');
    expect(ui.TEMPORAL_CODEC_ENDPOINT).toBe(`${shellEnv.BASE_URL}/codec`);
    expect(script.TEMPORAL_CODEC_ENDPOINT).toBe(`${scriptApp.entryUrl}/codec`);
    expect(compose.services['temporal-ui']?.ports).toEqual(['127.0.0.1:8233:8080']);
    expect(script.TEMPORAL_UI_HOST).toBe('127.0.0.1');
    expect(compose.services['temporal-ui']?.volumes).toContain(
      './deploy/temporal-ui/docker.yaml:/home/ui-server/config/docker.yaml:ro',
    );
    const config = read('deploy/temporal-ui/docker.yaml');
    for (const name of [...Object.keys(ui), ...Object.keys(script)])
      expect([name, config.includes(`"${name}"`)]).toEqual([name, true]);
  });

  it('the script\'s APIs link "Open in Temporal" to its own Web UI, on whatever port that runs', () => {
    const uiUrl = 'http://127.0.0.1:28233';
    expect(
      loadConfig(appEnvironment('api', { ...scriptApp, uiUrl, port: 8080, adminPort: 9090 })).console.temporalUiUrl,
    ).toBe(uiUrl);
  });
});

/** The host folder a compose service mounts at `target` (`${TEMPORAL_CERTS_DIR:-...}` substituted). */
function mountedFrom(service: string, target: string): string | undefined {
  for (const volume of compose.services[service]?.volumes ?? []) {
    const [source, at] = substitute(volume).split(':');
    if (at === target) return source;
  }
  return undefined;
}

/** The certificate file a path inside a container comes from, as `<holder>/<file>` of the certificate folder. */
function certFileOf(service: string, file: string): string {
  const folder = path.posix.dirname(file);
  const source = mountedFrom(service, folder);
  if (!source) throw new Error(`${service}: nothing is mounted at ${folder}`);
  return `${path.posix.basename(source)}/${path.posix.basename(file)}`;
}
const scriptCertFile = (file: string): string => path.relative(TLS_DIR, file);

describe('mutual TLS to Temporal (the same certificates, holders and names on both sides)', () => {
  it('one certificate script: the compose job and the stack run deploy/temporal/make-certs.sh into one folder per holder', () => {
    const job = compose.services['temporal-certs']!;
    expect(job.entrypoint).toEqual(['sh', '/deploy/temporal/make-certs.sh']);
    expect(job.volumes).toContain('./deploy/temporal:/deploy/temporal:ro');
    expect(read('scripts/stack-prod.ts')).toMatch(/'deploy\/temporal\/make-certs\.sh'/);
    const script = read('deploy/temporal/make-certs.sh');
    for (const holder of TLS_HOLDERS) expect(script).toMatch(new RegExp(`mkdir -p [^\n]*"\\$DIR/${holder}"`));
    expect(script).toMatch(/umask 077/);
    expect(script).toMatch(/chmod 600 "\$DIR"\/\*\/\*\.key/);
    // The frontend certificate names what every client expects.
    expect(script).toContain(`DNS:${TEMPORAL_TLS_SERVER_NAME}`);
  });

  it('the config requires a client certificate from the cluster CA on the frontend and between the services (the server itself: test/integration/prod-tls.test.ts)', () => {
    const config = read('deploy/temporal/production.yaml').replace(/^\s*#.*$/gm, '');
    expect(config.match(/requireClientAuth: true/g)).toHaveLength(2);
    // Two CAs: the services trust only the internode CA between them, the frontend only the cluster CA.
    // The template's actions: lines of their own dropped, $tls a folder, every other value a placeholder.
    const rendered = config
      .replace(/^\s*\{\{[^}]*\}\}\s*$/gm, '')
      .replace(/\{\{ \$tls \}\}/g, '/tls')
      .replace(/\{\{[^}]*\}\}/g, 'x');
    const tls = (parse(rendered) as { global: { tls: unknown } }).global.tls as {
      internode: { server: { clientCaFiles: string[] }; client: { rootCaFiles: string[] } };
      frontend: { server: { clientCaFiles: string[] } };
      systemWorker: { certFile: string; client: { rootCaFiles: string[] } };
    };
    expect(tls.internode.server.clientCaFiles).toEqual(['/tls/internode-ca.pem']);
    expect(tls.internode.client.rootCaFiles).toEqual(['/tls/internode-ca.pem']);
    expect(tls.frontend.server.clientCaFiles).toEqual(['/tls/ca.pem']);
    expect([tls.systemWorker.certFile, tls.systemWorker.client.rootCaFiles]).toEqual([
      '/tls/system-worker.pem',
      ['/tls/ca.pem'],
    ]);
    expect(config).toMatch(/\$tls := env "TEMPORAL_TLS_DIR"/);
    expect(config).toContain(`serverName: ${TEMPORAL_TLS_SERVER_NAME}`);
    for (const service of TEMPORAL_SERVICES) {
      const env = envOf(`temporal-${service}`);
      expect(certFileOf(`temporal-${service}`, `${env.TEMPORAL_TLS_DIR}/ca.pem`)).toBe('temporal/ca.pem');
      expect(
        compose.services[`temporal-${service}`]?.volumes?.some((v) => v.endsWith(':ro') && v.includes('/temporal:')),
      ).toBe(true);
    }
    expect(path.relative(TLS_DIR, scriptTemporalEnv.TEMPORAL_TLS_DIR!)).toBe('temporal');
  });

  it.each(['api', 'worker'] as const)(
    '%s: its own client certificate, the CA and the server name, through the Temporal environment configuration',
    (role) => {
      const composeEnv = envOf(role);
      const scriptEnv = appEnvironment(role, { ...scriptApp, port: 8080 });
      const tlsNames = (env: Record<string, string>): string[] =>
        Object.keys(env)
          .filter((n) => n.startsWith('TEMPORAL_TLS_'))
          .sort();
      expect(tlsNames(composeEnv)).toEqual(tlsNames(scriptEnv));
      expect(tlsNames(scriptEnv)).toEqual([
        'TEMPORAL_TLS_CLIENT_CERT_PATH',
        'TEMPORAL_TLS_CLIENT_KEY_PATH',
        'TEMPORAL_TLS_SERVER_CA_CERT_PATH',
        'TEMPORAL_TLS_SERVER_NAME',
      ]);
      expect([composeEnv.TEMPORAL_TLS_SERVER_NAME, scriptEnv.TEMPORAL_TLS_SERVER_NAME]).toEqual([
        TEMPORAL_TLS_SERVER_NAME,
        TEMPORAL_TLS_SERVER_NAME,
      ]);
      for (const name of [
        'TEMPORAL_TLS_CLIENT_CERT_PATH',
        'TEMPORAL_TLS_CLIENT_KEY_PATH',
        'TEMPORAL_TLS_SERVER_CA_CERT_PATH',
      ]) {
        expect([name, certFileOf(role, composeEnv[name]!)]).toEqual([name, scriptCertFile(scriptEnv[name]!)]);
      }
      expect(scriptCertFile(scriptEnv.TEMPORAL_TLS_CLIENT_CERT_PATH!)).toBe(`${role}/client.pem`);
    },
  );

  it("the environment the stack gives a worker makes the connection code present the worker's certificate", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'prod-shape-tls-'));
    const saved = { ...process.env };
    try {
      execFileSync('sh', [path.join(root, 'deploy/temporal/make-certs.sh')], {
        env: { PATH: process.env.PATH, CERT_DIR: dir },
      });
      Object.assign(process.env, appEnvironment('worker', { ...scriptApp, tlsDir: dir }));
      const options = connectionOptions({ address: '127.0.0.1:7233', embedded: false });
      const tls = options.tls as {
        serverNameOverride?: string;
        serverRootCACertificate?: Uint8Array;
        clientCertPair?: { crt: Uint8Array; key: Uint8Array };
      };
      const text = (bytes: Uint8Array | undefined): string => Buffer.from(bytes ?? []).toString('utf8');
      const file = (name: string): string => fs.readFileSync(path.join(dir, name), 'utf8');
      expect(tls.serverNameOverride).toBe(TEMPORAL_TLS_SERVER_NAME);
      expect(text(tls.serverRootCACertificate)).toBe(file('ca/ca.pem'));
      expect(text(tls.clientCertPair?.crt)).toBe(file('worker/client.pem'));
      expect(text(tls.clientCertPair?.key)).toBe(file('worker/client.key'));
    } finally {
      process.env = saved;
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("the Web UI server connects with the ui certificate, verifying the frontend's name", () => {
    const composeEnv = envOf('temporal-ui');
    const scriptEnv = uiEnvironment({
      temporalAddress: '127.0.0.1:7233',
      uiPort: 8233,
      uiUrl: 'http://127.0.0.1:8233',
      entryUrl: scriptApp.entryUrl,
      tlsDir: TLS_DIR,
    });
    for (const name of ['TEMPORAL_TLS_CA', 'TEMPORAL_TLS_CERT', 'TEMPORAL_TLS_KEY']) {
      expect([name, certFileOf('temporal-ui', composeEnv[name]!)]).toEqual([name, scriptCertFile(scriptEnv[name]!)]);
    }
    expect(scriptCertFile(scriptEnv.TEMPORAL_TLS_CERT!)).toBe('ui/client.pem');
    for (const env of [composeEnv, scriptEnv])
      expect([env.TEMPORAL_TLS_SERVER_NAME, env.TEMPORAL_TLS_ENABLE_HOST_VERIFICATION]).toEqual([
        TEMPORAL_TLS_SERVER_NAME,
        'true',
      ]);
  });

  it('every container that talks to Temporal waits for the certificate job; the services of compose are those of the stack', () => {
    for (const name of [...TEMPORAL_SERVICES.map((s) => `temporal-${s}`)]) {
      expect(
        (compose.services[name] as { depends_on?: Record<string, { condition: string }> }).depends_on?.[
          'temporal-certs'
        ],
      ).toEqual({
        condition: 'service_completed_successfully',
      });
    }
    expect(Object.keys(compose.services).sort()).toEqual(
      [
        'api',
        'jaegertracing',
        'nginx',
        'postgres',
        'temporal-certs',
        'temporal-schema',
        'temporal-ui',
        'worker',
        ...TEMPORAL_SERVICES.map((s) => `temporal-${s}`),
      ].sort(),
    );
  });
});

describe('the public entry', () => {
  it('compose publishes nginx on loopback by default, and nginx keeps /metrics and /ready off the entry', () => {
    expect((compose.services.nginx?.ports ?? []).map(substitute)).toEqual(['127.0.0.1:8080:8080']);
    const template = read('deploy/nginx/api.conf.template');
    // Every spelling of both (test/integration/admin-spellings.test.ts runs this file in a real nginx).
    expect(template).toMatch(
      /location ~\* \^\/\(metrics\|ready\)\(\/\|\$\) \{\s+default_type application\/json;\s+return 404 /,
    );
    expect(read('scripts/stack-prod.ts')).toMatch(/deploy\/nginx\/api\.conf\.template/);
  });
});

describe("the stack's ports", () => {
  it('each below the ephemeral range (no outgoing connection can take it before its process binds it), never the same twice', async () => {
    const [low] = fs.readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    const port = lowPorts();
    const ports: number[] = [];
    for (let i = 0; i < 400; i++) ports.push(await port());
    expect(new Set(ports).size).toBe(ports.length);
    expect(ports.filter((p) => p >= low! || p < 1024)).toEqual([]);
  });
});
