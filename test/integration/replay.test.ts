/**
 * Every committed workflow history (histories/<release>/) replays on the current
 * workflow code without nondeterminism. A failure names the history file and the SDK's message
 * (which names the event and the command that no longer match).
 */
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import {
  describeFailures,
  installQuietRuntime,
  loadCommittedHistories,
  replayHistories,
} from '../../src/temporal/history-replay';
import { automationBundleOptions } from '../../src/temporal/worker';
import { testWorkflowBundle } from '../helpers/temporal';
import fs from 'node:fs';
import { Resource } from '@opentelemetry/resources';
import type { ReadableSpan, SpanProcessor } from '@opentelemetry/sdk-trace-base';

beforeAll(() => installQuietRuntime());

it('replays every committed history on the current workflow code', async () => {
  const histories = loadCommittedHistories();
  expect(histories.length).toBeGreaterThanOrEqual(12);
  const bundle =
    testWorkflowBundle() ??
    (await bundleWorkflowCode({ ...automationBundleOptions(), logger: new DefaultLogger('WARN') }));
  const failures = await replayHistories(bundle, histories);
  if (failures.length > 0)
    throw new Error(
      `nondeterminism in ${failures.length} of ${histories.length} committed histories:\n${describeFailures(failures)}`,
    );
});

it('replays every committed history with Temporal’s OpenTelemetry interceptors in the bundle, exporting nothing while replaying', async () => {
  const histories = loadCommittedHistories();
  const bundle =
    testWorkflowBundle() ??
    (await bundleWorkflowCode({ ...automationBundleOptions(), logger: new DefaultLogger('WARN') }));
  // The interceptors are in the bundle the workers run (sdk-typescript#1678: interceptors that break
  // the replay of histories recorded without them).
  const code = 'codePath' in bundle ? fs.readFileSync(bundle.codePath, 'utf8') : bundle.code;
  expect(code).toContain('OpenTelemetryInboundInterceptor');
  const ended: ReadableSpan[] = [];
  const processor: SpanProcessor = {
    onStart: () => undefined,
    onEnd: (span) => ended.push(span),
    forceFlush: () => Promise.resolve(),
    shutdown: () => Promise.resolve(),
  };
  const failures = await replayHistories(bundle, histories, { processor, resource: new Resource({}) });
  if (failures.length > 0)
    throw new Error(
      `with the tracing interceptors, nondeterminism in ${failures.length} of ${histories.length} committed histories:\n${describeFailures(failures)}`,
    );
  expect(ended).toEqual([]);
});
