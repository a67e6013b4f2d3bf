import fs from 'node:fs';
import type { DevServer } from '../src/temporal/devserver';

export default async function globalTeardown(): Promise<void> {
  const state = globalThis as { __temporalDevServer?: DevServer; __testArtifactsDir?: string };
  await state.__temporalDevServer?.stop();
  if (state.__testArtifactsDir) fs.rmSync(state.__testArtifactsDir, { recursive: true, force: true });
}
