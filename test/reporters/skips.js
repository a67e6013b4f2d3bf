/**
 * A jest reporter (jest.config.js) that counts every skipped case by its reason (declared in its
 * title: test/reporters/skip-reasons.js) and words the line that ends the run. jest prints its
 * summary after every reporter, so the line is handed to the global teardown (same process), which
 * prints it last.
 *
 * With UPDATE_TESTING_DOC=1, a run over the whole suite (no file, name, project or shard filter,
 * and every test file ran) also writes its figures into docs/testing.md, between the
 * `<!-- skips -->` markers: the figure there is the run's, not typed. The reporter's `doc` option
 * names another file (test/unit/skips-reporter.test.ts runs it on a suite of its own).
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
  constructor(globalConfig, options = {}) {
    this.globalConfig = globalConfig;
    this.doc = options.doc ? path.resolve(globalConfig.rootDir ?? process.cwd(), options.doc) : DOC;
  }

  /** What narrowed the run (a file or name pattern, a project, a shard, changed files), or undefined. */
  narrowedBy() {
    const config = this.globalConfig;
    const patterns = config.testPathPatterns;
    const files = Array.isArray(patterns?.patterns) ? patterns.patterns : Array.isArray(patterns) ? patterns : [];
    if (files.length > 0) return `file pattern ${files.join(' ')}`;
    if (config.testNamePattern) return `name pattern ${config.testNamePattern}`;
    if (config.selectProjects?.length > 0) return `--selectProjects ${config.selectProjects.join(' ')}`;
    if (config.ignoreProjects?.length > 0) return `--ignoreProjects ${config.ignoreProjects.join(' ')}`;
    if (config.shard) return '--shard';
    if (
      config.onlyChanged ||
      config.changedSince ||
      config.lastCommit ||
      config.findRelatedTests ||
      config.onlyFailures
    )
      return 'changed or failed files only';
    return undefined;
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
    const doc = path.relative(process.cwd(), this.doc);
    const narrowed = this.narrowedBy();
    if (narrowed) {
      console.error(`UPDATE_TESTING_DOC=1: not a run of the whole suite (${narrowed}): ${doc} left as it is.`);
      return;
    }
    // A test file that could not run declared none of its cases: its skips would be missing.
    if (results.numRuntimeErrorTestSuites > 0 || results.numTotalTests === 0) {
      console.error(
        `UPDATE_TESTING_DOC=1: ${results.numRuntimeErrorTestSuites} test file(s) could not run: ${doc} left as it is.`,
      );
      return;
    }
    const text = fs.readFileSync(this.doc, 'utf8');
    const begin = text.indexOf(BEGIN);
    const end = text.indexOf(END);
    if (begin < 0 || end < begin) throw new Error(`${doc} has no ${BEGIN} … ${END} block`);
    const store = process.env.DATABASE_URL ? 'with DATABASE_URL' : 'without DATABASE_URL';
    const block = [
      BEGIN,
      '```',
      `${new Date().toISOString().slice(0, 10)}, npm test ${store}: ${results.numPassedTests} passed, ${results.numFailedTests} failed, ${line ?? '0 skipped'}`,
      '```',
      END,
    ].join('\n');
    fs.writeFileSync(this.doc, text.slice(0, begin) + block + text.slice(end + END.length));
  }
}

module.exports = SkipsReporter;
