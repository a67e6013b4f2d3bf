#!/usr/bin/env node
/**
 * `node scripts/temporal-cli.js [--unless-external]`: finds or installs the pinned Temporal CLI
 * (before the tests, in CI). The code lives in src/temporal/temporal-cli.js, which `npm start`
 * uses too; this file is its command line.
 */
const cli = require('../src/temporal/temporal-cli.js');

module.exports = cli;

if (require.main === module) {
  if (process.env.TEMPORAL_ADDRESS && process.argv.includes('--unless-external')) {
    console.error(`TEMPORAL_ADDRESS is set (${process.env.TEMPORAL_ADDRESS}): not looking for the Temporal CLI.`);
    process.exit(0);
  }
  cli
    .ensureTemporalCli()
    .then((path) => console.error(`Temporal CLI: ${path} (${cli.works(path)?.split('\n')[0] ?? 'unknown version'})`))
    .catch((err) => {
      console.error(err.message);
      process.exit(1);
    });
}
