/**
 * scripts/ci-summary.js, the last lines of .ci/run: every runner summed, a missing or unreadable
 * summary a failure, skips counted by reason on the line before, a skip for a tool CI installs a
 * failure. Summaries are written to files as the runners write them.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { summarize } = require('../../scripts/ci-summary.js') as {
  summarize: (args: string[]) => { lines: string[]; failed: number; failures: string[] };
};

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ci-summary-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

function file(name: string, content: unknown): string {
  const at = path.join(dir, name);
  fs.writeFileSync(at, typeof content === 'string' ? content : JSON.stringify(content));
  return at;
}

const test = (status: string, title: string, ancestorTitles: string[] = []) => ({ status, title, ancestorTitles });
/** A jest --json summary: 3 passed, 1 failed, 3 skipped (two with a reason, one without). */
const jestJson = {
  success: false,
  numPassedTests: 3,
  numFailedTests: 1,
  numRuntimeErrorTestSuites: 0,
  numPendingTests: 3,
  testResults: [
    { assertionResults: [test('passed', 'a'), test('passed', 'b'), test('failed', 'c')] },
    {
      assertionResults: [
        test('passed', 'd'),
        test('pending', 'e [postgres project, skipped: needs DATABASE_URL]'),
        test('pending', 'f', ['flow control (postgres, skipped: needs DATABASE_URL)']),
        test('pending', 'g'),
      ],
    },
  ],
};

describe('scripts/ci-summary.js', () => {
  it('sums jest and a plain summary; skips by reason on the line before the last', () => {
    const { lines, failed } = summarize([
      `npm test=${file('jest.json', jestJson)}`,
      `schemathesis=${file('st.json', { passed: 1, failed: 0 })}`,
    ]);
    expect(lines).toEqual([
      'npm test: 3 passed, 1 failed, 3 skipped',
      'schemathesis: 1 passed, 0 failed',
      '3 skipped: 2 (needs DATABASE_URL), 1 (no reason given)',
      '4 passed, 1 failed',
    ]);
    expect(failed).toBe(1);
  });

  it('a missing, an unreadable and a foreign summary each count as one failure, named', () => {
    const { lines, failed } = summarize([
      `drills=${file('drills.json', { ...jestJson, success: true, numFailedTests: 0, testResults: [{ assertionResults: [test('passed', 'a')] }], numPassedTests: 1 })}`,
      `npm test=${path.join(dir, 'never-written.json')}`,
      `schemathesis=${file('broken.json', '{"passed": 1,')}`,
      `browser=${file('foreign.json', { ok: true })}`,
    ]);
    expect(lines.at(-1)).toBe('1 passed, 3 failed');
    expect(failed).toBe(3);
    expect(lines).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^npm test: no readable summary \(.*never-written\.json: ENOENT\)$/),
        expect.stringMatching(/^schemathesis: no readable summary/),
        expect.stringMatching(/^browser: .*foreign\.json is not a summary/),
      ]),
    );
  });

  it('a jest run that reports no success with nothing failed (global set-up failed) is a failure', () => {
    const { lines, failed } = summarize([
      `npm test=${file('setup.json', { success: false, numPassedTests: 0, numFailedTests: 0, numRuntimeErrorTestSuites: 0, testResults: [] })}`,
    ]);
    expect(failed).toBe(1);
    expect(lines.at(-1)).toBe('0 passed, 1 failed');
  });

  it("reads Playwright's JSON report: expected and flaky passed, unexpected and errors outside the tests failed", () => {
    const report = {
      suites: [],
      errors: [{ message: 'global set-up failed' }],
      stats: { expected: 12, flaky: 1, unexpected: 2, skipped: 2 },
    };
    const { lines, failed } = summarize([`browser=${file('playwright.json', report)}`]);
    expect(failed).toBe(3);
    expect(lines).toEqual(
      expect.arrayContaining([
        'browser: 13 passed, 3 failed, 2 skipped',
        'browser: 1 error(s) outside the tests',
        '13 passed, 3 failed',
      ]),
    );
  });

  it('a skip for a tool .ci/run installs counts as failed', () => {
    const web = {
      success: true,
      numPassedTests: 0,
      numFailedTests: 0,
      numRuntimeErrorTestSuites: 0,
      testResults: [
        {
          assertionResults: [
            test('pending', 'shows a run', [
              'Temporal Web UI (skipped: /usr/bin/chromium is absent; apt-get install -y chromium)',
            ]),
          ],
        },
      ],
    };
    const { lines, failed } = summarize(['--forbid-skip', 'chromium', `npm test=${file('web.json', web)}`]);
    expect(failed).toBe(1);
    expect(lines.slice(-2)).toEqual([
      '1 skipped: 1 (/usr/bin/chromium is absent; apt-get install -y chromium)',
      '0 passed, 1 failed',
    ]);
  });

  it("names each failed test with its message's first lines, colours removed, long messages cut; a suite failed outside its tests too", () => {
    const long = Array.from({ length: 40 }, (_, i) => `line ${i}`).join('\n');
    const drills = {
      success: false,
      numPassedTests: 1,
      numFailedTests: 1,
      numRuntimeErrorTestSuites: 1,
      testResults: [
        {
          name: `${process.cwd()}/test/drills/breaker-bulk.drill.ts`,
          status: 'failed',
          message: 'ignored: its tests say it',
          assertionResults: [
            test('passed', 'a'),
            {
              ...test('failed', 'every event ran once', ['a breaker']),
              failureMessages: [`\u001b[31mError: POST /x: 503\u001b[39m\n\n${long}`],
            },
          ],
        },
        {
          name: `${process.cwd()}/test/drills/flow.drill.ts`,
          status: 'failed',
          message: 'beforeAll: api-2 exited',
          assertionResults: [],
        },
      ],
    };
    const report = {
      suites: [
        {
          title: 'runs.spec.ts',
          specs: [
            {
              title: 'lists runs',
              file: 'runs.spec.ts',
              tests: [{ status: 'unexpected', results: [{ errors: [{ message: 'timeout' }] }] }],
            },
          ],
        },
      ],
      errors: [],
      stats: { expected: 0, unexpected: 1 },
    };
    const { failures } = summarize([
      `drills=${file('drills-failed.json', drills)}`,
      `browser=${file('pw-failed.json', report)}`,
    ]);
    expect(failures.slice(0, 3)).toEqual([
      'drills: FAILED test/drills/breaker-bulk.drill.ts › a breaker › every event ran once',
      '    Error: POST /x: 503',
      '    line 0',
    ]);
    expect(failures).toContain('    … 16 more lines');
    expect(failures).not.toContain('    line 24');
    expect(failures.slice(-4)).toEqual([
      'drills: FAILED test/drills/flow.drill.ts (outside its tests)',
      '    beforeAll: api-2 exited',
      'browser: FAILED runs.spec.ts › lists runs',
      '    timeout',
    ]);
  });
});
