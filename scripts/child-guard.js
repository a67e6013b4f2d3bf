#!/usr/bin/env node
/**
 * Runs a command as a child and makes sure it does not outlive a given process: when that process
 * is gone (even killed with SIGKILL), the child is stopped. SIGINT/SIGTERM are passed on.
 * Usage: child-guard.js <owner-pid> <command> [args...]
 */
'use strict';
const { spawn } = require('node:child_process');

const [ownerArg, command, ...args] = process.argv.slice(2);
const owner = Number(ownerArg);
if (!Number.isInteger(owner) || !command) {
  console.error('usage: child-guard.js <owner-pid> <command> [args...]');
  process.exit(2);
}

const child = spawn(command, args, { stdio: 'inherit' });
let stopping = false;
function stop(signal) {
  if (stopping) return;
  stopping = true;
  child.kill(signal);
  setTimeout(() => child.kill('SIGKILL'), 10000).unref();
}
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => stop(signal));
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
child.on('error', (err) => {
  console.error(`child-guard: ${err.message}`);
  process.exit(127);
});
setInterval(() => {
  try {
    process.kill(owner, 0);
  } catch {
    stop('SIGTERM');
  }
}, 1000);
