/**
 * The upgrade drill, on the real dev server: runs start on bundle A (the current workflow code) and
 * park waiting for an approval; A's worker stops; a worker starts on bundle B, whose workflow writes one more
 * log line and marks its result when the run finishes — behind `patched()`. The parked runs finish
 * with A's behaviour, new runs get B's. The same change without `patched()` fails the replay of the
 * parked runs' histories (and of the committed ones) with a nondeterminism error.
 *
 * Bundle B is built here from a copy of workflows/automation.ts with the change spliced in (under
 * test-artifacts/, git-ignored), so the production code stays as it is.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Client, type Connection } from '@temporalio/client';
import {
  bundleWorkflowCode,
  DefaultLogger,
  type NativeConnection,
  type WorkflowBundleWithSourceMap,
} from '@temporalio/worker';
import { GuardedWorker } from '../../src/temporal/activation-guard';
import { temporal } from '@temporalio/proto';
import { createActivities } from '../../activities';
import type { Db } from '../../src/store/db';
import {
  installQuietRuntime,
  loadCommittedHistories,
  replayHistories,
  type NamedHistory,
} from '../../src/temporal/history-replay';
import { createAutomationWorker, verifyCommittedHistories } from '../../src/temporal/worker';
import type { RunEngine } from '../../src/domain/engine';
import { NO_TEMPORAL } from '../helpers/engine';
import { RUN_STATE_QUERY, type RunState, type StepDefinition } from '../../src/contract/run';
import { decideUpdate } from '../../src/contract/workflows';
import { openTestDb, PGLITE } from '../helpers/databases';
import {
  testCodec,
  testTemporal,
  testWorkflowBundle,
  uniqueTaskQueue,
  connectClient,
  connectNative,
} from '../helpers/temporal';
import { publishedRunInput } from '../helpers/versions';
import { poll } from '../helpers/wait';

const ROOT = path.resolve(__dirname, '../..');
const PATCH_ID = 'drill-finish-note';
const FINISH_MARK = "\n  state.status = 'COMPLETED';\n";

/** Bundle B: workflows/automation.ts with a finishing log line and `release: "B"` in the result, patched or not. */
async function bundleB(dir: string, withPatch: boolean): Promise<WorkflowBundleWithSourceMap> {
  let source = fs.readFileSync(path.join(ROOT, 'workflows/automation.ts'), 'utf8');
  // Imports by absolute path, so the copy compiles from its own folder.
  source = source.replace(/from '\.\.\/([^']+)'/g, (_m, p: string) => `from '${path.join(ROOT, p)}'`);
  source = source.replace(/from '\.\/([^']+)'/g, (_m, p: string) => `from '${path.join(ROOT, 'workflows', p)}'`);
  // `patched` joins the imports unless the workflow already uses it (flow control's lane patch does).
  if (!source.includes('\n  patched,\n'))
    source = source.replace('import {\n  ActivityFailure,', 'import {\n  patched,\n  ActivityFailure,');
  expect(source).toContain('patched,');
  // Decided once where the steps start running, in the function that finishes the run (a run
  // started on A replays without the marker: false).
  const start = 'const outputs: Record<string, unknown> = {};\n';
  expect(source).toContain(start);
  source = source.replace(start, `${start}  const releaseB = ${withPatch ? `patched('${PATCH_ID}')` : 'true'};\n`);
  expect(source).toContain(FINISH_MARK);
  source = source.replace(
    FINISH_MARK,
    `\n  if (releaseB) {\n    await local.annotate.executeWithOptions({ summary: 'finished on release B' }, [{ stepId: 'release', level: 'info', line: 'finished on release B' }]);\n    (state as RunState & { release?: string }).release = 'B';\n  }${FINISH_MARK}`,
  );
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'automation.ts'), source);
  // Every other workflow of workflows/index.ts as it is (the lane, the bulk action, the grant, ...).
  const others = fs
    .readFileSync(path.join(ROOT, 'workflows/index.ts'), 'utf8')
    .split('\n')
    .filter((line) => line.startsWith('export ') && !line.includes("from './automation'"))
    .map((line) => line.replace(/from '\.\/([^']+)'/, (_m, p: string) => `from '${path.join(ROOT, 'workflows', p)}'`));
  expect(others.length).toBeGreaterThanOrEqual(3);
  fs.writeFileSync(
    path.join(dir, 'index.ts'),
    [`export { automation, decideUpdate, stateQuery } from './automation';`, ...others, ''].join('\n'),
  );
  return bundleWorkflowCode({ workflowsPath: path.join(dir, 'index.ts'), logger: new DefaultLogger('WARN') });
}

