/**
 * Drills on the production shape (`npm run stack:prod`: Temporal as four processes on PostgreSQL,
 * two APIs behind nginx, two workers, compiled JavaScript), on a PostgreSQL of the drill's own:
 *   0. The Web UI server answers on loopback, read-only, with the codec endpoint <entry>/codec.
 *      The Temporal frontend refuses a client without a certificate of the stack's CA, and
 *      authorizes by the certificate's subject: the Web UI's may read a run but not terminate it,
 *      the workers' may; a subject the authorization file does not name may call nothing. The
 *      services between them accept only the internode CA, and the frontend refuses it; nginx takes a
 *      60 KB webhook (200) and leaves the refusal of a 70 KB one to the API (413); the stack changed
 *      no PostgreSQL password.
 *   1. X-Forwarded-For through the real nginx: a forged leftmost entry does not pass a CIDR check.
 *   2. A rotation, an unpublish and a trigger disable made through API 1 are in force on API 2:
 *      the bound is measured (max over 50 tries) and printed.
 *   3. PostgreSQL stopped and started under load: 503 with Retry-After while it is down, never 500;
 *      the APIs recover without being restarted.
 *   4. 2,000 signed deliveries (20 % repeats, 32 at once) through nginx while a worker, an API and
 *      the Temporal history process are SIGKILLed (and restarted by the stack's supervisor) and the
 *      whole Temporal server is down for 20 s. Every answer is 200, 409, 429, 503 or a refused
 *      connection; after resending every unacknowledged event (until 200 or 409), every event has
 *      exactly one COMPLETED run and exactly one ownership row.
 * Figures go to the console and to test-artifacts/drills.json (docs/production.md#drills says what each drill
 * checks).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { execFile, execFileSync } from 'node:child_process';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { findTemporalCli } = require('../../scripts/temporal-cli.js') as { findTemporalCli: () => string | undefined };
import { Client as PgClient, Pool } from 'pg';
import { Client as ClientOf, Connection, type Client, type TLSConfig } from '@temporalio/client';
import { temporal as proto } from '@temporalio/proto';
import { TEMPORAL_TLS_SERVER_NAME, clientTlsFiles, type ProdStack } from '../../scripts/stack-prod';
import { postOnce, type PostOutcome } from '../helpers/raw-http';
import { startDrillStack, stopDrillStack, type DrillStackParts } from './drill-stack';
import type { OwnPostgres } from './postgres';
import { seededRandom } from '../helpers/seeded-random';
import { completedActivities, ownershipCreations, type RunRef } from '../helpers/effects';
import { callApi } from '../helpers/api-call';
import { sleep } from '../helpers/wait';
import { hmacEvent } from '../helpers/signing';

const TOTAL = 2000;
const REPEAT_EVERY = 5;
const CONCURRENCY = 32;
const TEMPORAL_DOWN_MS = 20_000;
const ATTEMPT_TIMEOUT_MS = 90_000;
const PROPAGATION_TRIES = 50;

const figures: Record<string, unknown> = {};

const parts: DrillStackParts = {};
let pg: OwnPostgres;
let stack: ProdStack;
let stateDir: string;
let entryPort: number;
let token: string;
let appPool: Pool;
/** The drill's coin flips and picks: seeded, the seed printed (replay with TEST_RANDOM_SEED). */
const random = seededRandom();
console.log(`production drill: random seed ${random.seed} (replay: ${random.replay})`);
let temporalConnection: Connection;
let temporal: Client;
let target: { userId: string; appId: string; entitlementId: string };

