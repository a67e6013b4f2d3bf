#!/usr/bin/env node
/**
 * Finds the Temporal CLI (which holds the dev server and the Web UI): on PATH, or in
 * .temporal/bin. Failing both, builds it with `go install` into .temporal/bin (the first build
 * downloads a few hundred MB of modules and compiles for several minutes). Failing that, says
 * exactly what to install. Run directly (npm's prestart/pretest) or require `ensureTemporalCli`.
 */
'use strict';
const { spawnSync, spawn } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const CLI_VERSION = 'v1.5.1';
const MODULE = `github.com/temporalio/cli/cmd/temporal@${CLI_VERSION}`;
const ROOT = path.resolve(__dirname, '..');
const LOCAL_BIN = path.join(ROOT, '.temporal', 'bin');
const LOCAL_CLI = path.join(LOCAL_BIN, process.platform === 'win32' ? 'temporal.exe' : 'temporal');

function works(executable) {
  const result = spawnSync(executable, ['--version'], { encoding: 'utf8', timeout: 20000 });
  return result.status === 0 ? result.stdout.trim() : undefined;
}

/** Path of a working CLI, or undefined. TEMPORAL_CLI overrides the search. */
function findTemporalCli() {
  const candidates = [process.env.TEMPORAL_CLI, LOCAL_CLI, 'temporal'].filter(Boolean);
  for (const candidate of candidates) {
    if (candidate !== 'temporal' && !fs.existsSync(candidate)) continue;
    if (works(candidate)) {
      if (candidate !== 'temporal') return candidate;
      const which = spawnSync('sh', ['-c', 'command -v temporal'], { encoding: 'utf8' });
      return which.stdout.trim() || 'temporal';
    }
  }
  return undefined;
}

function hasGo() {
  return spawnSync('go', ['version'], { encoding: 'utf8' }).status === 0;
}

function buildWithGo(log) {
  return new Promise((resolve, reject) => {
    fs.mkdirSync(LOCAL_BIN, { recursive: true });
    log(`Temporal CLI not found: building ${MODULE} with Go into .temporal/bin.`);
    log('The first build downloads a few hundred MB of Go modules and compiles for several minutes; later builds use the Go caches.');
    const started = Date.now();
    const child = spawn('go', ['install', MODULE], {
      env: { ...process.env, GOBIN: LOCAL_BIN },
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
      log(`  ... still building the Temporal CLI (${seconds}s, ${downloads} modules downloaded)`);
    }, 15000);
    child.on('error', (err) => {
      clearInterval(ticker);
      reject(err);
    });
    child.on('exit', (code) => {
      clearInterval(ticker);
      if (code === 0 && works(LOCAL_CLI)) {
        log(`Built the Temporal CLI in ${Math.round((Date.now() - started) / 1000)}s: ${LOCAL_CLI}`);
        resolve(LOCAL_CLI);
      } else {
        reject(new Error(`go install ${MODULE} failed (exit ${code}):\n${tail}`));
      }
    });
  });
}

const HOW_TO_GET_IT = [
  'The Temporal CLI is needed (it runs the embedded Temporal dev server and Web UI). Either:',
  `  1. install Go (https://go.dev/dl/) and run: GOBIN=$PWD/.temporal/bin go install ${MODULE}`,
  '  2. or install the CLI yourself (https://docs.temporal.io/cli#install) so that `temporal` is on PATH',
  '     (or set TEMPORAL_CLI=/path/to/temporal).',
  'Alternatively point the service at an existing Temporal server with TEMPORAL_ADDRESS=host:7233.',
].join('\n');

/** Finds or builds the CLI; rejects with instructions when neither is possible. */
async function ensureTemporalCli(log = (line) => console.error(line)) {
  const found = findTemporalCli();
  if (found) return found;
  if (!hasGo()) throw new Error(HOW_TO_GET_IT);
  try {
    return await buildWithGo(log);
  } catch (err) {
    throw new Error(`${err.message}\n\n${HOW_TO_GET_IT}`);
  }
}

module.exports = { ensureTemporalCli, findTemporalCli, CLI_VERSION };

if (require.main === module) {
  if (process.env.TEMPORAL_ADDRESS && process.argv.includes('--unless-external')) {
    console.error(`TEMPORAL_ADDRESS is set (${process.env.TEMPORAL_ADDRESS}): not looking for the Temporal CLI.`);
    process.exit(0);
  }
  ensureTemporalCli()
    .then((cli) => console.error(`Temporal CLI: ${cli} (${works(cli)?.split('\n')[0] ?? 'unknown version'})`))
    .catch((err) => {
      console.error(err.message);
      process.exit(1);
    });
}
