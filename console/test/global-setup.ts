/**
 * After the servers are up (Playwright starts them before global set-up): on a fresh clone `npm
 * start` builds the console while the service starts, so /console answers 503 until the build is
 * in place. The tests begin once it answers 200.
 */
import { BASE_URL } from '../playwright.config';

export default async function waitForTheConsole(): Promise<void> {
  const deadline = Date.now() + 300_000;
  for (;;) {
    const status = (await fetch(`${BASE_URL}/console`).catch(() => undefined))?.status;
    if (status === 200) return;
    if (Date.now() > deadline)
      throw new Error(`${BASE_URL}/console answered ${status ?? 'nothing'} for 300 s: the console was not built`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}
