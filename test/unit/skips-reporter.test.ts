/**
 * The line that ends `npm test`: every skipped case counted by its reason (test/reporters/skips.js),
 * printed by the global teardown, with how to run the PostgreSQL cases when some were skipped for
 * want of DATABASE_URL. Shown on a suite of its own: real jest runs, in a child process, over a few
 * test files in a temporary folder, with a teardown that prints the line as test/global-teardown.ts
 * does. The counts are the run's only: the reporter writes no file (docs/testing.md#skipped-cases).
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');
const JEST = path.join(ROOT, 'node_modules/jest/bin/jest.js');
const REPORTER = path.join(ROOT, 'test/reporters/skips.js');

let dir: string;

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'skips-reporter-'));
  fs.writeFileSync(
    path.join(dir, 'jest.config.js'),
    `module.exports = { rootDir: ${JSON.stringify(dir)}, testMatch: ['**/*.test.js'], transform: {}, reporters: ['default', ${JSON.stringify(REPORTER)}], globalTeardown: './teardown.js' };\n`,
  );
  fs.writeFileSync(
    path.join(dir, 'teardown.js'),
    'module.exports = async () => { if (process.env.TEST_SKIPS_LINE) process.stderr.write(process.env.TEST_SKIPS_LINE); };\n',
  );
  fs.writeFileSync(path.join(dir, 'plain.test.js'), "it('passes', () => expect(1).toBe(1));\n");
});

afterEach(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

function withSkips(): void {
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
      "it.skip('a case that says nothing', () => {});",
    ].join('\n'),
  );
}

/** Runs jest over the temporary suite; answers its exit code and standard error. */
function runJest(extra: Record<string, string> = {}): Promise<{ code: number; stderr: string }> {
  const env: Record<string, string> = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? os.tmpdir(), ...extra };
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [JEST, '--config', path.join(dir, 'jest.config.js'), '--ci'],
      { cwd: dir, env },
      (err, _stdout, stderr) => {
        resolve({ code: err ? Number(err.code ?? 1) : 0, stderr });
      },
    );
  });
}

/** Every file of the folder with its content. */
function snapshot(): Record<string, string> {
  return Object.fromEntries(fs.readdirSync(dir).map((name) => [name, fs.readFileSync(path.join(dir, name), 'utf8')]));
}

describe('the skips line at the end of a run', () => {
  it('counts every skipped case by its reason, most first, then says how to run the PostgreSQL ones', async () => {
    withSkips();
    const run = await runJest();
    expect(run.code).toBe(0);
    const lines = run.stderr.trimEnd().split('\n');
    expect(lines.slice(-2)).toEqual([
      '4 skipped: 2 (needs DATABASE_URL), 1 (no Chromium), 1 (no reason given)',
      'Run the 2 PostgreSQL cases with a PostgreSQL of your own: DATABASE_URL=postgres://postgres:postgres@127.0.0.1:5432/<db> npm test (CI sets it).',
    ]);
  });

  it('prints nothing when nothing was skipped', async () => {
    const run = await runJest();
    expect(run.code).toBe(0);
    expect(run.stderr).not.toContain('skipped');
  });

  it('writes no file: the counts are in the run, not in a doc', async () => {
    withSkips();
    // What the reporter once rewrote on UPDATE_TESTING_DOC=1: a doc with its markers, named by its option.
    fs.writeFileSync(
      path.join(dir, 'testing.md'),
      '<!-- skips: written by test/reporters/skips.js (UPDATE_TESTING_DOC=1 npm test) -->\n```\nnone\n```\n<!-- /skips -->\n',
    );
    fs.writeFileSync(
      path.join(dir, 'jest.config.js'),
      fs
        .readFileSync(path.join(dir, 'jest.config.js'), 'utf8')
        .replace(`${JSON.stringify(REPORTER)}]`, `[${JSON.stringify(REPORTER)}, { doc: 'testing.md' }]]`),
    );
    const before = snapshot();
    const run = await runJest({ UPDATE_TESTING_DOC: '1' });
    expect(run.code).toBe(0);
    expect(snapshot()).toEqual(before);
  });
});
