import fs from 'node:fs';
import type { DevServer } from '../src/temporal/devserver';

export default async function globalTeardown(): Promise<void> {
  const state = globalThis as { __temporalDevServer?: DevServer; __testArtifactsDir?: string };
  await state.__temporalDevServer?.stop();
  if (state.__testArtifactsDir) fs.rmSync(state.__testArtifactsDir, { recursive: true, force: true });
  // The run's last line: the PostgreSQL cases skipped for want of DATABASE_URL (test/reporters/postgres-skips.js).
  if (process.env.TEST_POSTGRES_SKIPS_LINE) process.stderr.write(process.env.TEST_POSTGRES_SKIPS_LINE);
}
