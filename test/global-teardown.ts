import fs from 'node:fs';
import type { DevServer } from '../src/temporal/devserver';

export default async function globalTeardown(): Promise<void> {
  const state = globalThis as { __temporalDevServer?: DevServer; __testArtifactsDir?: string };
  await state.__temporalDevServer?.stop();
  if (state.__testArtifactsDir) fs.rmSync(state.__testArtifactsDir, { recursive: true, force: true });
  // The run's last line: the skipped cases, counted by reason (test/reporters/skips.js).
  if (process.env.TEST_SKIPS_LINE) process.stderr.write(process.env.TEST_SKIPS_LINE);
}
