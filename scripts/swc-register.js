'use strict';
/**
 * `node -r ./scripts/swc-register.js file.ts`: runs TypeScript compiled by swc on first `require`,
 * file by file, with the settings `npm start`'s dist/ is compiled with (scripts/build-dist.js), so
 * that what runs is the JavaScript production runs. `npm run bench` uses it: under tsx (esbuild
 * with `keepNames`) every named function costs a `defineProperty` each time it is created, which
 * production code does not pay (about 7 % more CPU per rejected webhook, measured). Processes
 * forked with `process.execArgv` (the load generator, the bundling child) get the hook too.
 */
const fs = require('node:fs');
const path = require('node:path');
const swc = require('@swc/core');
const { SWC_OPTIONS } = require('./build-dist');

const NODE_MODULES = `${path.sep}node_modules${path.sep}`;

require.extensions['.ts'] = function compileTypeScript(module, filename) {
  if (filename.includes(NODE_MODULES) || filename.endsWith('.d.ts'))
    throw new Error(`swc-register: not compiling ${filename}`);
  // No source maps, as `npm start` runs dist/ (stack traces name the compiled lines, which swc keeps close).
  const { code } = swc.transformSync(fs.readFileSync(filename, 'utf8'), { ...SWC_OPTIONS, filename });
  module._compile(code, filename);
};
