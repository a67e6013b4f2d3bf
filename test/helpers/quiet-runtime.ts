/**
 * Temporal's Runtime (workers, native connections) logs at WARN in tests instead of INFO, so a
 * test run does not print every worker state change. Import this module before any worker or
 * NativeConnection is made; a test that installs its own Runtime still may (this only sets the
 * defaults the Runtime is created with when nobody installed one).
 */
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { skipDroppedSdkLogMetadata } from '../../src/temporal/sdk-log-levels';

Runtime.defaultOptions = { ...Runtime.defaultOptions, logger: new DefaultLogger('WARN'), shutdownSignals: [] };
// As src/main.ts: the SDK builds no metadata for the lines its WARN logger drops.
skipDroppedSdkLogMetadata();