let db: Db;
let connection: Connection;
let nativeConnection: NativeConnection;
let client: Client;
let patchedB: WorkflowBundleWithSourceMap;
let unpatchedB: WorkflowBundleWithSourceMap;
const artifacts = path.join(ROOT, 'test-artifacts', `upgrade-drill-${process.pid}`);

beforeAll(async () => {
  installQuietRuntime();
  const temporal = await testTemporal();
  connection = await connectClient(temporal.address);
  nativeConnection = await connectNative(temporal.address);
  client = new Client({ connection, namespace: temporal.namespace });
  db = await openTestDb(PGLITE);
  patchedB = await bundleB(path.join(artifacts, 'patched'), true);
  unpatchedB = await bundleB(path.join(artifacts, 'unpatched'), false);
});

afterAll(async () => {
  fs.rmSync(artifacts, { recursive: true, force: true });
  await db?.close();
  await nativeConnection?.close();
  await connection?.close();
});

async function runWorker(
  taskQueue: string,
  bundle: { codePath: string } | WorkflowBundleWithSourceMap,
): Promise<() => Promise<void>> {
  const worker = await GuardedWorker.create({
    connection: nativeConnection,
    namespace: 'default',
    taskQueue,
    workflowBundle: bundle,
    activities: createActivities({ db, allowPrivateOutbound: true, engine: NO_TEMPORAL }),
  });
  const running = worker.run();
  return async () => {
    worker.shutdown();
    await running;
  };
}

async function history(workflowId: string): Promise<NamedHistory> {
  return { name: `drill:${workflowId}`, history: await client.workflow.getHandle(workflowId).fetchHistory() };
}

function eventTypes(h: NamedHistory): Array<number | null | undefined> {
  return (h.history.events ?? []).map((e) => e.eventType);
}

