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
