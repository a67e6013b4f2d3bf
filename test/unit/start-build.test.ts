/**
 * scripts/start.js and scripts/build-dist.js: `npm start` compiles dist/ only when it is missing or
 * a source is newer than the last build, and then only the files that changed.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { staleReason } = require('../../scripts/start.js') as { staleReason: (root: string) => string | undefined };
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { buildDist } = require('../../scripts/build-dist.js') as { buildDist: (root: string) => { compiled: number; total: number } };

const ROOT = path.resolve(__dirname, '../..');

function project(): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'start-build-'));
  fs.mkdirSync(path.join(root, 'src'));
  fs.writeFileSync(path.join(root, 'src', 'main.ts'), "import { twice } from './lib';\nconsole.log(twice(21));\n");
  fs.writeFileSync(path.join(root, 'src', 'lib.ts'), 'export const twice = (n: number): number => n * 2;\n');
  fs.writeFileSync(path.join(root, 'tsconfig.build.json'), JSON.stringify({ compilerOptions: { outDir: 'dist' }, include: ['src'] }));
  // the compiler is resolved from the project root, as in a clone after npm ci
  fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(root, 'node_modules'));
  return root;
}

const past = (file: string, secondsAgo: number): void => {
  const when = new Date(Date.now() - secondsAgo * 1000);
  fs.utimesSync(file, when, when);
};

describe('npm start: building dist/', () => {
  const roots: string[] = [];
  afterAll(() => roots.forEach((root) => fs.rmSync(root, { recursive: true, force: true })));

  it('builds when dist/ is missing, not when it is current, again when a source changed — only that file', () => {
    const root = project();
    roots.push(root);
    expect(staleReason(root)).toBe('dist/ is missing');
    expect(buildDist(root)).toEqual({ compiled: 2, total: 2 });
    expect(execFileSync(process.execPath, [path.join(root, 'dist', 'src', 'main.js')], { encoding: 'utf8' }).trim()).toBe('42');

    expect(staleReason(root)).toBe('dist/ was not built by npm start');
    fs.writeFileSync(path.join(root, 'dist', '.build-stamp'), 'now\n');
    for (const file of ['src/main.ts', 'src/lib.ts', 'src', 'tsconfig.build.json']) past(path.join(root, file), 60);
    expect(staleReason(root)).toBeUndefined();

    fs.writeFileSync(path.join(root, 'src', 'lib.ts'), 'export const twice = (n: number): number => n + n + 1;\n');
    expect(staleReason(root)).toBe('the sources changed since the last build');
    expect(buildDist(root)).toEqual({ compiled: 1, total: 2 });
    expect(execFileSync(process.execPath, [path.join(root, 'dist', 'src', 'main.js')], { encoding: 'utf8' }).trim()).toBe('43');
  });
});
