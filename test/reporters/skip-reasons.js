/**
 * Why a test was skipped, read from its titles: a declared skip says why in its title, as
 * `[skipped: <reason>]`, `(skipped: <reason>)` or `[<project> project, skipped: <reason>]`
 * (test/helpers/databases.ts, test/setup/postgres-skips.ts, the e2e suites). Shared by the jest
 * reporter (test/reporters/skips.js) and CI's summary (scripts/ci-summary.js).
 */
'use strict';

const NO_REASON = 'no reason given';
const DECLARED = /[[(](?:[^\])]*?, )?skipped: ([^\])]+)[\])]/;

/** The reason in `titles` (describe titles, then the test's), or NO_REASON. */
function skipReason(titles) {
  for (const title of [...titles].reverse()) {
    const match = DECLARED.exec(title);
    if (match) return match[1].trim();
  }
  return NO_REASON;
}

/** `{ reason: count }` of the skipped cases of a jest result (its testResults[].assertionResults or .testResults). */
function skipsOf(results) {
  const skips = {};
  for (const file of results.testResults ?? []) {
    for (const test of file.assertionResults ?? file.testResults ?? []) {
      if (test.status !== 'pending' && test.status !== 'skipped' && test.status !== 'todo') continue;
      const reason = skipReason([...(test.ancestorTitles ?? []), test.title ?? '']);
      skips[reason] = (skips[reason] ?? 0) + 1;
    }
  }
  return skips;
}

/** "N skipped: a (reason), b (reason)", or undefined when nothing was skipped. */
function skipsLine(skips) {
  const entries = Object.entries(skips).sort((a, b) => b[1] - a[1]);
  if (entries.length === 0) return undefined;
  const total = entries.reduce((sum, [, n]) => sum + n, 0);
  return `${total} skipped: ${entries.map(([reason, n]) => `${n} (${reason})`).join(', ')}`;
}

module.exports = { NO_REASON, skipReason, skipsOf, skipsLine };
