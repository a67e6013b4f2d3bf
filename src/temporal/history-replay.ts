/**
 * Replay of recorded workflow histories against a workflow bundle: the check that a new release of
 * the workflow code still makes the same decisions for every run in flight. Used by the replay
 * test, `npm run replay` and the worker's optional start-up check (WORKER_VERIFY_HISTORIES).
 *
 * Committed histories live in histories/<release>/<name>.history.json (the JSON form
 * of a Temporal History, as `temporal workflow show --output json` writes it), each next to
 * <name>.input.json (the steps and the run input it was recorded with).
 */
import fs from 'node:fs';
import path from 'node:path';
import { temporal } from '@temporalio/proto';
import { DefaultLogger, Runtime, Worker, type WorkflowBundleOption } from '@temporalio/worker';
import { tracingWorkerOptions, type WorkerTracing } from './tracing';

type History = temporal.api.history.v1.IHistory;

/**
 * Proto-JSON of a history, with the protobufjs that @temporalio/proto's types belong to. (The
 * SDK's historyToJSON/historyFromJSON fail with "type must be a Type" when npm installs two
 * copies of protobufjs, one under @temporalio/common and one under @temporalio/proto, as here.)
 */
// eslint-disable-next-line @typescript-eslint/no-require-imports
const protojson = require(
  require.resolve('protobufjs/ext/protojson', { paths: [path.dirname(require.resolve('@temporalio/proto'))] }),
) as {
  toJson(type: unknown, message: unknown): unknown;
  fromJson(type: unknown, json: unknown): unknown;
};
const HistoryType = temporal.api.history.v1.History;

/** The history as proto-JSON (enums by name, payload bytes base64, times RFC 3339). */
export function historyToJson(history: History): unknown {
  return protojson.toJson(HistoryType, HistoryType.fromObject(history));
}

/** A history from its proto-JSON. */
export function historyFromJson(json: unknown): History {
  if (typeof json !== 'object' || json === null || !Array.isArray((json as { events?: unknown }).events)) {
    throw new TypeError('not a history: expected an object with an array of events');
  }
  return protojson.fromJson(HistoryType, json) as History;
}

/** Folder of the committed histories, one sub-folder per release. */
export const HISTORIES_DIR = path.resolve(__dirname, '../../histories');

export interface NamedHistory {
  /** Where it came from: `<release>/<name>.history.json`, or `cluster:<workflowId>/<runId>`. */
  name: string;
  history: History;
}

export interface ReplayFailure {
  name: string;
  /** The SDK's error class, e.g. DeterminismViolationError. */
  kind: string;
  message: string;
}

/** Every committed history file, relative to `dir`, sorted (release folders, then names). */
export function listHistoryFiles(dir = HISTORIES_DIR): string[] {
  if (!fs.existsSync(dir)) return [];
  const files: string[] = [];
  for (const release of fs.readdirSync(dir, { withFileTypes: true })) {
    if (!release.isDirectory()) continue;
    for (const file of fs.readdirSync(path.join(dir, release.name))) {
      if (file.endsWith('.history.json')) files.push(`${release.name}/${file}`);
    }
  }
  return files.sort();
}

/** Loads the committed histories of `dir`. */
export function loadCommittedHistories(dir = HISTORIES_DIR): NamedHistory[] {
  return listHistoryFiles(dir).map((name) => ({
    name,
    history: historyFromJson(JSON.parse(fs.readFileSync(path.join(dir, name), 'utf8'))),
  }));
}

/**
 * For scripts and tests that only replay: the SDK runtime logs errors only (a replay logs every
 * nondeterminism at WARN; the failures are reported by name instead). Call before any Worker.
 */
export function installQuietRuntime(): void {
  Runtime.install({
    logger: new DefaultLogger('ERROR'),
    shutdownSignals: [],
    telemetryOptions: { logging: { filter: { core: 'ERROR', other: 'ERROR' } } },
  });
}

/**
 * Replays each history on `bundle`; answers the histories that failed (empty: all replayed cleanly).
 * A history the replayer answered for other than exactly once is a failure too: silence is not a pass.
 */
export async function replayHistories(
  bundle: WorkflowBundleOption,
  histories: NamedHistory[],
  tracing?: WorkerTracing,
): Promise<ReplayFailure[]> {
  const failures: ReplayFailure[] = [];
  const answered = new Map(histories.map((h) => [h.name, 0]));
  // The replay worker reports by workflow id: each history gets its own name as id.
  const items = histories.map((h) => ({ workflowId: h.name, history: h.history }));
  for await (const result of Worker.runReplayHistories(
    // The bundle carries Temporal's OpenTelemetry workflow interceptors; their sink is registered as in a worker.
    { workflowBundle: bundle, sinks: tracingWorkerOptions(tracing).sinks },
    items,
  )) {
    answered.set(result.workflowId, (answered.get(result.workflowId) ?? 0) + 1);
    if (result.error)
      failures.push({ name: result.workflowId, kind: result.error.name, message: result.error.message });
  }
  for (const [name, results] of answered) {
    if (results !== 1)
      failures.push({
        name,
        kind: 'ReplayResultCount',
        message: `${results} replay results for one history (expected 1)`,
      });
  }
  return failures;
}

/** One line per failure, for logs and test messages. */
export function describeFailures(failures: ReplayFailure[]): string {
  return failures.map((f) => `${f.name}: ${f.kind}: ${f.message}`).join('\n');
}
