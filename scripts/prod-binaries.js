#!/usr/bin/env node
/**
 * The production shape's Go programs, built once into .temporal/ and reused:
 *   .temporal/bin/temporal-server-authz  deploy/temporal/server (`go build`): the Temporal server
 *                                        v1.29.1 (its go.mod) with the frontend's authorizer by
 *                                        certificate subject; built again when its sources change
 *                                        (the hash of its files is kept beside it, in .sources)
 *   .temporal/bin/temporal-sql-tool    go.temporal.io/server/cmd/tools/sql@v1.29.1
 *   .temporal/bin/temporal-ui-server   github.com/temporalio/ui-server/v2/cmd/server@v2.55.0
 *   .temporal/temporal-server-v1.29.1/schema/postgresql/v12/{temporal,visibility}  (from the module)
 *   .temporal/bin/jaeger               github.com/jaegertracing/jaeger/cmd/jaeger@v1.76.0 (Jaeger v2: OTLP
 *                                        in, the query API; no UI in this build), built in an empty
 *                                        module with `go get -tool` (its replace directives refuse a
 *                                        plain `go install`); about 10 minutes on 2 cores the first time
 * The `go install`ed programs are not rebuilt when the binary is present; each is installed into
 * its own GOBIN and renamed (the UI server's main package is called `server`). v1.29.1 is the
 * newest server that builds with Go 1.26.8; ui-server v2.55.0 is the newest UI server whose go.mod
 * asks for no newer Go (v2.56+ wants 1.26.9 or later).
 * Usage: `node scripts/prod-binaries.js` (CI and `npm run stack:prod` call it).
 */
'use strict';
const { execFileSync } = require('node:child_process');
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..');
const DIR = path.join(ROOT, '.temporal');
const BIN = path.join(DIR, 'bin');
const TEMPORAL_VERSION = 'v1.29.1';
const UI_VERSION = 'v2.55.0';
const JAEGER_VERSION = 'v1.76.0';
const JAEGER_PKG = 'github.com/jaegertracing/jaeger/cmd/jaeger';
const JAEGER_BINARY = path.join(BIN, 'jaeger');

const SERVER_SOURCE = path.join(ROOT, 'deploy', 'temporal', 'server');
const SERVER_BINARY = path.join(BIN, 'temporal-server-authz');

const PROGRAMS = [
  { name: 'temporal-sql-tool', pkg: `go.temporal.io/server/cmd/tools/sql@${TEMPORAL_VERSION}` },
  { name: 'temporal-ui-server', pkg: `github.com/temporalio/ui-server/v2/cmd/server@${UI_VERSION}` },
];

const SCHEMA_DIR = path.join(DIR, `temporal-server-${TEMPORAL_VERSION}`, 'schema', 'postgresql', 'v12');

function goEnv(name) {
  return execFileSync('go', ['env', name], { encoding: 'utf8' }).trim();
}