function portOf(url: string): number {
  return Number(new URL(url).port);
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = Record<string, any>;
const call = (method: 'GET' | 'POST', pathname: string, body?: unknown, port = entryPort): Promise<Json> =>
  callApi(port, token, method, pathname, body);

interface Listener {
  id: string;
  listenerId: string;
  path: string;
  secret: string;
}

async function createAutomation(name: string, allowedCidrs?: string[]): Promise<Listener> {
  const created = await call('POST', '/api/v1/automations', {
    displayName: name,
    trigger: { incomingWebhook: { authMethod: 'HMAC', ...(allowedCidrs ? { allowedCidrs } : {}) } },
    steps: [
      {
        id: 'own',
        createEntitlementOwner: {
          userId: `'${target.userId}'`,
          roleSlug: 'ctx.trigger.role',
          appId: `'${target.appId}'`,
          entitlementId: `'${target.entitlementId}'`,
        },
      },
    ],
  });
  await call('POST', `/api/v1/automations/${created.automation.id}/publish`, {});
  return {
    id: created.automation.id,
    listenerId: created.automation.trigger.incomingWebhook.listenerId,
    path: new URL(created.automation.trigger.incomingWebhook.url).pathname,
    secret: created.signingSecret,
  };
}

function signed(
  secret: string,
  eventId: string,
  body: string,
  extra: Record<string, string> = {},
): Record<string, string> {
  return { ...hmacEvent(secret, undefined, { eventId, body }).headers, ...extra };
}

function send(
  listener: Listener,
  eventId: string,
  body: string,
  port = entryPort,
  extra: Record<string, string> = {},
): Promise<PostOutcome> {
  return postOnce(port, listener.path, signed(listener.secret, eventId, body, extra), body, ATTEMPT_TIMEOUT_MS);
}

const statusOf = (o: PostOutcome): number | string => (o.kind === 'response' ? o.status : o.code);

let superuserPasswordBefore: string;

beforeAll(async () => {
  const started = await startDrillStack('stack', parts, async (own) => {
    pg = own;
    // The superuser has a password of its own before the stack starts; the stack must leave it alone.
    superuserPasswordBefore = await withAdmin(async (admin) => {
      await admin.query(`ALTER ROLE postgres PASSWORD 'drill-own-superuser-password'`);
      return (await admin.query(`SELECT rolpassword FROM pg_authid WHERE rolname = 'postgres'`)).rows[0]
        .rolpassword as string;
    });
  });
  ({ stack, stateDir, entryPort, token, temporalConnection, temporal } = started);
  figures.stackStartSeconds = started.startSeconds;
  const user = (
    await call('POST', '/api/v1/users', {
      displayName: 'drill robot',
      email: 'robot@example.com',
      type: 'USER_TYPE_SERVICE',
    })
  ).user;
  const app = (await call('POST', '/api/v1/apps', { displayName: 'Drill app' })).app;
  const entitlement = (
    await call('POST', `/api/v1/apps/${app.id}/entitlements`, { displayName: 'Owner', slug: 'owner' })
  ).appEntitlement;
  target = { userId: user.id, appId: app.id, entitlementId: entitlement.id };
  appPool = new Pool({ connectionString: new URL('/app', pg.adminUrl).toString(), max: 2 });
  appPool.on('error', () => undefined);
}, 30 * 60_000);

afterAll(async () => {
  fs.mkdirSync('test-artifacts', { recursive: true });
  fs.writeFileSync('test-artifacts/drills.json', `${JSON.stringify(figures, null, 2)}\n`);
  console.log(`drill figures: ${JSON.stringify(figures)}`);
  await appPool?.end().catch(() => undefined);
  await stopDrillStack(parts);
}, 120_000);

describe('the Temporal Web UI server', () => {
  it('serves the UI on loopback, read-only, decoding payloads through <entry>/codec', async () => {
    expect(new URL(stack.uiUrl).hostname).toBe('127.0.0.1');
    expect((await fetch(stack.uiUrl)).status).toBe(200);
    const settings = (await (await fetch(`${stack.uiUrl}/api/v1/settings`)).json()) as {
      Codec?: { Endpoint?: string };
      DisableWriteActions?: boolean;
    };
    expect(settings.Codec?.Endpoint).toBe(`${stack.entryUrl}/codec`);
    expect(settings.DisableWriteActions).toBe(true);
  });
});

describe('X-Forwarded-For through the real nginx (TRUST_PROXY=1)', () => {
  it('a forged leftmost entry naming an allowed address gets 403; a real allowed source gets 200', async () => {
    const elsewhere = await createAutomation('only 203.0.113.0/24', ['203.0.113.0/24']);
    const loopback = await createAutomation('only loopback', ['127.0.0.1/32']);
    const forged = await send(elsewhere, randomUUID(), JSON.stringify({ role: 'xff-forged' }), entryPort, {
      'X-Forwarded-For': '203.0.113.7',
    });
    expect(statusOf(forged)).toBe(403);
    const plain = await send(elsewhere, randomUUID(), JSON.stringify({ role: 'xff-plain' }));
    expect(statusOf(plain)).toBe(403);
    // The client really is 127.0.0.1; whatever it writes at the left does not matter.
    const real = await send(loopback, randomUUID(), JSON.stringify({ role: 'xff-real' }), entryPort, {
      'X-Forwarded-For': '203.0.113.7',
    });
    expect(statusOf(real)).toBe(200);
  });
});

async function withAdmin<T>(use: (admin: PgClient) => Promise<T>): Promise<T> {
  const admin = new PgClient({ connectionString: pg.adminUrl });
  await admin.connect();
  try {
    return await use(admin);
  } finally {
    await admin.end();
  }
}

/** Runs the Temporal CLI (on PATH) with a clean environment; resolves with its exit code and output. */
/** The pinned Temporal CLI (on PATH, or .temporal/bin where `node scripts/temporal-cli.js` put it). */
const TEMPORAL_CLI: string | undefined = findTemporalCli();

/** Runs the Temporal CLI; its exit code, or a thrown error when it could not run at all (so a refusal is never a missing binary). */
function temporalCli(args: string[]): Promise<{ code: number | null; output: string }> {
  if (!TEMPORAL_CLI) throw new Error('no Temporal CLI: run node scripts/temporal-cli.js');
  return new Promise((resolve, reject) => {
    execFile(
      TEMPORAL_CLI,
      args,
      { env: { PATH: process.env.PATH, HOME: stateDir }, timeout: 120_000 },
      (err, stdout, stderr) => {
        const code = err ? (err as { code?: number | string }).code : 0;
        if (typeof code === 'string') return reject(new Error(`the Temporal CLI did not run: ${code}`));
        resolve({ code: code ?? -1, output: `${stdout}${stderr}` });
      },
    );
  });
}

describe('the engine requires mutual TLS', () => {
  it("`temporal workflow list` without a certificate, or with one of another CA, is refused; with the APIs' certificate it lists", async () => {
    const plain = await temporalCli([
      'workflow',
      'list',
      '--address',
      stack.temporalAddress,
      '--limit',
      '1',
      '--command-timeout',
      '20s',
    ]);
    expect(plain.code).not.toBe(0);
    const ours = clientTlsFiles(stack.tlsDir, 'api');
    const server = [
      '--address',
      stack.temporalAddress,
      '--tls-ca-path',
      ours.ca,
      '--tls-server-name',
      TEMPORAL_TLS_SERVER_NAME,
    ];
    const caOnly = await temporalCli(['workflow', 'list', ...server, '--limit', '1', '--command-timeout', '20s']);
    expect(caOnly.code).not.toBe(0);
    // A client certificate from a CA of the same shape that is not the stack's.
    const strangerDir = fs.mkdtempSync(path.join(os.tmpdir(), 'drill-stranger-ca-'));
    try {
      execFileSync('sh', ['deploy/temporal/make-certs.sh'], { env: { PATH: process.env.PATH, CERT_DIR: strangerDir } });
      const theirs = clientTlsFiles(strangerDir, 'api');
      const stranger = await temporalCli([
        'workflow',
        'list',
        ...server,
        '--tls-cert-path',
        theirs.cert,
        '--tls-key-path',
        theirs.key,
        '--limit',
        '1',
        '--command-timeout',
        '20s',
      ]);
      expect(stranger.code).not.toBe(0);
    } finally {
      fs.rmSync(strangerDir, { recursive: true, force: true });
    }
    const listed = await temporalCli([
      'workflow',
      'list',
      ...stack.temporalCliArgs('api'),
      '--limit',
      '1',
      '--command-timeout',
      '20s',
    ]);
    expect([listed.code, listed.output]).toEqual([0, expect.any(String)]);
    // The Node client too: no TLS, no connection.
    await expect(
      Connection.connect({ address: stack.temporalAddress, connectTimeout: 5000 }).then((c) =>
        c.workflowService.getSystemInfo({}),
      ),
    ).rejects.toThrow();
  });

  it('the workers and the Web UI server connect with their own certificates; every key is 0600', async () => {
    const ui = await fetch(`${stack.uiUrl}/api/v1/namespaces/default/workflows`);
    expect(ui.status).toBe(200);
    for (const holder of ['api', 'worker', 'ui'] as const) {
      const info = await new Promise<{ code: number | null; output: string }>((resolve) =>
        execFile(
          'openssl',
          ['x509', '-noout', '-subject', '-in', path.join(stack.tlsDir, holder, 'client.pem')],
          (err, out) => resolve({ code: err ? 1 : 0, output: out }),
        ),
      );
      expect(info.output).toContain(`temporal-client-${holder}`);
    }
    for (const key of [
      'ca/ca.key',
      'internode-ca/ca.key',
      'temporal/frontend.key',
      'temporal/internode.key',
      'temporal/system-worker.key',
      'api/client.key',
      'worker/client.key',
      'ui/client.key',
    ]) {
      expect([key, fs.statSync(path.join(stack.tlsDir, key)).mode & 0o777]).toEqual([key, 0o600]);
    }
    for (const worker of ['worker-1', 'worker-2'])
      expect(stack.processes.get(worker)!.env.TEMPORAL_TLS_CLIENT_CERT_PATH).toBe(
        path.join(stack.tlsDir, 'worker', 'client.pem'),
      );
  });
});

const PERMISSION_DENIED = 7;
const { WORKFLOW_EXECUTION_STATUS_RUNNING: RUNNING, WORKFLOW_EXECUTION_STATUS_TERMINATED: TERMINATED } =
  proto.api.enums.v1.WorkflowExecutionStatus;

/** A certificate the stack's cluster CA signs for a subject of the drill's choosing. */
function clusterCertificate(commonName: string): { crt: Buffer; key: Buffer } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'drill-subject-'));
  try {
    const ca = path.join(stack.tlsDir, 'ca');
    execFileSync(
      'openssl',
      [
        'req',
        '-new',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:P-256',
        '-nodes',
        '-subj',
        `/CN=${commonName}`,
        '-keyout',
        `${dir}/c.key`,
        '-out',
        `${dir}/c.csr`,
      ],
      { stdio: 'ignore' },
    );
    fs.writeFileSync(
      `${dir}/c.ext`,
      'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n',
    );
    execFileSync(
      'openssl',
      [
        'x509',
        '-req',
        '-sha256',
        '-days',
        '1',
        '-in',
        `${dir}/c.csr`,
        '-CA',
        `${ca}/ca.pem`,
        '-CAkey',
        `${ca}/ca.key`,
        '-set_serial',
        `0x${randomBytes(16).toString('hex')}`,
        '-extfile',
        `${dir}/c.ext`,
        '-out',
        `${dir}/c.pem`,
      ],
      { stdio: 'ignore' },
    );
    return { crt: fs.readFileSync(`${dir}/c.pem`), key: fs.readFileSync(`${dir}/c.key`) };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** A request to the frontend's HTTP API (the same listener's TLS) with a holder's client certificate; resolves with the status. */
