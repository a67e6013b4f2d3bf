#!/usr/bin/env node
/**
 * `npm start [role]`: runs the compiled JavaScript in dist/. When dist/ is missing or older than a
 * source file, compiles it first (incremental tsc without type checking — `npm run typecheck` and
 * `npm run build` check types), and meanwhile makes sure the Temporal CLI is there (unless
 * TEMPORAL_ADDRESS is set); then runs dist/src/main.js in this same process.
 * `npm run dev` runs from the TypeScript sources instead, restarting on change.
 */
'use strict';
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..');
const DIST = path.join(ROOT, 'dist');
const MAIN = path.join(DIST, 'src', 'main.js');
/** Written after each successful build: dist/ is current when no source is newer than it. */
const STAMP = path.join(DIST, '.build-stamp');
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

function build(reason) {
  const started = Date.now();
  console.error(`Compiling TypeScript into dist/ (${reason}) ...`);
  const tsc = require.resolve('typescript/bin/tsc', { paths: [ROOT] });
  const args = [tsc, '-p', 'tsconfig.build.json', '--incremental', '--tsBuildInfoFile', path.join(DIST, '.tsbuildinfo'), '--noCheck'];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit'] });
    child.once('error', reject);
    child.once('exit', (code) => {
      if (code !== 0) return reject(new Error(`tsc -p tsconfig.build.json failed (exit ${code})`));
      fs.writeFileSync(STAMP, `${new Date().toISOString()}\n`);
      console.error(`Compiled in ${((Date.now() - started) / 1000).toFixed(1)}s.`);
      resolve();
    });
  });
}

async function main() {
  const reason = staleReason();
  const cli = process.env.TEMPORAL_ADDRESS || ['api', 'worker'].includes(process.argv[2] ?? '')
    ? Promise.resolve()
    : require('./temporal-cli.js').ensureTemporalCli();
  await Promise.all([reason ? build(reason) : undefined, cli]);
  require(MAIN);
}

module.exports = { staleReason };

if (require.main === module) {
  main().catch((err) => {
    console.error(err.message);
    process.exit(1);
  });
}
