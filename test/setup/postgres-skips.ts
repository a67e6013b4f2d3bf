/**
 * Loaded (jest setupFilesAfterEnv) by the "postgres" project of jest.config.js. Without
 * DATABASE_URL nothing of that project can run; instead of leaving its cases out without a word,
 * every `describe`/`it`/`test` of its files is declared skipped, with a title that says why (and
 * hooks do nothing), so that jest lists them as skipped and test/reporters/skips.js counts
 * them at the end of the run.
 */
import { NEEDS_DATABASE_URL } from '../helpers/databases';

if (!process.env.DATABASE_URL) {
  const suffix = ` [postgres project, skipped: ${NEEDS_DATABASE_URL}]`;
  type Titled = (title: string, ...rest: never[]) => unknown;
  type Each = (...table: never[]) => Titled;
  const skipping = <T extends { skip: Titled & { each: Each } }>(real: T): T => {
    const skip = real.skip;
    const declare = (title: string, ...rest: never[]): unknown => skip(`${title}${suffix}`, ...rest);
    const each =
      (...table: never[]): Titled =>
      (title, ...rest) =>
        skip.each(...table)(`${title}${suffix}`, ...rest);
    return Object.assign(declare, real, { each, only: declare, skip: declare, concurrent: declare }) as unknown as T;
  };
  const g = globalThis as unknown as Record<string, unknown>;
  g.describe = skipping(describe as unknown as { skip: Titled & { each: Each } });
  g.it = skipping(it as unknown as { skip: Titled & { each: Each } });
  g.test = g.it;
  for (const hook of ['beforeAll', 'beforeEach', 'afterAll', 'afterEach']) g[hook] = () => undefined;
}
