/**
 * Starts one real Temporal dev server (in memory, headless) for the whole test run, with the
 * namespace set up as production sets it up. Tests find it through test/helpers/temporal.ts.
 */
import { Connection } from '@temporalio/client';
import { startDevServer, freePort, type DevServer } from '../src/temporal/devserver';
import { ensureNamespace } from '../src/temporal/setup';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { ensureTemporalCli } = require('../scripts/temporal-cli.js') as { ensureTemporalCli: () => Promise<string> };

export default async function globalSetup(): Promise<void> {
  if (process.env.TEMPORAL_TEST_ADDRESS) return;
  const cliPath = await ensureTemporalCli();
  const server: DevServer = await startDevServer({ cliPath, port: await freePort(), namespace: 'default' });
  const connection = await Connection.connect({ address: server.address });
  try {
    await ensureNamespace(connection, 'default');
  } finally {
    await connection.close();
  }
  process.env.TEMPORAL_TEST_ADDRESS = server.address;
  process.env.TEMPORAL_TEST_CLI = cliPath;
  (globalThis as { __temporalDevServer?: DevServer }).__temporalDevServer = server;
}
