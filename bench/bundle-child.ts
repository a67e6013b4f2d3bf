/**
 * Workflow bundles for the benchmark's workers, built by a short-lived child process as
 * `npm start` and production workers have them (prebuilt): webpack's few hundred MB leave with the
 * child instead of counting in the API + workers figures. `bundleInChild({ workflowsPath, preloadModules })`.
 */
import { fork } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';

export async function bundleInChild({
  workflowsPath,
  preloadModules = [],
}: {
  workflowsPath: string;
  preloadModules?: string[];
}): Promise<{ code: string }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-bundle-'));
  const out = path.join(dir, 'bundle.js');
  try {
    await new Promise<void>((resolve, reject) => {
      const child = fork(__filename, [workflowsPath, out, ...preloadModules], {
        execArgv: process.execArgv,
        stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
      });
      child.once('error', reject);
      child.once('exit', (code) =>
        code === 0 ? resolve() : reject(new Error(`bundling ${workflowsPath} failed (${code})`)),
      );
    });
    return { code: fs.readFileSync(out, 'utf8') };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

if (require.main === module) {
  const [workflowsPath, out, ...preloadModules] = process.argv.slice(2);
  bundleWorkflowCode({
    workflowsPath: workflowsPath!,
    preloadModules,
    logger: { info() {}, warn() {}, error() {}, debug() {}, trace() {}, log() {} },
  })
    .then(({ code }) => fs.writeFileSync(out!, code))
    .then(
      () => process.exit(0),
      (err: unknown) => {
        console.error(err);
        process.exit(1);
      },
    );
}
