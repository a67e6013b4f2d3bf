/**
 * A jest reporter (jest.config.js) that counts every skipped case by its reason (declared in its
 * title: test/reporters/skip-reasons.js) and words the line that ends the run. jest prints its
 * summary after every reporter, so the line is handed to the global teardown (same process), which
 * prints it last.
 *
 * With UPDATE_TESTING_DOC=1, a run over the whole suite (no file or name filter) also writes its
 * figures into docs/testing.md, between the `<!-- skips -->` markers: the figure there is the run's,
 * not typed.
 */
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const { skipsOf, skipsLine } = require('./skip-reasons.js');

const NEEDS_DATABASE_URL = 'needs DATABASE_URL';
const DOC = path.resolve(__dirname, '../../docs/testing.md');
const BEGIN = '<!-- skips: written by test/reporters/skips.js (UPDATE_TESTING_DOC=1 npm test) -->';
const END = '<!-- /skips -->';

class SkipsReporter {
  constructor(globalConfig) {
    this.globalConfig = globalConfig;
  }

  /** True when no file pattern or test name pattern narrowed the run. */
  wholeSuite() {
    const patterns = this.globalConfig.testPathPatterns;
    const files = Array.isArray(patterns?.patterns) ? patterns.patterns : Array.isArray(patterns) ? patterns : [];
    return files.length === 0 && !this.globalConfig.testNamePattern && !this.globalConfig.onlyChanged && !this.globalConfig.findRelatedTests;
  }

  onRunComplete(_contexts, results) {
    const skips = skipsOf(results);
    const line = skipsLine(skips);
    if (line) {
      const hint = skips[NEEDS_DATABASE_URL]
        ? `\nRun the ${skips[NEEDS_DATABASE_URL]} PostgreSQL cases with a PostgreSQL of your own: DATABASE_URL=postgres://postgres:postgres@127.0.0.1:5432/<db> npm test (CI sets it).`
        : '';
      process.env.TEST_SKIPS_LINE = `\n${line}${hint}\n`;
    }
    if (process.env.UPDATE_TESTING_DOC === '1') this.writeDoc(results, line);
  }

  writeDoc(results, line) {
    if (!this.wholeSuite()) {
      console.error('UPDATE_TESTING_DOC=1: not a run of the whole suite (a file or name filter was given): docs/testing.md left as it is.');
      return;
    }
    const text = fs.readFileSync(DOC, 'utf8');
    const begin = text.indexOf(BEGIN);
    const end = text.indexOf(END);
    if (begin < 0 || end < begin) throw new Error(`docs/testing.md has no ${BEGIN} … ${END} block`);
    const store = process.env.DATABASE_URL ? 'with DATABASE_URL' : 'without DATABASE_URL';
    const block = [
      BEGIN,
      '```',
      `${new Date().toISOString().slice(0, 10)}, npm test ${store}: ${results.numPassedTests} passed, ${results.numFailedTests} failed, ${line ?? '0 skipped'}`,
      '```',
      END,
    ].join('\n');
    fs.writeFileSync(DOC, text.slice(0, begin) + block + text.slice(end + END.length));
  }
}

module.exports = SkipsReporter;
