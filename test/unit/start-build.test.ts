/**
 * scripts/start.js and scripts/build-dist.js: `npm start` compiles dist/ only when it is missing or
 * a source is newer than the last build, and then only the files that changed.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { staleReason, ensureBuilt } = require('../../scripts/start.js') as {
  staleReason: (root: string) => string | undefined;
  ensureBuilt: (root: string) => Promise<string | undefined>;
};
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { buildDist } = require('../../scripts/build-dist.js') as {
  buildDist: (root: string) => { compiled: number; total: number };
};

const ROOT = path.resolve(__dirname, '../..');

function project(): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'start-build-'));
  fs.mkdirSync(path.join(root, 'src'));
  fs.writeFileSync(path.join(root, 'src', 'main.ts'), "import { twice } from './lib';\nconsole.log(twice(21));\n");
  fs.writeFileSync(path.join(root, 'src', 'lib.ts'), 'export const twice = (n: number): number => n * 2;\n');
  fs.writeFileSync(
    path.join(root, 'tsconfig.build.json'),
    JSON.stringify({ compilerOptions: { outDir: 'dist' }, include: ['src'] }),
  );
  // the compiler is resolved from the project root, as in a clone after npm ci
  fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(root, 'node_modules'));
  return root;
}

const past = (file: string, secondsAgo: number): void => {
  const when = new Date(Date.now() - secondsAgo * 1000);
  fs.utimesSync(file, when, when);
};

/** Every file under dist/ with its modification time. */
function distFiles(root: string): Record<string, number> {
  const dist = path.join(root, 'dist');
  return Object.fromEntries(
    (fs.readdirSync(dist, { recursive: true }) as string[])
      .filter((name) => fs.statSync(path.join(dist, name)).isFile())
      .map((name) => [name, fs.statSync(path.join(dist, name)).mtimeMs]),
  );
}

describe('npm start: building dist/', () => {
  const roots: string[] = [];
  afterAll(() => roots.forEach((root) => fs.rmSync(root, { recursive: true, force: true })));

  it('buildDist compiles every file when dist/ is missing, then only the file that changed', () => {
    const root = project();
    roots.push(root);
    expect(buildDist(root)).toEqual({ compiled: 2, total: 2 });
    expect(
      execFileSync(process.execPath, [path.join(root, 'dist', 'src', 'main.js')], { encoding: 'utf8' }).trim(),
    ).toBe('42');
    // (no stamp: buildDist alone is not a start)
    expect(staleReason(root)).toBe('dist/ was not built by npm start');
    for (const file of ['src/main.ts', 'src/lib.ts']) past(path.join(root, file), 60);
    fs.writeFileSync(path.join(root, 'src', 'lib.ts'), 'export const twice = (n: number): number => n + n + 1;\n');
    expect(buildDist(root)).toEqual({ compiled: 1, total: 2 });
    expect(
      execFileSync(process.execPath, [path.join(root, 'dist', 'src', 'main.js')], { encoding: 'utf8' }).trim(),
    ).toBe('43');
  });

  it('a start compiles a missing dist/ and stamps it; a second start compiles nothing; after a change, the next start compiles again', async () => {
    const root = project();
    roots.push(root);
    expect(await ensureBuilt(root)).toBe('dist/ is missing');
    expect(fs.readFileSync(path.join(root, 'dist', '.build-stamp'), 'utf8')).toMatch(/^\d{4}-\d\d-\d\dT[\d:.]+Z\n$/);
    expect(
      execFileSync(process.execPath, [path.join(root, 'dist', 'src', 'main.js')], { encoding: 'utf8' }).trim(),
    ).toBe('42');

    const built = distFiles(root);
    expect(Object.keys(built).sort()).toEqual([
      '.build-stamp',
      'src/lib.js',
      'src/lib.js.map',
      'src/main.js',
      'src/main.js.map',
    ]);
    expect(staleReason(root)).toBeUndefined();
    expect(await ensureBuilt(root)).toBeUndefined();
    expect(distFiles(root)).toEqual(built); // nothing compiled, not even the stamp rewritten

    fs.writeFileSync(path.join(root, 'src', 'lib.ts'), 'export const twice = (n: number): number => n + n + 1;\n');
    const later = new Date(Date.now() + 2000); // past the stamp, whatever the file system's clock granularity
    fs.utimesSync(path.join(root, 'src', 'lib.ts'), later, later);
    expect(await ensureBuilt(root)).toBe('the sources changed since the last build');
    expect(
      execFileSync(process.execPath, [path.join(root, 'dist', 'src', 'main.js')], { encoding: 'utf8' }).trim(),
    ).toBe('43');
  });
});