function frontendHttp(
  holder: 'ui' | 'worker',
  method: 'GET' | 'POST',
  pathname: string,
  body?: unknown,
): Promise<number> {
  const files = clientTlsFiles(stack.tlsDir, holder);
  const port = Number(stack.processes.get('temporal-frontend')!.env.TEMPORAL_FRONTEND_HTTP_PORT);
  return new Promise((resolve, reject) => {
    const req = https.request(
      {
        host: '127.0.0.1',
        port,
        method,
        path: pathname,
        servername: TEMPORAL_TLS_SERVER_NAME,
        ca: fs.readFileSync(files.ca),
        cert: fs.readFileSync(files.cert),
        key: fs.readFileSync(files.key),
        headers: { 'content-type': 'application/json' },
        timeout: 30_000,
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('timeout', () => req.destroy(new Error('frontend HTTP API: no answer in 30 s')));
    req.on('error', reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

describe('the engine authorizes by certificate subject (deploy/temporal/authorization.yaml)', () => {
  it("the Web UI's certificate may read a run but not terminate or signal it; the workers' certificate terminates it", async () => {
    // A run on a task queue nobody polls stays RUNNING until it is terminated.
    const workflowId = `drill-authz-${randomUUID()}`;
    await temporal.workflow.start('authorizationProbe', { taskQueue: `drill-authz-${randomUUID()}`, workflowId });
    const execution = { workflowId };
    const ui = await Connection.connect(stack.temporalConnectionOptions('ui'));
    const worker = await Connection.connect(stack.temporalConnectionOptions('worker'));
    try {
      const status = async (c: Connection): Promise<unknown> =>
        (await c.workflowService.describeWorkflowExecution({ namespace: 'default', execution })).workflowExecutionInfo
          ?.status;
      const terminate = (c: Connection): Promise<unknown> =>
        c.workflowService.terminateWorkflowExecution({
          namespace: 'default',
          workflowExecution: execution,
          reason: 'authorization drill',
          identity: 'drill',
        });
      expect(await status(ui)).toBe(RUNNING);
      await expect(terminate(ui)).rejects.toMatchObject({ code: PERMISSION_DENIED });
      await expect(
        ui.workflowService.signalWorkflowExecution({
          namespace: 'default',
          workflowExecution: execution,
          signalName: 'anything',
          identity: 'drill',
          requestId: randomUUID(),
        }),
      ).rejects.toMatchObject({ code: PERMISSION_DENIED });
      await expect(
        ui.operatorService.addSearchAttributes({
          namespace: 'default',
          searchAttributes: { DrillAuthz: proto.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD },
        }),
      ).rejects.toMatchObject({
        code: PERMISSION_DENIED,
      });
      // The frontend's HTTP API goes through the same authorizer.
      const run = `/api/v1/namespaces/default/workflows/${encodeURIComponent(workflowId)}`;
      expect(await frontendHttp('ui', 'GET', run)).toBe(200);
      expect(await frontendHttp('ui', 'POST', `${run}/terminate`, { reason: 'authorization drill' })).toBe(403);
      expect(await status(worker)).toBe(RUNNING);
      await terminate(worker);
      expect(await status(ui)).toBe(TERMINATED);
    } finally {
      await ui.close();
      await worker.close();
    }
  });

  it("a certificate of the cluster CA whose subject the file does not name may call nothing; the app's may not delete a run", async () => {
    const files = clientTlsFiles(stack.tlsDir, 'api');
    const tls = (pair: { crt: Buffer; key: Buffer }): TLSConfig => ({
      serverNameOverride: TEMPORAL_TLS_SERVER_NAME,
      serverRootCACertificate: fs.readFileSync(files.ca),
      clientCertPair: pair,
    });
    // The handshake passes (the CA is the stack's) and the health check answers; nothing else does.
    const stranger = await Connection.connect({
      address: stack.temporalAddress,
      tls: tls(clusterCertificate('drill-unknown-subject')),
    });
    try {
      await expect(
        stranger.workflowService.listWorkflowExecutions({ namespace: 'default', pageSize: 1 }),
      ).rejects.toMatchObject({ code: PERMISSION_DENIED });
      await expect(stranger.workflowService.describeNamespace({ namespace: 'default' })).rejects.toMatchObject({
        code: PERMISSION_DENIED,
      });
    } finally {
      await stranger.close();
    }
    // The APIs' role has write access but not the bulk and destructive calls it does not use.
    await expect(
      temporalConnection.workflowService.deleteWorkflowExecution({
        namespace: 'default',
        workflowExecution: { workflowId: `drill-authz-${randomUUID()}` },
      }),
    ).rejects.toMatchObject({
      code: PERMISSION_DENIED,
    });
    await expect(
      temporalConnection.workflowService.listWorkflowExecutions({ namespace: 'default', pageSize: 1 }),
    ).resolves.toMatchObject({
      executions: expect.any(Array),
    });
    // It may make, pause and remove the Schedules of schedule automations.
    const schedules = new ClientOf({ connection: temporalConnection, namespace: 'default' }).schedule;
    const scheduleId = `drill-authz-${randomUUID()}`;
    const made = await schedules.create({
      scheduleId,
      spec: { intervals: [{ every: '1h' }] },
      action: { type: 'startWorkflow', workflowType: 'scheduledRun', taskQueue: 'drill-authz', args: [] },
      state: { paused: true },
    });
    await made.pause('drill');
    expect((await made.describe()).state.paused).toBe(true);
    await made.delete();
  });

  it('the services accept only the internode CA between them, and the frontend refuses the internode certificate', async () => {
    const dir = path.join(stack.tlsDir, 'temporal');
    const internodeCa = fs.readFileSync(path.join(dir, 'internode-ca.pem'));
    const internodePair = {
      crt: fs.readFileSync(path.join(dir, 'internode.pem')),
      key: fs.readFileSync(path.join(dir, 'internode.key')),
    };
    const api = clientTlsFiles(stack.tlsDir, 'api');
    const apiPair = { crt: fs.readFileSync(api.cert), key: fs.readFileSync(api.key) };
    const history = `127.0.0.1:${stack.processes.get('temporal-history')!.env.TEMPORAL_HISTORY_PORT}`;
    const toHistory = (pair: { crt: Buffer; key: Buffer }): Promise<Connection> =>
      Connection.connect({
        address: history,
        connectTimeout: 10_000,
        tls: { serverNameOverride: 'internode', serverRootCACertificate: internodeCa, clientCertPair: pair },
      });
    // The internode certificate completes the handshake with history (it serves no workflow API, so
    // the connection's check answers UNIMPLEMENTED, which the client accepts); the APIs' does not.
    const accepted = await toHistory(internodePair);
    await accepted.close();
    await expect(toHistory(apiPair)).rejects.toThrow();
    // The frontend accepts only the cluster CA: the internode certificate is refused there.
    await expect(
      Connection.connect({
        address: stack.temporalAddress,
        connectTimeout: 10_000,
        tls: {
          serverNameOverride: TEMPORAL_TLS_SERVER_NAME,
          serverRootCACertificate: fs.readFileSync(api.ca),
          clientCertPair: internodePair,
        },
      }),
    ).rejects.toThrow();
  });
});

describe('PostgreSQL roles and the stack', () => {
  it("the superuser password is what it was before the stack started; the stack's roles have random passwords kept 0600", async () => {
    const after = await withAdmin(
      async (admin) =>
        (await admin.query(`SELECT rolpassword FROM pg_authid WHERE rolname = 'postgres'`)).rows[0]
          .rolpassword as string,
    );
    expect(after).toBe(superuserPasswordBefore);
    for (const role of ['temporal', 'app']) {
      const file = path.join(stateDir, 'postgres', `${role}.password`);
      expect([role, fs.statSync(file).mode & 0o777]).toEqual([role, 0o600]);
      expect(fs.readFileSync(file, 'utf8').trim()).toMatch(/^[A-Za-z0-9_-]{32}$/);
    }
  });
});

describe('nginx in front of the APIs', () => {
  it('a 60 KB webhook answers 200, a 70 KB one 413 from the API, a 200 KB one (over the memory buffer) 413 too, never 500', async () => {
    const listener = await createAutomation('large bodies');
    const body = (bytes: number): string => {
      const shell = JSON.stringify({ role: 'large', pad: '' });
      return JSON.stringify({ role: 'large', pad: 'x'.repeat(bytes - shell.length) });
    };
    const sixty = await send(listener, randomUUID(), body(60_000));
    expect(statusOf(sixty)).toBe(200);
    const seventy = await send(listener, randomUUID(), body(70_000));
    expect(statusOf(seventy)).toBe(413);
    // The API's own 413, in the one error shape (nginx's limit is 1 MiB).
    expect(seventy.kind === 'response' ? (seventy.body as { code?: number }).code : undefined).toBe(8);
    const large = await send(listener, randomUUID(), body(200_000));
    expect(statusOf(large)).toBe(413);
    expect(fs.readFileSync(path.join(stack.logDir, 'nginx-error.log'), 'utf8')).not.toMatch(/Permission denied/);
  });

  it('/metrics and /ready by any spelling are not served through the public entry nor on the API port; each API answers them on its admin port', async () => {
    const api1 = stack.processes.get('api-1')!.env.PORT;
    for (const pathname of [
      '/metrics',
      '/ready',
      '/METRICS',
      '/metrics/',
      '/Ready',
      '/ready/',
      '/%6Detrics',
      '//metrics',
    ]) {
      for (const base of [stack.entryUrl, `http://127.0.0.1:${api1}`]) {
        const res = await fetch(`${base}${pathname}`);
        expect([base, pathname, res.status]).toEqual([base, pathname, 404]);
        expect([base, pathname, ((await res.json()) as { code: number }).code]).toEqual([base, pathname, 5]);
      }
    }
    const admin1 = stack.processes.get('api-1')!.env.ADMIN_PORT;
    expect((await fetch(`http://127.0.0.1:${admin1}/ready`)).status).toBe(200);
    expect((await fetch(`http://127.0.0.1:${admin1}/metrics`)).status).toBe(200);
  });
});

describe('changes made through API 1 are in force on API 2', () => {
  it(`rotation, unpublish and trigger disable: bound measured over ${PROPAGATION_TRIES} tries each`, async () => {
    const api1 = portOf(`http://127.0.0.1:${stack.processes.get('api-1')!.env.PORT}`);
    const api2 = portOf(`http://127.0.0.1:${stack.processes.get('api-2')!.env.PORT}`);
    const listener = await createAutomation('propagation');
    // The listener cache's bound: an entry is never used more than 1 s after it was read, and the
    // writer's NOTIFY usually drops it sooner. A request to API 2 that starts once the bound has
    // passed since the change must see it; earlier ones may not (that is the measured figure).
    const BOUND_MS = 1000;
    const measure = async (
      change: () => Promise<void>,
      inForce: () => Promise<boolean>,
    ): Promise<{ ms: number; polls: number; lateMisses: number }> => {
      await change();
      const t0 = process.hrtime.bigint();
      let polls = 0;
      let lateMisses = 0;
      for (;;) {
        polls += 1;
        const startedMs = Number(process.hrtime.bigint() - t0) / 1e6;
        if (await inForce()) return { ms: Number(process.hrtime.bigint() - t0) / 1e6, polls, lateMisses };
        if (startedMs >= BOUND_MS) lateMisses += 1;
        if (polls > 10_000) throw new Error('change never reached API 2');
      }
    };
    const results: Record<string, Array<{ ms: number; polls: number; lateMisses: number }>> = {
      rotation: [],
      unpublish: [],
      disable: [],
    };
    for (let i = 0; i < PROPAGATION_TRIES; i += 1) {
      results.rotation!.push(
        await measure(
          async () => {
            listener.secret = (
              await call('POST', `/api/v1/automations/${listener.id}/trigger/rotate-secret`, {}, api1)
            ).signingSecret;
          },
          async () => statusOf(await send(listener, randomUUID(), JSON.stringify({ role: `rot-${i}` }), api2)) === 200,
        ),
      );
      results.unpublish!.push(
        await measure(
          async () => void (await call('POST', `/api/v1/automations/${listener.id}/unpublish`, {}, api1)),
          async () =>
            statusOf(await send(listener, randomUUID(), JSON.stringify({ role: `unpub-${i}` }), api2)) === 404,
        ),
      );
      await call('POST', `/api/v1/automations/${listener.id}/publish`, {}, api1);
      results.disable!.push(
        await measure(
          async () =>
            void (await call(
              'POST',
              `/api/v1/automations/${listener.id}`,
              {
                automation: { trigger: { incomingWebhook: { authMethod: 'HMAC', enabled: false } } },
                updateMask: 'trigger',
              },
              api1,
            )),
          async () => statusOf(await send(listener, randomUUID(), JSON.stringify({ role: `dis-${i}` }), api2)) === 404,
        ),
      );
      await call(
        'POST',
        `/api/v1/automations/${listener.id}`,
        { automation: { trigger: { incomingWebhook: { authMethod: 'HMAC', enabled: true } } }, updateMask: 'trigger' },
        api1,
      );
    }
    const summary = Object.fromEntries(
      Object.entries(results).map(([name, list]) => [
        name,
        {
          maxMs: Math.round(Math.max(...list.map((r) => r.ms))),
          maxPolls: Math.max(...list.map((r) => r.polls)),
          lateMisses: list.reduce((n, r) => n + r.lateMisses, 0),
        },
      ]),
    );
    figures.propagation = summary;
    console.log(`propagation API 1 → API 2: ${JSON.stringify(summary)}`);
    for (const list of Object.values(results)) expect(list).toHaveLength(PROPAGATION_TRIES);
    // No request that started after the bound ever missed a change.
    for (const [name, entry] of Object.entries(summary)) expect([name, entry.lateMisses]).toEqual([name, 0]);
  });
});

describe('PostgreSQL restarted under load', () => {
  it('503 with Retry-After while it is down (never 500), and the APIs recover without a restart', async () => {
    const listener = await createAutomation('postgres restart');
    const pids = [stack.processes.get('api-1')!.pid, stack.processes.get('api-2')!.pid];
    const answers: Array<{ phase: string; status: number | string; retryAfter?: string }> = [];
    let phase = 'before';
    let running = true;
    const load = async (): Promise<void> => {
      while (running) {
        const now = phase;
        const outcome =
          random.next() < 0.5
            ? await send(listener, randomUUID(), JSON.stringify({ role: `pg-${randomBytes(4).toString('hex')}` }))
            : await fetch(`${stack.entryUrl}/api/v1/automations/${listener.id}`, {
                headers: { Authorization: `Bearer ${token}` },
              }).then(
                async (r): Promise<PostOutcome> => ({
                  kind: 'response',
                  status: r.status,
                  headers: { 'retry-after': r.headers.get('retry-after') ?? undefined },
                  body: {},
                }),
                (err: Error): PostOutcome => ({ kind: 'error', code: err.message }),
              );
        answers.push({
          phase: now,
          status: statusOf(outcome),
          ...(outcome.kind === 'response' && outcome.headers['retry-after']
            ? { retryAfter: String(outcome.headers['retry-after']) }
            : {}),
        });
        await sleep(20);
      }
    };
    const workers = Array.from({ length: 8 }, () => load());
    await sleep(3000);
    phase = 'down';
    pg.stop();
    await sleep(8000);
    phase = 'restarting';
    pg.start();
    const restarted = Date.now();
    phase = 'after';
    // Recovered: 20 answers in a row (deliveries and reads) are 200 again, from the same API processes.
    let recovered = false;
    for (;;) {
      const recent = answers.slice(-20);
      if (recent.length === 20 && recent.every((a) => a.phase === 'after' && a.status === 200)) recovered = true;
      if (recovered || Date.now() - restarted > 5 * 60_000) break;
      await sleep(200);
    }
    const recoverySeconds = Math.round((Date.now() - restarted) / 1000);
    running = false;
    await Promise.all(workers);
    const down = answers.filter((a) => a.phase === 'down');
    const count = (list: typeof answers, status: number | string): number =>
      list.filter((a) => a.status === status).length;
    figures.postgresRestart = {
      answers: answers.length,
      whileDown: {
        total: down.length,
        s503: count(down, 503),
        s200: count(down, 200),
        other: down.filter((a) => a.status !== 503 && a.status !== 200).map((a) => a.status),
      },
      s500: count(answers, 500),
      recovered,
      recoverySeconds,
    };
    console.log(`PostgreSQL restart: ${JSON.stringify(figures.postgresRestart)}`);
    expect(answers.filter((a) => typeof a.status === 'number' && a.status >= 500 && a.status !== 503)).toEqual([]);
    expect(count(down, 503)).toBeGreaterThan(0);
    expect(down.filter((a) => a.status === 503 && !a.retryAfter)).toEqual([]);
    expect(recovered).toBe(true);
    expect([stack.processes.get('api-1')!.pid, stack.processes.get('api-2')!.pid]).toEqual(pids);
  });
});

interface EventSpec {
  eventId: string;
  role: string;
  body: string;
  answers: Array<number | string>;
}

describe(`${TOTAL} deliveries through nginx while processes are killed`, () => {
  it('every accepted event runs exactly once; every other answer is 409, 429, 503 or a refused connection', async () => {
    const listener = await createAutomation('drill');
    const events: EventSpec[] = [];
    const outcomes: Array<number | string> = [];
    const faults: string[] = [];
    let answered = 0;
    let next = 0;
    const faultDone: Array<{ promise: Promise<void>; resolve: () => void }> = [0, 1, 2, 3].map(() => {
      let resolve: () => void = () => undefined;
      const promise = new Promise<void>((r) => (resolve = r));
      return { promise, resolve };
    });
    const thresholds = [300, 700, 1100, 1500];

    const sender = async (): Promise<void> => {
      for (;;) {
        const index = next++;
        if (index >= TOTAL) return;
        // Deliveries past a fault's threshold (+100) wait until that fault has been injected.
        for (const [n, threshold] of thresholds.entries()) if (index >= threshold + 100) await faultDone[n]!.promise;
        let event: EventSpec;
        if (index % REPEAT_EVERY === REPEAT_EVERY - 1 && events.length > 0) {
          event = events[Math.floor(random.next() * events.length)]!;
        } else {
          const role = `d-${events.length}`;
          event = { eventId: randomUUID(), role, body: JSON.stringify({ role }), answers: [] };
          events.push(event);
        }
        const status = statusOf(await send(listener, event.eventId, event.body));
        event.answers.push(status);
        outcomes.push(status);
        answered += 1;
      }
    };
    const waitAnswered = async (n: number): Promise<void> => {
      while (answered < n) await sleep(50);
    };
    const chaos = async (): Promise<void> => {
      try {
        await waitAnswered(thresholds[0]!);
        await stack.processes.get('worker-1')!.kill('SIGKILL', false);
        faults.push(`worker-1 SIGKILLed after ${answered} answers`);
        faultDone[0]!.resolve();
        await waitAnswered(thresholds[1]!);
        await stack.processes.get('api-1')!.kill('SIGKILL', false);
        faults.push(`api-1 SIGKILLed after ${answered} answers`);
        faultDone[1]!.resolve();
        await waitAnswered(thresholds[2]!);
        await stack.processes.get('temporal-history')!.kill('SIGKILL', false);
        faults.push(`temporal-history SIGKILLed after ${answered} answers`);
        faultDone[2]!.resolve();
        await waitAnswered(thresholds[3]!);
        await Promise.all(
          ['frontend', 'history', 'matching', 'worker'].map((s) =>
            stack.processes.get(`temporal-${s}`)!.kill('SIGKILL', true),
          ),
        );
        faults.push(
          `Temporal server (4 processes) SIGKILLed after ${answered} answers, down for ${TEMPORAL_DOWN_MS / 1000} s`,
        );
        faultDone[3]!.resolve();
        await sleep(TEMPORAL_DOWN_MS);
        await stack.startTemporal();
        faults.push(`Temporal server up again after ${answered} answers`);
      } finally {
        for (const f of faultDone) f.resolve();
      }
    };
    const started = Date.now();
    const chaosRun = chaos();
    await Promise.all(Array.from({ length: CONCURRENCY }, () => sender()));
    await chaosRun;
    const trafficSeconds = Math.round((Date.now() - started) / 1000);
    for (const name of ['worker-1', 'api-1', 'temporal-history']) await stack.waitReady(name);

    // Resend every event that was never acknowledged, as a sender would, until 200 or 409.
    const unacknowledged = events.filter((e) => !e.answers.some((a) => a === 200 || a === 409));
    const resendAnswers: Array<number | string> = [];
    await Promise.all(
      Array.from({ length: 8 }, async (_, w) => {
        for (let i = w; i < unacknowledged.length; i += 8) {
          const event = unacknowledged[i]!;
          const deadline = Date.now() + 5 * 60_000;
          for (;;) {
            const status = statusOf(await send(listener, event.eventId, event.body));
            resendAnswers.push(status);
            event.answers.push(status);
            if (status === 200 || status === 409 || Date.now() > deadline) break;
            await sleep(1000);
          }
        }
      }),
    );

    // Let the runs finish, then judge from Temporal's visibility and the ownership rows.
    const ids = new Set(events.map((e) => `webhook:${listener.listenerId}:${e.eventId}`));
    let runs = new Map<string, string[]>();
    let runRefs: RunRef[] = [];
    const settleDeadline = Date.now() + 10 * 60_000;
    for (;;) {
      runs = new Map();
      runRefs = [];
      for await (const run of temporal.workflow.list({ query: `ListenerId = "${listener.listenerId}"` })) {
        runs.set(run.workflowId, [...(runs.get(run.workflowId) ?? []), run.status.name]);
        runRefs.push({ workflowId: run.workflowId, runId: run.runId });
      }
      const settled = [...ids].every((id) => runs.get(id)?.length === 1 && runs.get(id)![0] === 'COMPLETED');
      if (settled || Date.now() > settleDeadline) break;
      await sleep(3000);
    }
    const rows = await appPool.query<{ role_slug: string; n: string }>(
      "SELECT role_slug, count(*) AS n FROM entitlement_owners WHERE user_id = $1 AND role_slug LIKE 'd-%' GROUP BY role_slug",
      [target.userId],
    );
    const owned = new Map(rows.rows.map((r) => [r.role_slug, Number(r.n)]));
    // Rows cannot show a duplicate (the key and ON CONFLICT DO NOTHING hold them at one): count the
    // effect itself, the completed ownership activities in every run's history and the audit
    // events the insert writes only when it created the row.
    const ownershipActivities = await completedActivities(temporal, runRefs, 'createEntitlementOwner');
    const creations = await ownershipCreations(appPool, target.userId);

    const allowed = new Set<number | string>([200, 409, 429, 503, 'ECONNREFUSED']);
    const violations: string[] = [];
    for (const status of [...outcomes, ...resendAnswers]) if (!allowed.has(status)) violations.push(`answer ${status}`);
    for (const event of events) {
      const id = `webhook:${listener.listenerId}:${event.eventId}`;
      const oks = event.answers.filter((a) => a === 200).length;
      if (oks > 1) violations.push(`${event.eventId}: ${oks} × 200`);
      if (!event.answers.some((a) => a === 200 || a === 409)) violations.push(`${event.eventId}: never acknowledged`);
      const statuses = runs.get(id) ?? [];
      if (statuses.length !== 1 || statuses[0] !== 'COMPLETED')
        violations.push(`${id}: runs ${JSON.stringify(statuses)}`);
      if (owned.get(event.role) !== 1) violations.push(`${event.role}: ${owned.get(event.role) ?? 0} ownership rows`);
      if (ownershipActivities.get(id) !== 1)
        violations.push(`${id}: ${ownershipActivities.get(id) ?? 0} completed createEntitlementOwner activities`);
      if (creations.get(event.role) !== 1)
        violations.push(`${event.role}: created ${creations.get(event.role) ?? 0} times`);
    }
    for (const id of runs.keys()) if (!ids.has(id)) violations.push(`${id}: a run for an event never sent`);

    const tally = (list: Array<number | string>): Record<string, number> => {
      const out: Record<string, number> = {};
      for (const s of list) out[String(s)] = (out[String(s)] ?? 0) + 1;
      return out;
    };
    figures.deliveryDrill = {
      deliveries: outcomes.length,
      uniqueEvents: events.length,
      repeats: outcomes.length - events.length,
      answers: tally(outcomes),
      resent: unacknowledged.length,
      resendAnswers: tally(resendAnswers),
      runs: runs.size,
      completedRuns: [...runs.values()].filter((s) => s.length === 1 && s[0] === 'COMPLETED').length,
      ownershipRows: [...owned.values()].reduce((a, b) => a + b, 0),
      ownershipActivities: [...ownershipActivities.values()].reduce((a, b) => a + b, 0),
      ownershipCreations: [...creations.values()].reduce((a, b) => a + b, 0),
      randomSeed: random.seed,
      faults,
      trafficSeconds,
      violations: violations.length,
    };
    console.log(`delivery drill: ${JSON.stringify(figures.deliveryDrill)}`);
    expect({ seed: random.replay, violations: violations.slice(0, 20) }).toEqual({
      seed: random.replay,
      violations: [],
    });
    expect(outcomes).toHaveLength(TOTAL);
    expect(faults.filter((f) => f.includes('SIGKILLed'))).toHaveLength(4);
    expect(runs.size).toBe(events.length);
  });
});
