/**
 * Starts one real Temporal dev server (in memory, headless) for the whole test run, with the
 * namespace set up as production sets it up. Tests find it through test/helpers/temporal.ts.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { connectClient } from './helpers/temporal';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import { dumpMemoryImage } from '../src/store/db';
import { automationBundleOptions } from '../src/temporal/worker';
import type { DevServer } from '../src/temporal/devserver';
import { startTestDevServer } from './helpers/ports';
import { ensureNamespace } from '../src/temporal/setup';
import { newPayloadKeyEntry } from '../src/temporal/codec';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { ensureTemporalCli } = require('../scripts/temporal-cli.js') as { ensureTemporalCli: () => Promise<string> };

/** Work every test file would otherwise repeat: a migrated PGlite image and the workflow bundle. */
async function prepareSharedArtifacts(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'automation-tests-'));
  const image = path.join(dir, 'pglite-image.tar');
  fs.writeFileSync(image, Buffer.from(await (await dumpMemoryImage()).arrayBuffer()));
  process.env.TEST_PGLITE_IMAGE = image;
  const bundle = await bundleWorkflowCode({ ...automationBundleOptions(), logger: new DefaultLogger('WARN') });
  const bundlePath = path.join(dir, 'workflow-bundle.js');
  fs.writeFileSync(bundlePath, bundle.code);
  process.env.TEST_WORKFLOW_BUNDLE = bundlePath;
  (globalThis as { __testArtifactsDir?: string }).__testArtifactsDir = dir;
}

export default async function globalSetup(): Promise<void> {
  await prepareSharedArtifacts();
  process.env.TEST_PAYLOAD_KEYS ??= newPayloadKeyEntry();
  if (process.env.TEMPORAL_TEST_ADDRESS) return;
  const cliPath = await ensureTemporalCli();
  const server: DevServer = await startTestDevServer({ cliPath, namespace: 'default' });
  const connection = await connectClient(server.address);
  try {
    await ensureNamespace(connection, 'default');
  } finally {
    await connection.close();
  }
  process.env.TEMPORAL_TEST_ADDRESS = server.address;
  process.env.TEMPORAL_TEST_CLI = cliPath;
  (globalThis as { __temporalDevServer?: DevServer }).__temporalDevServer = server;
}
