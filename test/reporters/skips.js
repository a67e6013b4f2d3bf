/**
 * A jest reporter (jest.config.js) that counts every skipped case by its reason (declared in its
 * title: test/reporters/skip-reasons.js) and words the line that ends the run. jest prints its
 * summary after every reporter, so the line is handed to the global teardown (same process), which
 * prints it last. The counts are the run's: nothing is written into a doc
 * (docs/testing.md#skipped-cases).
 */
'use strict';
const { skipsOf, skipsLine } = require('./skip-reasons.js');

const NEEDS_DATABASE_URL = 'needs DATABASE_URL';

class SkipsReporter {
  onRunComplete(_contexts, results) {
    const skips = skipsOf(results);
    const line = skipsLine(skips);
    if (!line) return;
    const hint = skips[NEEDS_DATABASE_URL]
      ? `\nRun the ${skips[NEEDS_DATABASE_URL]} PostgreSQL cases with a PostgreSQL of your own: DATABASE_URL=postgres://postgres:postgres@127.0.0.1:5432/<db> npm test (CI sets it).`
      : '';
    process.env.TEST_SKIPS_LINE = `\n${line}${hint}\n`;
  }
}

module.exports = SkipsReporter;