function haveGo() {
  try {
    execFileSync('go', ['version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** The hash of the server's sources (go.mod, go.sum, every .go file), to know when to build again. */
function serverSourceHash() {
  const hash = crypto.createHash('sha256');
  const walk = (dir) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const file = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(file);
      else if (/\.go$|^go\.(mod|sum)$/.test(entry.name))
        hash
          .update(`${path.relative(SERVER_SOURCE, file)}\0`)
          .update(fs.readFileSync(file))
          .update('\0');
    }
  };
  walk(SERVER_SOURCE);
  return hash.digest('hex');
}

function serverIsCurrent(sourceHash) {
  try {
    return fs.existsSync(SERVER_BINARY) && fs.readFileSync(`${SERVER_BINARY}.sources`, 'utf8').trim() === sourceHash;
  } catch {
    return false;
  }
}

/** Builds what is missing; returns the paths of the programs and of the PostgreSQL schemas. */
function ensureProdBinaries(log = (line) => console.log(line)) {
  const paths = Object.fromEntries(PROGRAMS.map((p) => [p.name, path.join(BIN, p.name)]));
  const missing = PROGRAMS.filter((p) => !fs.existsSync(paths[p.name]));
  const schemaMissing = !fs.existsSync(path.join(SCHEMA_DIR, 'visibility', 'versioned'));
  const sourceHash = serverSourceHash();
  const serverStale = !serverIsCurrent(sourceHash);
  const jaegerMissing = !fs.existsSync(JAEGER_BINARY);
  if ((missing.length > 0 || schemaMissing || serverStale || jaegerMissing) && !haveGo()) {
    const what = [
      ...(serverStale ? ['temporal-server-authz (deploy/temporal/server)'] : []),
      ...missing.map((p) => p.name),
      ...(jaegerMissing ? ['jaeger'] : []),
      ...(schemaMissing ? ['the PostgreSQL schemas'] : []),
    ];
    throw new Error(
      `missing ${what.join(', ')} and no Go toolchain: ` +
        'install Go 1.26 (https://go.dev/dl/) and run `node scripts/prod-binaries.js`',
    );
  }
  fs.mkdirSync(BIN, { recursive: true });
  const goEnvironment = {
    ...process.env,
    GOTOOLCHAIN: 'local',
    GOFLAGS: `${process.env.GOFLAGS ?? ''} -buildvcs=false`.trim(),
  };
  if (serverStale) {
    log('building temporal-server-authz: go build in deploy/temporal/server (the first build takes a few minutes)');
    const started = Date.now();
    const partial = `${SERVER_BINARY}.${process.pid}.tmp`;
    try {
      execFileSync('go', ['build', '-o', partial, '.'], {
        cwd: SERVER_SOURCE,
        stdio: ['ignore', 'inherit', 'inherit'],
        env: goEnvironment,
      });
      fs.renameSync(partial, SERVER_BINARY);
    } finally {
      fs.rmSync(partial, { force: true });
    }
    fs.writeFileSync(`${SERVER_BINARY}.sources`, `${sourceHash}\n`);
    log(`built temporal-server-authz in ${Math.round((Date.now() - started) / 1000)} s`);
  }
  for (const program of missing) {
    const gobin = path.join(DIR, `build-${program.name}`);
    fs.rmSync(gobin, { recursive: true, force: true });
    fs.mkdirSync(gobin, { recursive: true });
    log(`building ${program.name}: go install ${program.pkg} (the first build takes a few minutes)`);
    const started = Date.now();
    execFileSync('go', ['install', program.pkg], {
      stdio: ['ignore', 'inherit', 'inherit'],
      env: { ...goEnvironment, GOBIN: gobin },
    });
    const built = fs.readdirSync(gobin);
    if (built.length !== 1) throw new Error(`go install ${program.pkg} left ${built.length} files in ${gobin}`);
    fs.renameSync(path.join(gobin, built[0]), paths[program.name]);
    fs.rmSync(gobin, { recursive: true, force: true });
    log(`built ${program.name} in ${Math.round((Date.now() - started) / 1000)} s`);
  }
  if (jaegerMissing) buildJaeger(goEnvironment, log);
  if (schemaMissing) {
    execFileSync('go', ['mod', 'download', `go.temporal.io/server@${TEMPORAL_VERSION}`], {
      stdio: 'inherit',
      cwd: DIR,
    });
    const moduleDir = path.join(goEnv('GOMODCACHE'), `go.temporal.io/server@${TEMPORAL_VERSION}`);
    fs.mkdirSync(path.dirname(SCHEMA_DIR), { recursive: true });
    fs.cpSync(path.join(moduleDir, 'schema', 'postgresql', 'v12'), SCHEMA_DIR, { recursive: true });
    // The module cache is read-only; the copy need not be.
    execFileSync('chmod', ['-R', 'u+w', path.dirname(SCHEMA_DIR)]);
    log(`PostgreSQL schemas of the Temporal server ${TEMPORAL_VERSION}: ${SCHEMA_DIR}`);
  }
  return { 'temporal-server': SERVER_BINARY, ...paths, jaeger: JAEGER_BINARY, schemaDir: SCHEMA_DIR };
}

/** Jaeger in an empty module of its own (`go get -tool`, then `go build`), renamed into place when whole. */
function buildJaeger(goEnvironment, log) {
  const moduleDir = path.join(DIR, 'build-jaeger');
  fs.rmSync(moduleDir, { recursive: true, force: true });
  fs.mkdirSync(moduleDir, { recursive: true });
  log(`building jaeger: go get -tool ${JAEGER_PKG}@${JAEGER_VERSION} (the first build takes about 10 minutes)`);
  const started = Date.now();
  const go = (args) =>
    execFileSync('go', args, { cwd: moduleDir, stdio: ['ignore', 'inherit', 'inherit'], env: goEnvironment });
  const partial = `${JAEGER_BINARY}.${process.pid}.tmp`;
  try {
    go(['mod', 'init', 'jaegerbuild']);
    go(['get', '-tool', `${JAEGER_PKG}@${JAEGER_VERSION}`]);
    go(['build', '-o', partial, JAEGER_PKG]);
    fs.renameSync(partial, JAEGER_BINARY);
  } finally {
    fs.rmSync(partial, { force: true });
    fs.rmSync(moduleDir, { recursive: true, force: true });
  }
  log(`built jaeger in ${Math.round((Date.now() - started) / 1000)} s`);
}

module.exports = { ensureProdBinaries, TEMPORAL_VERSION, UI_VERSION, JAEGER_VERSION, SCHEMA_DIR, BIN, SERVER_SOURCE };

if (require.main === module) {
  try {
    const result = ensureProdBinaries();
    for (const [name, file] of Object.entries(result)) console.log(`${name}: ${file}`);
  } catch (err) {
    console.error(err.message);
    process.exit(1);
  }
}
