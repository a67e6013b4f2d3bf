/**
 * Builds the production workflow bundle (bundleWorkflowCode) so workers start without compiling
 * workflow code: `tsx scripts/bundle-workflows.ts [out]` (default dist/workflow-bundle.js), then run
 * workers with WORKFLOW_BUNDLE=<out>.
 */
import fs from 'node:fs';
import path from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import { automationBundleOptions } from '../src/temporal/worker';

async function main(): Promise<void> {
  const out = path.resolve(process.argv[2] ?? 'dist/workflow-bundle.js');
  const { code } = await bundleWorkflowCode(automationBundleOptions());
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.writeFileSync(out, code);
  console.log(`workflow bundle: ${out} (${Math.round(code.length / 1024)} KiB)`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
