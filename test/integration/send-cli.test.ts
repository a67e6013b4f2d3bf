/**
 * The sender CLI (`scripts/send.ts`) as a real child process against a live stack (real HTTP app,
 * real store, real Temporal and worker): 200 for a new event, 409 for the same `--event-id`, for an
 * HMAC listener and for a JWT listener (ES256 key from a PEM file, JWKS served over HTTP).
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import type { RunState } from '../../src/contract/run';
import { startStack, type Stack } from '../helpers/stack';
import { makeSigningKey, startJwksServer, type JwksServer } from '../fixtures/jwks-server';

const REPO_ROOT = path.resolve(__dirname, '../..');
const TSX = path.join(REPO_ROOT, 'node_modules/.bin/tsx');

interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

function send(args: string[]): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(TSX, ['scripts/send.ts', ...args], { cwd: REPO_ROOT, timeout: 60_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

/** First line of stdout is `<status> <reason>`, the rest is the response body. */
function parse(result: CliResult): { status: number; body: Record<string, unknown> } {
  const [statusLine = '', ...rest] = result.stdout.trimEnd().split('\n');
  return {
    status: Number(statusLine.split(' ')[0]),
    body: JSON.parse(rest.join('\n') || '{}') as Record<string, unknown>,
  };
}

const STEPS = [{ id: 'vars', setVariables: { employee: 'ctx.trigger.employee_id', status: 'ctx.trigger["status"]' } }];

describe('sender CLI', () => {
  let stack: Stack;
  let jwks: JwksServer;
  let dir: string;

  beforeAll(async () => {
    Runtime.install({ logger: new DefaultLogger('ERROR'), shutdownSignals: [] });
    stack = await startStack();
    jwks = await startJwksServer();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'send-cli-'));
  });
  afterAll(async () => {
    await jwks?.close();
    await stack?.close();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('--help prints the usage and exits 0; a usage error exits 1', async () => {
    const help = await send(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/--url <url>/);
    expect(help.stdout).toMatch(/--jwt-key <file>/);
    const bad = await send(['--url', 'http://127.0.0.1:1/x', '--data', '{}']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/give --secret/);
  });

  it('HMAC: 200 and the run gets the payload, then 409 for the same --event-id', async () => {
    const { automation, signingSecret } = await stack.createAutomation({
      displayName: 'CLI HMAC',
      trigger: { incomingWebhook: { authMethod: 'HMAC' } },
      steps: STEPS,
    });
    const url = automation.trigger.incomingWebhook.url;
    const eventId = randomUUID();
    const args = [
      '--url',
      url,
      '--secret',
      signingSecret!,
      '--data',
      '{"employee_id":"12345","status":"terminated"}',
      '--event-id',
      eventId,
    ];

    const first = await send(args);
    expect([first.code, first.stderr]).toEqual([0, '']);
    const accepted = parse(first);
    expect(accepted.status).toBe(200);
    expect(accepted.body.eventId).toBe(eventId);
    const state: RunState = await stack.client.workflow.getHandle(String(accepted.body.executionId)).result();
    expect(state.steps[0]!.output).toEqual({ employee: '12345', status: 'terminated' });

    const again = await send(args);
    expect(again.code).toBe(1);
    const duplicate = parse(again);
    expect(duplicate.status).toBe(409);
    expect(duplicate.body.code).toBe(6);

    const wrong = await send(['--url', url, '--secret', 'not-the-secret', '--data', '{}']);
    expect([wrong.code, parse(wrong).status]).toEqual([1, 401]);
  });

  it('JWT (ES256, PEM file, --data @file): 200, then 409 for the same --event-id', async () => {
    const key = await makeSigningKey('ES256', 'cli-es256');
    jwks.setKeys([key.publicJwk]);
    const pemPath = path.join(dir, 'es256.pem');
    fs.writeFileSync(pemPath, key.privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
    const dataPath = path.join(dir, 'event.json');
    fs.writeFileSync(dataPath, '{"employee_id": "777", "status": "hired"}\n');
    const { automation } = await stack.createAutomation({
      displayName: 'CLI JWT',
      trigger: { incomingWebhook: { authMethod: 'JWT', jwksUrl: jwks.url } },
      steps: STEPS,
    });
    const url = automation.trigger.incomingWebhook.url;
    const eventId = randomUUID();
    const args = [
      '--url',
      url,
      '--jwt-key',
      pemPath,
      '--kid',
      key.kid,
      '--alg',
      'ES256',
      '--data',
      `@${dataPath}`,
      '--event-id',
      eventId,
    ];

    const first = await send(args);
    expect([first.code, first.stderr]).toEqual([0, '']);
    const accepted = parse(first);
    expect(accepted.status).toBe(200);
    const state: RunState = await stack.client.workflow.getHandle(String(accepted.body.executionId)).result();
    expect(state.steps[0]!.output).toEqual({ employee: '777', status: 'hired' });

    const again = await send(args);
    expect([again.code, parse(again).status]).toEqual([1, 409]);

    // sub must be the tenant base URL: a wrong --base-url is refused
    const wrongSub = await send([...args.slice(0, -2), '--base-url', 'https://other.example']);
    expect([wrongSub.code, parse(wrongSub).status]).toEqual([1, 401]);
  });
});
