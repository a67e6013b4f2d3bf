#!/usr/bin/env node
/**
 * `node scripts/ci-summary.js [--forbid-skip <regex>]... <name>=<summary.json>...`: the last lines of
 * .ci/run. Sums the summaries of every runner, in either of two forms:
 *   - jest's `--json --outputFile` (npm test, the drills, any jest runner): passed, failed (failed
 *     tests plus suites that failed to run), skipped by reason (test/reporters/skip-reasons.js);
 *   - Playwright's JSON reporter (the console's browser tests): stats.expected and stats.flaky
 *     passed, stats.unexpected and errors outside the tests failed;
 *   - a plain `{ "passed": n, "failed": n, "skipped": { "<reason>": n } }` (schemathesis as one
 *     case).
 * A summary that is missing, unreadable or in neither form counts as one failure, named; so does a
 * jest run that did not finish (`success: false` with nothing failed). A skip whose reason matches a
 * --forbid-skip pattern (a tool .ci/run installs, so the skip means the install failed) counts as a
 * failure too. Prints one line per runner, the skips by reason on the line before the last, and ends
 * with "N passed, N failed". Exits 1 when anything failed.
 */
'use strict';
const fs = require('node:fs');
const { skipsOf, skipsLine } = require('../test/reporters/skip-reasons.js');

/** `{ passed, failed, skipped, problems }` of one runner's summary file. */
function readSummary(name, file) {
  let data;
  try {
    data = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (err) {
    return { passed: 0, failed: 1, skipped: {}, problems: [`${name}: no readable summary (${file}: ${err.code ?? err.message})`] };
  }
  if (data && typeof data.numPassedTests === 'number' && Array.isArray(data.testResults)) {
    const failed = (data.numFailedTests ?? 0) + (data.numRuntimeErrorTestSuites ?? 0);
    const problems = [];
    let extra = 0;
    if (data.success === false && failed === 0) {
      extra = 1;
      problems.push(`${name}: jest reported no success, yet no failed test (interrupted, or a failure outside the tests)`);
    }
    return { passed: data.numPassedTests, failed: failed + extra, skipped: skipsOf(data), problems };
  }
  if (data && data.stats && Number.isInteger(data.stats.expected) && Array.isArray(data.suites)) {
    // Playwright's JSON reporter: expected (and flaky, passed on a retry) passed; unexpected failed,
    // and so does an error outside any test (a failed global set-up).
    const errors = Array.isArray(data.errors) ? data.errors.length : 0;
    const problems = errors > 0 ? [`${name}: ${errors} error(s) outside the tests`] : [];
    const skipped = data.stats.skipped > 0 ? { [`${name}: skipped in the test (see its reason in the report)`]: data.stats.skipped } : {};
    return { passed: data.stats.expected + (data.stats.flaky ?? 0), failed: (data.stats.unexpected ?? 0) + errors, skipped, problems };
  }
  if (data && Number.isInteger(data.passed) && Number.isInteger(data.failed)) {
    return { passed: data.passed, failed: data.failed, skipped: data.skipped ?? {}, problems: [] };
  }
  return { passed: 0, failed: 1, skipped: {}, problems: [`${name}: ${file} is not a summary (neither jest's JSON nor {passed, failed})`] };
}

function summarize(args) {
  const forbidden = [];
  const runners = [];
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--forbid-skip') forbidden.push(new RegExp(args[++i], 'i'));
    else {
      const at = args[i].indexOf('=');
      if (at < 1) throw new Error(`not <name>=<file>: ${args[i]}`);
      runners.push([args[i].slice(0, at), args[i].slice(at + 1)]);
    }
  }
  const lines = [];
  const total = { passed: 0, failed: 0 };
  const skips = {};
  for (const [name, file] of runners) {
    const s = readSummary(name, file);
    for (const [reason, n] of Object.entries(s.skipped)) {
      skips[reason] = (skips[reason] ?? 0) + n;
      if (forbidden.some((pattern) => pattern.test(reason))) {
        s.failed += n;
        s.problems.push(`${name}: ${n} skipped for a tool .ci/run installs (${reason}): counted as failed`);
      }
    }
    lines.push(...s.problems);
    const skipped = Object.values(s.skipped).reduce((a, b) => a + b, 0);
    lines.push(`${name}: ${s.passed} passed, ${s.failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
    total.passed += s.passed;
    total.failed += s.failed;
  }
  lines.push(skipsLine(skips) ?? '0 skipped');
  lines.push(`${total.passed} passed, ${total.failed} failed`);
  return { lines, failed: total.failed };
}

module.exports = { summarize, readSummary };

if (require.main === module) {
  const { lines, failed } = summarize(process.argv.slice(2));
  for (const line of lines) console.log(line);
  process.exit(failed > 0 ? 1 : 0);
}
