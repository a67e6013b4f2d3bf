/**
 * docs/testing.md's skipped-tests figure is written by the run (test/reporters/skips.js with
 * UPDATE_TESTING_DOC=1), not typed. Shown here on a suite of its own: real jest runs, in a child
 * process, over a few test files in a temporary folder, with the reporter writing a copy of the
 * doc's block. Only a run of the whole suite in which every file ran writes it.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');
const JEST = path.join(ROOT, 'node_modules/jest/bin/jest.js');
const REPORTER = path.join(ROOT, 'test/reporters/skips.js');
const BEGIN = '<!-- skips: written by test/reporters/skips.js (UPDATE_TESTING_DOC=1 npm test) -->';
const END = '<!-- /skips -->';
const DOC = [
  '# Testing',
  '',
  'Before.',
  '',
  BEGIN,
  '```',
  'not written yet by a whole run',
  '```',
  END,
  '',
  'After.',
  '',
].join('\n');

let dir: string;

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'skips-reporter-'));
  fs.writeFileSync(path.join(dir, 'testing.md'), DOC);
  fs.writeFileSync(
    path.join(dir, 'jest.config.js'),
    `module.exports = { rootDir: ${JSON.stringify(dir)}, testMatch: ['**/*.test.js'], transform: {}, reporters: [[${JSON.stringify(REPORTER)}, { doc: 'testing.md' }]] };\n`,
  );
  fs.writeFileSync(
    path.join(dir, 'store.test.js'),
    [
      "describe('store', () => {",
      "  it('passes', () => expect(1).toBe(1));",
      "  it.skip('a PostgreSQL case [skipped: needs DATABASE_URL]', () => {});",
      "  it.skip('another PostgreSQL case [skipped: needs DATABASE_URL]', () => {});",
      '});',
    ].join('\n'),
  );
  fs.writeFileSync(
    path.join(dir, 'browser.test.js'),
    [
      "it('passes too', () => expect(2).toBe(2));",
      "it.skip('the console in a browser (skipped: no Chromium)', () => {});",
    ].join('\n'),
  );
});

afterEach(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

/** Runs jest over the temporary suite; answers its exit code and standard error. */
function runJest(args: string[], env: Record<string, string>): Promise<{ code: number; stderr: string }> {
  const base: Record<string, string> = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? os.tmpdir() };
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [JEST, '--config', path.join(dir, 'jest.config.js'), '--ci', ...args],
      { cwd: dir, env: { ...base, ...env } },
      (err, _stdout, stderr) => {
        resolve({ code: err ? Number(err.code ?? 1) : 0, stderr });
      },
    );
  });
}

function doc(): string {
  return fs.readFileSync(path.join(dir, 'testing.md'), 'utf8');
}

const today = (): string => new Date().toISOString().slice(0, 10);

describe('UPDATE_TESTING_DOC=1', () => {
  it('finds its block in docs/testing.md (a whole run would fail without it)', () => {
    const text = fs.readFileSync(path.join(ROOT, 'docs/testing.md'), 'utf8');
    expect(text.indexOf(BEGIN)).toBeGreaterThan(0);
    expect(text.indexOf(END)).toBeGreaterThan(text.indexOf(BEGIN));
  });

  it("writes the whole run's figures between the markers, and nothing else", async () => {
    const run = await runJest([], { UPDATE_TESTING_DOC: '1' });
    expect(run.code).toBe(0);
    const expected = DOC.replace(
      '```\nnot written yet by a whole run\n```',
      '```\n' +
        `${today()}, npm test without DATABASE_URL: 2 passed, 0 failed, 3 skipped: 2 (needs DATABASE_URL), 1 (no Chromium)` +
        '\n```',
    );
    // The date is the run's: a run that crosses midnight may write the next day.
    expect(doc().replace(/\d{4}-\d{2}-\d{2}/, today())).toBe(expected);
  });

  it('says whether DATABASE_URL was set, and counts a failed test', async () => {
    fs.writeFileSync(path.join(dir, 'failing.test.js'), "it('fails', () => expect(1).toBe(2));");
    const run = await runJest([], { UPDATE_TESTING_DOC: '1', DATABASE_URL: 'postgres://nowhere.invalid/db' });
    expect(run.code).toBe(1);
    expect(doc()).toContain(
      'npm test with DATABASE_URL: 2 passed, 1 failed, 3 skipped: 2 (needs DATABASE_URL), 1 (no Chromium)\n',
    );
  });

  it('leaves the doc as it is after a run narrowed to some files, names or a shard', async () => {
    for (const args of [['store.test.js'], ['--testNamePattern', 'passes'], ['--shard', '1/2']]) {
      const run = await runJest(args, { UPDATE_TESTING_DOC: '1' });
      expect({ args, stderr: run.stderr }).toMatchObject({
        args,
        stderr: expect.stringMatching(
          /UPDATE_TESTING_DOC=1: not a run of the whole suite \(.+\): testing\.md left as it is\./,
        ),
      });
      expect(doc()).toBe(DOC);
    }
  });

  it('leaves the doc as it is when a test file could not run (its skips are not counted)', async () => {
    fs.writeFileSync(
      path.join(dir, 'broken.test.js'),
      "describe('broken', () => {\n  it.skip('x [skipped: needs DATABASE_URL]', () => {});\n",
    );
    const run = await runJest([], { UPDATE_TESTING_DOC: '1' });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('UPDATE_TESTING_DOC=1: 1 test file(s) could not run: testing.md left as it is.');
    expect(doc()).toBe(DOC);
  });

  it('is needed: a whole run without it leaves the doc as it is', async () => {
    const run = await runJest([], {});
    expect(run.code).toBe(0);
    expect(run.stderr).not.toContain('UPDATE_TESTING_DOC');
    expect(doc()).toBe(DOC);
  });
});
