#!/usr/bin/env node
/**
 * Adds the lock entries npm leaves out for other platforms' optional binaries (e.g.
 * @swc/core-darwin-arm64): npm 11 does not record packages its registry mirror cannot serve for
 * this platform, and then `npm ci` refuses the lock as "Missing: … from lock file". The entries
 * are written from the package naming convention (os, cpu, libc), which is all `npm ci` needs to
 * skip them. Run after `npm install` changes package-lock.json: `node scripts/complete-lockfile.js`.
 */
'use strict';
const fs = require('node:fs');
const path = require('node:path');

const file = path.resolve(__dirname, '..', 'package-lock.json');
const PLATFORM = /-(darwin|linux|win32|android|freebsd|openharmony|wasm32)-([a-z0-9]+)(?:-([a-z]+))?$/;

/** Optional dependencies that have no lock entry anywhere npm would look for them. */
function missingOptionals(lock) {
  const missing = [];
  for (const [location, pkg] of Object.entries(lock.packages)) {
    for (const [name, version] of Object.entries(pkg.optionalDependencies ?? {})) {
      const nested = `${location ? `${location}/` : ''}node_modules/${name}`;
      if (!lock.packages[nested] && !lock.packages[`node_modules/${name}`])
        missing.push({ name, version, dev: Boolean(pkg.dev) });
    }
  }
  return missing;
}

function entryFor({ name, version, dev }) {
  const match = PLATFORM.exec(name);
  if (!match) return undefined;
  const [, os, cpu, abi] = match;
  const entry = { version, cpu: [os === 'wasm32' ? 'wasm32' : cpu] };
  if (dev) entry.dev = true;
  if (os === 'linux' && abi) entry.libc = [abi.startsWith('musl') ? 'musl' : 'glibc'];
  entry.optional = true;
  if (os !== 'wasm32') entry.os = [os];
  return entry;
}

function main() {
  const lock = JSON.parse(fs.readFileSync(file, 'utf8'));
  const added = [];
  for (const dep of missingOptionals(lock)) {
    const entry = entryFor(dep);
    if (!entry) {
      console.error(`cannot infer the platform of ${dep.name}; add its entry by hand`);
      process.exitCode = 1;
      continue;
    }
    lock.packages[`node_modules/${dep.name}`] = entry;
    added.push(dep.name);
  }
  if (added.length === 0) return console.log('package-lock.json lists every optional dependency');
  const keys = Object.keys(lock.packages).sort((a, b) => (a === '' ? -1 : b === '' ? 1 : a < b ? -1 : a > b ? 1 : 0));
  lock.packages = Object.fromEntries(keys.map((key) => [key, lock.packages[key]]));
  fs.writeFileSync(file, `${JSON.stringify(lock, null, 2)}\n`);
  console.log(`added ${added.length} entries: ${added.join(', ')}`);
}

module.exports = { missingOptionals };
if (require.main === module) main();
