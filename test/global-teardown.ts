import type { DevServer } from '../src/temporal/devserver';

export default async function globalTeardown(): Promise<void> {
  await (globalThis as { __temporalDevServer?: DevServer }).__temporalDevServer?.stop();
}
