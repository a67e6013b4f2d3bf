/**
 * What can be checked of the deployment without a Docker engine: docker-compose.yml's app
 * services parse with loadConfig and agree with each other, the Dockerfile is multi-stage,
 * non-root and ships the prebuilt workflow bundle, and docs/operations.md#configuration documents every variable.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { CONFIG_VARIABLES, loadConfig } from '../../src/config';
import { TEMPORAL_ENVCONFIG_VARIABLES, connectionOptions } from '../../src/temporal/connection';

const root = path.resolve(__dirname, '../..');
const read = (file: string): string => fs.readFileSync(path.join(root, file), 'utf8');

/** Compose-style `${VAR:-default}` / `${VAR:?message}` with an empty shell environment. */
function substitute(value: unknown, env: Record<string, string>): string {
  return String(value).replace(/\$\{(\w+)(?::([-?])([^}]*))?\}/g, (_m, name: string, op?: string, arg?: string) => {
    if (env[name] !== undefined) return env[name]!;
    if (op === '-') return arg ?? '';
    throw new Error(`${name} must be set: ${arg}`);
  });
}

interface ComposeService {
  environment?: Record<string, unknown>;
  command?: string[];
  healthcheck?: unknown;
}

describe('docker-compose.yml', () => {
  const compose = parse(read('docker-compose.yml'), { merge: true }) as { services: Record<string, ComposeService> };
  const shellEnv = {
    SECRET_KEY: 'a'.repeat(64),
    APP_DB_PASSWORD: 'app-password',
    PAYLOAD_KEYS: `k1:${'b'.repeat(64)}`,
  };
  const envOf = (service: string): Record<string, string> =>
    Object.fromEntries(
      Object.entries(compose.services[service]?.environment ?? {}).map(([k, v]) => [k, substitute(v, shellEnv)]),
    );

  it.each(['api', 'worker'])('%s: every variable is one the service reads, and loadConfig accepts them', (service) => {
    const env = envOf(service);
    // The service's own variables, or Temporal's environment configuration (TLS to the frontend).
    const known: readonly string[] = [...CONFIG_VARIABLES, ...TEMPORAL_ENVCONFIG_VARIABLES];
    for (const name of Object.keys(env)) expect(known).toContain(name);
    const config = loadConfig(env);
    expect(config.temporal.address).toBe('temporal-frontend:7233');
    expect(config.databaseUrl).toMatch(/^postgres:\/\/app:.+@postgres:5432\/app$/);
    expect(config.secretKey).toBe(shellEnv.SECRET_KEY);
  });

  it('runs the API and the worker as separate roles on one task queue and namespace', () => {
    expect(compose.services.api?.command).toEqual(['api']);
    expect(compose.services.worker?.command).toEqual(['worker']);
    const api = loadConfig(envOf('api'));
    const worker = loadConfig(envOf('worker'));
    expect(worker.temporal.taskQueue).toBe(api.temporal.taskQueue);
    expect(worker.temporal.namespace).toBe(api.temporal.namespace);
    expect(worker.databaseUrl).toBe(api.databaseUrl);
    expect(worker.temporal.metricsBind).toBe('0.0.0.0:9464');
    expect(worker.worker.maxConcurrentActivityTaskExecutions).toBe(100);
  });

  it('refuses to start without SECRET_KEY, which every API process must share', () => {
    expect(() =>
      Object.entries(compose.services.api?.environment ?? {}).forEach(([, v]) =>
        substitute(v, { APP_DB_PASSWORD: 'x' }),
      ),
    ).toThrow(/SECRET_KEY/);
  });

  it('has health checks', () => {
    for (const name of ['postgres', 'temporal-frontend', 'api', 'worker']) {
      // A command Docker can run: ["CMD", program, ...] or ["CMD-SHELL", "shell line"].
      const test = (compose.services[name]?.healthcheck as { test?: unknown } | undefined)?.test;
      expect([
        name,
        Array.isArray(test) &&
          /^CMD(-SHELL)?$/.test(String(test[0])) &&
          test.length >= 2 &&
          String(test[1]).trim() !== '',
      ]).toEqual([name, true]);
    }
  });
});

