/** The real Temporal dev server that jest's globalSetup started for this run. */
export interface TestTemporal {
  address: string;
  namespace: string;
  /** Path of the Temporal CLI binary (for tests that start servers of their own). */
  cliPath: string;
}

export async function testTemporal(): Promise<TestTemporal> {
  const address = process.env.TEMPORAL_TEST_ADDRESS;
  const cliPath = process.env.TEMPORAL_TEST_CLI ?? '';
  if (!address) throw new Error('TEMPORAL_TEST_ADDRESS is not set: run the tests with `npm test` (jest globalSetup starts Temporal)');
  return { address, namespace: 'default', cliPath };
}

/** A task queue no other test uses. */
export function uniqueTaskQueue(prefix = 'test'): string {
  return `${prefix}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
}

/** The automation workflow bundle built once by globalSetup, for Worker.create({ workflowBundle }). */
export function testWorkflowBundle(): { codePath: string } | undefined {
  const codePath = process.env.TEST_WORKFLOW_BUNDLE;
  return codePath ? { codePath } : undefined;
}
