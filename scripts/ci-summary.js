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
 * failure too. Prints first what each failed test (or suite that failed to run) said, its first lines
 * (CI's log may keep only its end: the cause of a failure must be there), then one line per runner,
 * the skips by reason on the line before the last, and ends with "N passed, N failed". Exits 1 when
 * anything failed.
 */
'use strict';
const fs = require('node:fs');
const { skipsOf, skipsLine } = require('../test/reporters/skip-reasons.js');

/** Lines of a failure message kept in the digest, and characters of each line. */
const DIGEST_LINES = 25;
const DIGEST_WIDTH = 300;
// eslint-disable-next-line no-control-regex
const ANSI = /\u001b\[[0-9;]*m/g;

/** The first lines of a failure message, without colours, each cut to DIGEST_WIDTH, indented. */
function digestOf(message) {
  const lines = String(message)
    .replace(ANSI, '')
    .split('\n')
    .filter((line) => line.trim() !== '');
  const kept = lines
    .slice(0, DIGEST_LINES)
    .map((line) => `    ${line.length > DIGEST_WIDTH ? `${line.slice(0, DIGEST_WIDTH)}…` : line}`);
  if (lines.length > DIGEST_LINES) kept.push(`    … ${lines.length - DIGEST_LINES} more lines`);
  return kept;
}

/** What each failed test of a summary (jest or Playwright JSON) said: a heading line per test, then its message's first lines. */
function failuresOf(name, data) {
  const out = [];
  if (data && Array.isArray(data.testResults)) {
    for (const suite of data.testResults) {
      const file = String(suite.name ?? suite.testFilePath ?? '?').replace(`${process.cwd()}/`, '');
      const failed = (suite.assertionResults ?? []).filter((t) => t.status === 'failed');
      for (const t of failed) {
        out.push(`${name}: FAILED ${file} › ${[...(t.ancestorTitles ?? []), t.title].join(' › ')}`);
        out.push(...digestOf((t.failureMessages ?? []).join('\n') || '(no message)'));
      }
      // A suite that failed outside its tests (a beforeAll, a syntax error): its own message.
      if (suite.status === 'failed' && failed.length === 0) {
        out.push(`${name}: FAILED ${file} (outside its tests)`);
        out.push(...digestOf(suite.message || suite.failureMessage || '(no message)'));
      }
    }
  } else if (data && Array.isArray(data.suites)) {
    const walk = (suite, titles) => {
      for (const spec of suite.specs ?? []) {
        for (const t of spec.tests ?? []) {
          if (t.status !== 'unexpected') continue;
          out.push(`${name}: FAILED ${spec.file ?? suite.file ?? '?'} › ${[...titles, spec.title].join(' › ')}`);
          const errors = (t.results ?? []).flatMap((r) =>
            (r.errors ?? (r.error ? [r.error] : [])).map((e) => e.message ?? e.value ?? ''),
          );
          out.push(...digestOf(errors.join('\n') || '(no message)'));
        }
      }
      for (const child of suite.suites ?? []) walk(child, [...titles, child.title]);
    };
    for (const suite of data.suites) walk(suite, []);
    for (const error of data.errors ?? []) {
      out.push(`${name}: an error outside the tests`);
      out.push(...digestOf(error.message ?? error.value ?? ''));
    }
  }
  return out;
}

/** `{ passed, failed, skipped, problems, failures }` of one runner's summary file. */
function readSummary(name, file) {
  let data;
  try {
    data = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (err) {
    return {
      passed: 0,
      failed: 1,
      skipped: {},
      problems: [`${name}: no readable summary (${file}: ${err.code ?? err.message})`],
    };
  }
  if (data && typeof data.numPassedTests === 'number' && Array.isArray(data.testResults)) {
    const failed = (data.numFailedTests ?? 0) + (data.numRuntimeErrorTestSuites ?? 0);
    const problems = [];
    let extra = 0;
    if (data.success === false && failed === 0) {
      extra = 1;
      problems.push(
        `${name}: jest reported no success, yet no failed test (interrupted, or a failure outside the tests)`,
      );
    }
    return {
      passed: data.numPassedTests,
      failed: failed + extra,
      skipped: skipsOf(data),
      problems,
      failures: failuresOf(name, data),
    };
  }
  if (data && data.stats && Number.isInteger(data.stats.expected) && Array.isArray(data.suites)) {
    // Playwright's JSON reporter: expected (and flaky, passed on a retry) passed; unexpected failed,
    // and so does an error outside any test (a failed global set-up).
    const errors = Array.isArray(data.errors) ? data.errors.length : 0;
    const problems = errors > 0 ? [`${name}: ${errors} error(s) outside the tests`] : [];
    const skipped =
      data.stats.skipped > 0
        ? { [`${name}: skipped in the test (see its reason in the report)`]: data.stats.skipped }
        : {};
    return {
      passed: data.stats.expected + (data.stats.flaky ?? 0),
      failed: (data.stats.unexpected ?? 0) + errors,
      skipped,
      problems,
      failures: failuresOf(name, data),
    };
  }
  if (data && Number.isInteger(data.passed) && Number.isInteger(data.failed)) {
    return { passed: data.passed, failed: data.failed, skipped: data.skipped ?? {}, problems: [] };
  }
  return {
    passed: 0,
    failed: 1,
    skipped: {},
    problems: [`${name}: ${file} is not a summary (neither jest's JSON nor {passed, failed})`],
  };
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
  const failures = [];
  const total = { passed: 0, failed: 0 };
  const skips = {};
  for (const [name, file] of runners) {
    const s = readSummary(name, file);
    failures.push(...(s.failures ?? []));
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
  return { lines, failed: total.failed, failures };
}

module.exports = { summarize, readSummary };

if (require.main === module) {
  const { lines, failed, failures } = summarize(process.argv.slice(2));
  if (failures.length > 0) {
    console.log('---- what each failed test said (its first lines) ----');
    for (const line of failures) console.log(line);
    console.log('----');
  }
  for (const line of lines) console.log(line);
  process.exit(failed > 0 ? 1 : 0);
}
