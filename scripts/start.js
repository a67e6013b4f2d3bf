#!/usr/bin/env node
/**
 * `npm start [role]`: runs the compiled JavaScript in dist/. When dist/ is missing or older than a
 * source file, compiles the changed files first (scripts/build-dist.js: file by file with swc, as
 * jest does, without type checking — `npm run typecheck` and `npm run build` check types); then
 * runs dist/src/main.js in this same process (which gets the Temporal CLI, creates the store and
 * bundles the workflow code at the same time). The console (console/, served at /console) is built
 * the same way into dist/console with Vite when it is missing or older than its sources, in a child
 * process next to the compiler (a missing one while the service starts).
 * `npm run dev` runs from the TypeScript sources instead, restarting on change.
 */
'use strict';
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..');
const DIST = path.join(ROOT, 'dist');
const MAIN = path.join(DIST, 'src', 'main.js');
/** Written after each successful build (dist/.build-stamp): dist/ is current when no source is newer than it. */
const STAMP = '.build-stamp';
const SOURCES = ['src', 'workflows', 'activities', 'scripts', 'tsconfig.json', 'tsconfig.build.json', 'package.json'];

function newestMtime(entry) {
  let stat;
  try {
    stat = fs.statSync(entry);
  } catch {
    return 0;
  }
  if (!stat.isDirectory()) return stat.mtimeMs;
  let newest = stat.mtimeMs; // a deleted or renamed file changes its directory's mtime
  for (const name of fs.readdirSync(entry)) newest = Math.max(newest, newestMtime(path.join(entry, name)));
  return newest;
}

/** Why dist/ must be built, or undefined when it is current. */
function staleReason(root = ROOT) {
  const dist = path.join(root, 'dist');
  if (!fs.existsSync(path.join(dist, 'src', 'main.js'))) return 'dist/ is missing';
  let built;
  try {
    built = fs.statSync(path.join(dist, '.build-stamp')).mtimeMs;
  } catch {
    return 'dist/ was not built by npm start';
  }
  const newest = Math.max(...SOURCES.map((entry) => newestMtime(path.join(root, entry))));
  return newest > built ? 'the sources changed since the last build' : undefined;
}

/** The console's sources; dist/console/.build-stamp is written after each successful build. */
const CONSOLE_SOURCES = ['console/src', 'console/index.html', 'console/vite.config.ts', 'package-lock.json'];

/** Why dist/console must be built, or undefined when it is current. */
function consoleStaleReason(root = ROOT) {
  let built;
  try {
    built = fs.statSync(path.join(root, 'dist', 'console', '.build-stamp')).mtimeMs;
  } catch {
    return 'dist/console is missing';
  }
  const newest = Math.max(...CONSOLE_SOURCES.map((entry) => newestMtime(path.join(root, entry))));
  return newest > built ? 'the console changed since the last build' : undefined;
}

/**
 * Builds the console with Vite in a child process. `background`: at a lower CPU priority (nice 10),
 * for a build the service does not wait for, so that on a small machine the service's own start
 * (store, workflow bundle, Temporal) gets the cores first and answers /ready sooner.
 */
function buildConsole(reason, { background = false } = {}) {
  const started = Date.now();
  console.error(`Building the console into dist/console (${reason}) ...`);
  let vite;
  try {
    vite = path.join(path.dirname(require.resolve('vite/package.json', { paths: [ROOT] })), 'bin', 'vite.js');
  } catch {
    console.error('... skipped: Vite is not installed (npm ci installs it); /console answers 503 until it is built.');
    return Promise.resolve();
  }
  // Built beside dist/console and moved into place whole: a service already running (see main)
  // never reads half a build.
  const target = path.join(ROOT, 'dist', 'console');
  const next = `${target}.next-${process.pid}`;
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [vite, 'build', '--config', 'console/vite.config.ts', '--logLevel', 'warn', '--outDir', next, '--emptyOutDir'],
      {
        cwd: ROOT,
        stdio: ['ignore', 'inherit', 'inherit'],
      },
    );
    if (background && child.pid) {
      try {
        os.setPriority(child.pid, 10);
      } catch {
        // a platform that refuses it builds at normal priority
      }
    }
    child.once('error', reject);
    child.once('exit', (code) => {
      if (code !== 0) {
        fs.rmSync(next, { recursive: true, force: true });
        return reject(new Error(`building the console failed (exit ${code})`));
      }
      fs.writeFileSync(path.join(next, '.build-stamp'), `${new Date().toISOString()}\n`);
      fs.rmSync(target, { recursive: true, force: true });
      fs.renameSync(next, target);
      console.error(`... console built in ${((Date.now() - started) / 1000).toFixed(1)}s.`);
      resolve();
    });
  });
}

function build(reason, root) {
  const started = Date.now();
  console.error(`Compiling into dist/ (${reason}) ...`);
  return new Promise((resolve, reject) => {
    // A child process: the compiler's memory leaves with it.
    const child = spawn(process.execPath, [path.join(__dirname, 'build-dist.js'), root], {
      cwd: root,
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    child.once('error', reject);
    child.once('exit', (code) => {
      if (code !== 0) return reject(new Error(`compiling into dist/ failed (exit ${code})`));
      fs.writeFileSync(path.join(root, 'dist', STAMP), `${new Date().toISOString()}\n`);
      console.error(`... in ${((Date.now() - started) / 1000).toFixed(1)}s.`);
      resolve();
    });
  });
}

/** Compiles dist/ when it is stale (and stamps it); resolves with why it compiled, or undefined when it did not. */
async function ensureBuilt(root = ROOT) {
  const reason = staleReason(root);
  if (reason) await build(reason, root);
  return reason;
}

async function main() {
  // A console that was never built is built while the service starts (the first start spends its
  // time fetching the Temporal CLI and creating the store; /console answers 503 until the build is
  // in place). A stale one is rebuilt first, so that the service never serves the old one.
  const missing = !fs.existsSync(path.join(ROOT, 'dist', 'console', 'index.html'));
  const consoleBuilt = ensureConsoleBuilt(ROOT, { background: missing });
  if (missing) {
    consoleBuilt.catch((err) =>
      console.error(`${err.message}: /console answers 503 until \`npm run build:console\` succeeds.`),
    );
    await ensureBuilt();
  } else {
    await Promise.all([ensureBuilt(), consoleBuilt]);
  }
  require(MAIN);
}

/** Builds dist/console when it is stale (npm start and npm run stack:prod); `background` as buildConsole's. */
async function ensureConsoleBuilt(root = ROOT, options = {}) {
  const reason = consoleStaleReason(root);
  if (reason) await buildConsole(reason, options);
  return reason;
}

module.exports = { staleReason, ensureBuilt, consoleStaleReason, ensureConsoleBuilt };

if (require.main === module) {
  main().catch((err) => {
    console.error(err.message);
    process.exit(1);
  });
}