it('parked runs finish with the old behaviour, new runs get the patched one; without patched() the replay fails', async () => {
  const taskQueue = uniqueTaskQueue('drill');
  const steps: StepDefinition[] = [
    { id: 'before', setVariables: { who: 'ctx.trigger.user' } },
    // Parked on a decision, not a timer: the runs stay parked however long stopping A and reading the
    // histories take on a loaded machine, and resume when the test approves them on B.
    { id: 'pause', waitForApproval: { timeout: '3600s' } },
    { id: 'after', setVariables: { again: 'ctx.steps.before.who' } },
  ];
  const bundleA =
    testWorkflowBundle() ??
    (await bundleWorkflowCode({ workflowsPath: path.join(ROOT, 'workflows'), logger: new DefaultLogger('WARN') }));

  // Release A: two runs park in the wait; then A's worker stops.
  const stopA = await runWorker(taskQueue, bundleA);
  const parked = await Promise.all(
    ['u-1', 'u-2'].map(async (user) => {
      const input = await publishedRunInput(db, steps, { user });
      return client.workflow.start('automation', {
        taskQueue,
        workflowId: `drill-parked-${input.eventId}`,
        args: [input],
      });
    }),
  );
  for (const handle of parked) {
    const state = await poll(
      () => handle.query<RunState>(RUN_STATE_QUERY).catch(() => undefined),
      (s) => s?.steps[1]?.status === 'WAITING_FOR_APPROVAL',
    );
    expect(state?.steps[1]?.status).toBe('WAITING_FOR_APPROVAL');
  }
  await stopA();
  for (const handle of parked) {
    // Still parked when A is gone: undecided, its timeout timer not fired (else the drill would prove nothing).
    const described = await handle.describe();
    expect(described.status.name).toBe('RUNNING');
    const types = eventTypes(await history(handle.workflowId));
    expect(types).not.toContain(temporal.api.enums.v1.EventType.EVENT_TYPE_TIMER_FIRED);
    expect(types).not.toContain(temporal.api.enums.v1.EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED);
  }

  // Release B (patched): the parked runs resume on it and finish the old way; a new run gets B's behaviour.
  const stopB = await runWorker(taskQueue, patchedB);
  try {
    for (const handle of parked)
      await handle.executeUpdate(decideUpdate, {
        args: [{ stepId: 'pause', decision: 'approved', by: 'drill', comment: null }],
      });
    const oldResults = await Promise.all(parked.map((h) => h.result() as Promise<RunState & { release?: string }>));
    for (const result of oldResults) {
      expect(result.status).toBe('COMPLETED');
      expect(result.release).toBeUndefined();
      expect(result.steps.map((s) => s.status)).toEqual(['DONE', 'DONE', 'DONE']);
    }
    const input = await publishedRunInput(db, [{ id: 'only', setVariables: { x: '1' } }], {});
    const fresh = await client.workflow.start('automation', {
      taskQueue,
      workflowId: `drill-new-${input.eventId}`,
      args: [input],
    });
    const freshResult = (await fresh.result()) as RunState & { release?: string };
    expect(freshResult.release).toBe('B');

    const parkedHistories = await Promise.all(parked.map((h) => history(h.workflowId)));
    const freshHistory = await history(fresh.workflowId);
    // The new run recorded the drill's patch marker; the parked ones did not (each run also records the patches of the release it started on).
    const markers = (h: NamedHistory): number =>
      (h.history.events ?? []).filter((e) => {
        const attributes = e.markerRecordedEventAttributes;
        if (attributes?.markerName !== 'core_patch') return false;
        const data = attributes.details?.['patch-data']?.payloads?.[0]?.data;
        return (
          data !== undefined &&
          data !== null &&
          (JSON.parse(Buffer.from(data).toString()) as { id?: string }).id === PATCH_ID
        );
      }).length;
    expect(markers(freshHistory)).toBe(1);
    expect(parkedHistories.map(markers)).toEqual([0, 0]);

    // Patched B replays everything: the committed histories, the parked runs and the new run.
    const committed = loadCommittedHistories();
    expect(await replayHistories(patchedB, [...committed, ...parkedHistories, freshHistory])).toEqual([]);

    // The same change without patched(): the parked runs' histories (and every committed completed run) fail.
    const failures = await replayHistories(unpatchedB, [...parkedHistories, ...committed]);
    const failed = new Set(failures.map((f) => f.name));
    for (const h of parkedHistories) expect(failed).toContain(h.name);
    expect(failed).toContain('0.1.0/set-variables-completed.history.json');
    // Runs that never reached the end (terminated or failed) are not affected by a change at the end.
    expect(failed).not.toContain('0.1.0/terminated-mid-wait.history.json');
    const parkedFailure = failures.find((f) => f.name === parkedHistories[0]!.name)!;
    expect(parkedFailure.kind).toBe('DeterminismViolationError');
    // The message names the event the changed code no longer matches (the run's completion, where B logs first).
    expect(parkedFailure.message).toMatch(
      /\[TMPRL1100\] Nondeterminism error: No command scheduled for event HistoryEvent\(id: \d+, WorkflowExecutionCompleted\)/,
    );
  } finally {
    await stopB();
  }
});

it('a worker with verifyHistories refuses to start on code that fails the committed histories', async () => {
  const options = {
    connection: nativeConnection,
    namespace: 'default',
    taskQueue: uniqueTaskQueue('verify'),
    db,
    activities: (engine: RunEngine) => createActivities({ db, allowPrivateOutbound: true, engine }),
    verifyHistories: true,
    codec: testCodec(),
  };
  await expect(createAutomationWorker({ ...options, bundle: unpatchedB })).rejects.toThrow(
    /^WORKER_VERIFY_HISTORIES: this workflow code is not compatible with \d+ of \d+ committed histories, refusing to start:\n0\.1\.0\/[a-z-]+\.history\.json: DeterminismViolationError: /,
  );
  expect(await verifyCommittedHistories(patchedB)).toBeGreaterThanOrEqual(12);
});
