/**
 * What an operator sees: an automation run, accepted by the real receiver and run to completion by
 * a real worker, opened in the Temporal Web UI in headless Chromium (Debian's `chromium`, driven by
 * playwright-core). The test starts a dev server of its own WITH the UI (the shared one of the test
 * run is headless), checks that the run's page shows the workflow type and the steps' activities,
 * and the webhook body decoded by the service's codec endpoint (payloads are encrypted), and saves a screenshot to test-artifacts/web-ui-run.png. Skipped, saying why, when
 * /usr/bin/chromium is absent (`apt-get install -y chromium`).
 */
import fs from 'node:fs';
import path from 'node:path';
import request from 'supertest';
import { Client, Connection } from '@temporalio/client';
import type { NativeConnection, Worker } from '@temporalio/worker';
import '../helpers/quiet-runtime';
import { chromium, type Browser } from 'playwright-core';
import { startDevServer, type DevServer } from '../../src/temporal/devserver';
import { reservedPort } from '../helpers/ports';
import { createAutomationWorker } from '../../src/temporal/worker';
import { createActivities } from '../../activities';
import { startTestService, type TestService } from '../helpers/test-service';
import { hmacEvent } from '../helpers/stack';
import { testCodec, testDataConverter, testWorkflowBundle, uniqueTaskQueue, connectNative } from '../helpers/temporal';

import type { RunState } from '../../src/contract/run';
import { sleep } from '../helpers/wait';

const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
const ARTIFACTS = path.resolve(__dirname, '../../test-artifacts');
const SCREENSHOT = path.join(ARTIFACTS, 'web-ui-run.png');
const UI_TIMEOUT_MS = 120_000;
/** Sent in the webhook body: encrypted in Temporal, readable in the UI only through the codec endpoint. */
const MARKER = `emp-${Math.random().toString(36).slice(2, 10)}`;

const STEPS = [
  { id: 'vars', setVariables: { employee: 'ctx.trigger.employee_id', status: 'ctx.trigger["status"]' } },
  {
    id: 'derived',
    when: 'ctx.steps.vars.status == "terminated"',
    setVariables: { message: '"offboard " + ctx.steps.vars.employee' },
  },
];

async function temporalCli(): Promise<string> {
  if (process.env.TEMPORAL_TEST_CLI) return process.env.TEMPORAL_TEST_CLI;
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { ensureTemporalCli } = require('../../scripts/temporal-cli.js') as {
    ensureTemporalCli: () => Promise<string>;
  };
  return ensureTemporalCli();
}

/** Resolves once `url` answers an HTTP status below 500. */
async function waitForHttp(url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const res = await fetch(url);
      if (res.status < 500) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`${url} did not answer within ${timeoutMs} ms`);
    await sleep(500);
  }
}

const HAVE_CHROMIUM = fs.existsSync(CHROMIUM);
if (!HAVE_CHROMIUM)
  console.warn(`web-ui test skipped: ${CHROMIUM} is absent (install it with \`apt-get install -y chromium\`)`);
const describeWithChromium = HAVE_CHROMIUM ? describe : describe.skip;

