/**
 * Every property test (fast-check) in the suite runs from one seed: FC_SEED when set, else a fixed
 * default, so a run is reproducible on any machine. A failure names the seed and the path of the
 * shrunk counterexample; `FC_SEED=<seed> FC_PATH=<path> npx jest <file>` replays exactly that case.
 * Loaded by jest (setupFiles) before each test file.
 */
import fc from 'fast-check';

const DEFAULT_SEED = 1_732_000_000;

const raw = process.env.FC_SEED;
const seed = raw === undefined || raw === '' ? DEFAULT_SEED : Number(raw);
if (!Number.isSafeInteger(seed)) throw new Error(`FC_SEED must be an integer, got ${JSON.stringify(raw)}`);
const path = process.env.FC_PATH || undefined;

fc.configureGlobal({
  seed,
  ...(path !== undefined ? { path } : {}),
  reporter(details) {
    if (!details.failed) return;
    const replay = `replay: FC_SEED=${details.seed}${details.counterexamplePath ? ` FC_PATH=${details.counterexamplePath}` : ''}`;
    const error = new Error(`${fc.defaultReportMessage(details)}\n${replay}`);
    if (details.errorInstance !== null) Object.assign(error, { cause: details.errorInstance });
    throw error;
  },
});