describe('Node flags of the service (scripts/node-flags.js)', () => {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { SERVICE_NODE_FLAGS } = require('../../scripts/node-flags.js') as { SERVICE_NODE_FLAGS: readonly string[] };
  const scripts = (JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts;

  it('are what npm start, npm run api|worker, bench, bench:soak and bench:memory-floor start node with', () => {
    expect(SERVICE_NODE_FLAGS.length).toBeGreaterThan(0);
    for (const name of ['start', 'api', 'worker', 'bench', 'bench:soak', 'bench:memory-floor']) {
      // Environment assignments and `exec` may come first (the service's scripts; see below).
      const argv = scripts[name]!.split(/\s+/).filter((word) => word !== 'exec' && !/^[A-Z_]+=/.test(word));
      expect({ name, node: argv[0], flags: argv.slice(1, 1 + SERVICE_NODE_FLAGS.length) }).toEqual({
        name,
        node: 'node',
        flags: [...SERVICE_NODE_FLAGS],
      });
    }
  });

  it('the idle-memory floor runs as npm start runs: the same environment settings, exec, node and flags', () => {
    // bench/memory-floor.js is counted against npm start (bench/memory.ts): only the script differs.
    const prefix = (script: string): string => script.replace(/ \S+\.js$/, '');
    expect(prefix(scripts['bench:memory-floor']!)).toBe(prefix(scripts.start!));
    expect(scripts['bench:memory-floor']).toMatch(/ bench\/memory-floor\.js$/);
  });

  it("npm start, npm run api|worker: the shell npm runs the script with execs node, so npm's SIGTERM reaches the service", () => {
    for (const name of ['start', 'api', 'worker']) {
      expect({ name, script: scripts[name] }).toEqual({
        name,
        script: expect.stringMatching(/^([A-Z_]+=\S+ )*exec node /),
      });
    }
  });

  it("are the Docker image's ENTRYPOINT's", () => {
    const entrypoint = /^ENTRYPOINT (\[.*\])$/m.exec(read('Dockerfile'));
    expect(JSON.parse(entrypoint![1]!)).toEqual(['node', ...SERVICE_NODE_FLAGS, 'dist/src/main.js']);
  });

  it('are passed to the api and worker processes of npm run stack:prod', () => {
    const stackProd = read('scripts/stack-prod.ts');
    expect(stackProd.match(/\[\.\.\.SERVICE_NODE_FLAGS, 'dist\/src\/main\.js', '(api|worker)'\]/g)).toHaveLength(2);
    expect(stackProd).not.toMatch(/\['dist\/src\/main\.js'/);
  });
});

describe('Dockerfile', () => {
  const dockerfile = read('Dockerfile');
  it('is multi-stage, runs compiled JavaScript with node, prebuilds the workflow bundle and runs as a non-root user', () => {
    expect(dockerfile.match(/^FROM /gm)).toHaveLength(2);
    expect(dockerfile).toMatch(/npm run build/);
    expect(dockerfile).toMatch(/^ENTRYPOINT \["node", (?:"--[^"]+", )*"dist\/src\/main\.js"\]$/m);
    expect(dockerfile).not.toMatch(/ENTRYPOINT.*tsx/);
    expect(dockerfile).toMatch(/scripts\/bundle-workflows\.ts dist\/workflow-bundle\.js/);
    expect(dockerfile).toMatch(/WORKFLOW_BUNDLE=\/app\/dist\/workflow-bundle\.js/);
    expect(dockerfile).toMatch(/^USER node$/m);
    expect(dockerfile).toMatch(/npm prune --omit=dev/);
  });

  it('builds and runs on the Node 24 image, a version package.json engines allows', () => {
    const images = [...dockerfile.matchAll(/^FROM (\S+)/gm)].map((m) => m[1]);
    expect(images).toEqual(['node:24-bookworm-slim', 'node:24-bookworm-slim']);
    const engines = (JSON.parse(read('package.json')) as { engines: { node: string } }).engines.node;
    expect(engines).toBe('>=22');
  });
});

describe('docs/operations.md', () => {
  it('documents every configuration variable in its one configuration table', () => {
    const operations = read('docs/operations.md');
    const table = operations.slice(
      operations.indexOf('## Configuration'),
      operations.indexOf('\n## ', operations.indexOf('## Configuration') + 5),
    );
    for (const name of CONFIG_VARIABLES) expect([name, table.includes(`\`${name}\``)]).toEqual([name, true]);
  });
});

describe('Temporal connection options', () => {
  const saved = { ...process.env };
  afterEach(() => {
    process.env = { ...saved };
  });

  it('uses the bare address for the embedded server, whatever the environment says', () => {
    process.env.TEMPORAL_API_KEY = 'should-not-be-used';
    expect(connectionOptions({ address: '127.0.0.1:7233', embedded: true })).toEqual({ address: '127.0.0.1:7233' });
  });

  it('takes TLS and the API key from the Temporal environment configuration for a cluster or Temporal Cloud', () => {
    process.env.TEMPORAL_API_KEY = 'cloud-key';
    process.env.TEMPORAL_TLS = 'true';
    const options = connectionOptions({ address: 'ns.a1b2.tmprl.cloud:7233', embedded: false });
    expect(options.address).toBe('ns.a1b2.tmprl.cloud:7233');
    expect(options.apiKey).toBe('cloud-key');
    expect(options.tls).toEqual({});
  });
});

describe('package-lock.json', () => {
  it('lists every optional dependency, so `npm ci` accepts it on a fresh clone', () => {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { missingOptionals } = require('../../scripts/complete-lockfile.js') as {
      missingOptionals: (lock: unknown) => Array<{ name: string }>;
    };
    expect(missingOptionals(JSON.parse(read('package-lock.json'))).map((d) => d.name)).toEqual([]);
  });
});