describeWithChromium(
  `Temporal Web UI shows an automation run${HAVE_CHROMIUM ? '' : ` (skipped: ${CHROMIUM} is absent; apt-get install -y chromium)`}`,
  () => {
    let server: DevServer | undefined;
    let connection: Connection | undefined;
    let workerConnection: NativeConnection | undefined;
    let worker: Worker | undefined;
    let running: Promise<void> | undefined;
    let service: TestService | undefined;
    let browser: Browser | undefined;
    let client: Client;
    let uiUrl: string;

    beforeAll(async () => {
      // The service comes first (its codec endpoint is the UI's), on a lazy client of the server to be.
      const port = await reservedPort();
      const uiPort = await reservedPort();
      uiUrl = `http://127.0.0.1:${uiPort}`;
      const taskQueue = uniqueTaskQueue('web-ui');
      connection = Connection.lazy({ address: `127.0.0.1:${port}` });
      client = new Client({ connection, namespace: 'default', ...testDataConverter() });
      service = await startTestService({
        temporal: { client, taskQueue, startTimeoutMs: 30_000 },
        env: { CODEC_CORS_ORIGINS: uiUrl },
      });
      const codecEndpoint = `http://127.0.0.1:${(service.server.address() as { port: number }).port}/codec`;
      server = await startDevServer({
        cliPath: await temporalCli(),
        port,
        uiPort,
        uiCodecEndpoint: codecEndpoint,
        namespace: 'default',
      });
      workerConnection = await connectNative(server.address);
      const bundle = testWorkflowBundle();
      const db = service.deps.db;
      worker = await createAutomationWorker({
        connection: workerConnection,
        namespace: 'default',
        taskQueue,
        db,
        activities: (engine) => createActivities({ db, allowPrivateOutbound: false, engine }),
        codec: testCodec(),
        ...(bundle ? { bundle } : {}),
      });
      running = worker.run();
      await waitForHttp(uiUrl, UI_TIMEOUT_MS);
    }, 240_000);

    afterAll(async () => {
      await browser?.close().catch(() => undefined);
      if (worker) {
        worker.shutdown();
        await running?.catch(() => undefined);
      }
      await workerConnection?.close().catch(() => undefined);
      await service?.close();
      await connection?.close().catch(() => undefined);
      await server?.stop();
    }, 60_000);

    it('opens the completed run and shows its workflow type and its steps', async () => {
      const admin = await service!.tokenFor('super_admin');
      const created = await request(service!.server)
        .post('/api/v1/automations')
        .set('Authorization', `Bearer ${admin}`)
        .send({ displayName: 'Web UI run', trigger: { incomingWebhook: { authMethod: 'HMAC' } }, steps: STEPS });
      expect(created.status).toBe(200);
      const automation = created.body.automation;
      expect(
        (
          await request(service!.server)
            .post(`/api/v1/automations/${automation.id}/publish`)
            .set('Authorization', `Bearer ${admin}`)
        ).status,
      ).toBe(200);

      const event = hmacEvent(created.body.signingSecret, { employee_id: MARKER, status: 'terminated' });
      const accepted = await request(service!.server)
        .post(new URL(automation.trigger.incomingWebhook.url).pathname)
        .set(event.headers)
        .send(event.body);
      expect(accepted.status).toBe(200);
      const workflowId: string = accepted.body.executionId;
      const state: RunState = await client.workflow.getHandle(workflowId).result();
      expect(state.steps.map((s) => s.status)).toEqual(['DONE', 'DONE']);

      browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, timeout: UI_TIMEOUT_MS });
      const page = await browser.newPage({ viewport: { width: 1600, height: 1200 } });
      const codecCalls: string[] = [];
      page.on('response', (response) => {
        if (response.url().includes('/codec/'))
          codecCalls.push(`${response.request().method()} ${response.url()} ${response.status()}`);
      });
      page.on('console', (message) => {
        if (message.type() === 'error') codecCalls.push(`console: ${message.text()}`);
      });
      await page.goto(`${uiUrl}/namespaces/default/workflows/${encodeURIComponent(workflowId)}`, {
        timeout: UI_TIMEOUT_MS,
      });

      // The run's page: its id, its type, its status, and the steps' activities in the event history.
      await page.getByText(workflowId).first().waitFor({ timeout: UI_TIMEOUT_MS });
      await page.getByText('evaluateStep').first().waitFor({ timeout: UI_TIMEOUT_MS });
      await page
        .getByText(/Completed/i)
        .first()
        .waitFor({ timeout: UI_TIMEOUT_MS });
      const text = await page.locator('body').innerText();
      expect(text).toContain(workflowId);
      expect(text).toMatch(/\bautomation\b/);
      expect(text).toContain('evaluateStep');
      // Each step's activity carries its summary, shown in the timeline: `step: vars (evaluate setVariables)`.
      await page.getByText('step: vars (evaluate setVariables)').first().waitFor({ timeout: UI_TIMEOUT_MS });
      await page.getByText('step: derived (evaluate when)').first().waitFor({ timeout: UI_TIMEOUT_MS });

      // Payloads are encrypted in Temporal; the UI shows them decoded through the codec endpoint.
      try {
        await page.getByText(MARKER).first().waitFor({ timeout: UI_TIMEOUT_MS });
      } catch (err) {
        fs.mkdirSync(ARTIFACTS, { recursive: true });
        await page.screenshot({ path: path.join(ARTIFACTS, 'web-ui-run-failed.png'), fullPage: true });
        fs.writeFileSync(
          path.join(ARTIFACTS, 'web-ui-run-failed.txt'),
          `${codecCalls.join('\n')}\n---\n${await page.locator('body').innerText()}`,
        );
        throw err;
      }

      fs.mkdirSync(ARTIFACTS, { recursive: true });
      await page.screenshot({ path: SCREENSHOT, fullPage: true });
      expect(fs.statSync(SCREENSHOT).size).toBeGreaterThan(10_000);
    });
  },
);
