/**
 * npm run replay: replays workflow histories against a build of the workflow code and exits 1 when
 * any of them hits nondeterminism (each failure names the history and the event).
 *
 *   npm run replay                                   committed histories, workflow code from source
 *   npm run replay -- --bundle dist/workflow-bundle.js   the same, against a prebuilt bundle
 *   npm run replay -- --dir path/to/histories        another folder (<release>/<name>.history.json)
 *   npm run replay -- --from-cluster --query 'WorkflowType="automation" AND ExecutionStatus="Running"' [--limit 1000]
 *       histories fetched from a live cluster: TEMPORAL_ADDRESS (default 127.0.0.1:7233),
 *       TEMPORAL_NAMESPACE (default "default"); TLS and API keys from the standard Temporal
 *       environment (TEMPORAL_API_KEY, TEMPORAL_TLS_*, TEMPORAL_PROFILE).
 */
import path from 'node:path';
import { Client } from '@temporalio/client';
import { bundleWorkflowCode, DefaultLogger, type WorkflowBundleOption } from '@temporalio/worker';
import { connectClientConnection } from '../src/temporal/connection';
import {
  describeFailures,
  HISTORIES_DIR,
  installQuietRuntime,
  loadCommittedHistories,
  replayHistories,
  type NamedHistory,
} from '../src/temporal/history-replay';
import { automationBundleOptions } from '../src/temporal/worker';

const USAGE = `usage: npm run replay -- [--bundle <file>] [--dir <folder>] [--from-cluster --query <visibility query> [--limit <n>]]`;

function option(args: string[], name: string): string | undefined {
  const at = args.indexOf(name);
  if (at === -1) return undefined;
  const value = args[at + 1];
  if (value === undefined || value.startsWith('--')) throw new Error(`${name} needs a value\n${USAGE}`);
  return value;
}

async function clusterHistories(query: string, limit: number): Promise<NamedHistory[]> {
  const address = process.env.TEMPORAL_ADDRESS ?? '127.0.0.1:7233';
  const namespace = process.env.TEMPORAL_NAMESPACE ?? 'default';
  const connection = await connectClientConnection({ address, embedded: false });
  try {
    const client = new Client({ connection, namespace });
    const histories: NamedHistory[] = [];
    for await (const execution of client.workflow.list({ query })) {
      if (histories.length >= limit) break;
      const history = await client.workflow.getHandle(execution.workflowId, execution.runId).fetchHistory();
      histories.push({ name: `cluster:${execution.workflowId}/${execution.runId}`, history });
    }
    console.log(`${histories.length} histories from ${address} (namespace ${namespace}) matching ${query}`);
    return histories;
  } finally {
    await connection.close();
  }
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  if (args.includes('--help')) {
    console.log(USAGE);
    return;
  }
  const bundlePath = option(args, '--bundle');
  const query = option(args, '--query');
  const fromCluster = args.includes('--from-cluster');
  if (fromCluster && !query) throw new Error(`--from-cluster needs --query\n${USAGE}`);
  const limit = Number(option(args, '--limit') ?? 1000);
  installQuietRuntime();

  const histories = fromCluster
    ? await clusterHistories(query!, limit)
    : loadCommittedHistories(path.resolve(option(args, '--dir') ?? HISTORIES_DIR));
  if (histories.length === 0) throw new Error('no histories to replay');
  const bundle: WorkflowBundleOption = bundlePath
    ? { codePath: path.resolve(bundlePath) }
    : await bundleWorkflowCode({ ...automationBundleOptions(), logger: new DefaultLogger('WARN') });
  const failures = await replayHistories(bundle, histories);
  const against = bundlePath ? `bundle ${bundlePath}` : 'the workflow code in workflows/';
  if (failures.length > 0) {
    console.error(
      `NONDETERMINISM: ${failures.length} of ${histories.length} histories fail against ${against}:\n${describeFailures(failures)}`,
    );
    process.exitCode = 1;
    return;
  }
  console.log(`OK: ${histories.length} histories replay against ${against}`);
}

main().then(
  () => process.exit(process.exitCode ?? 0),
  (err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  },
);
