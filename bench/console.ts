/**
 * The console on `npm start` (`npm run bench`, section console; `npm run lighthouse` runs only
 * the Lighthouse part): starts the start script with a fresh DATA_DIR (bench/npm-start.ts),
 * makes runs to list (one published automation, signed deliveries), signs in through local
 * sign-in as the client the banner printed, and measures with Debian's Chromium:
 *   runsListMs        median over cold loads (a new browser context each: no cache, no memory of
 *                     the last load) of the `console:runs-list-drawn` mark the Runs page sets once
 *                     the list is drawn with its data, from navigation start
 *   firstPageJsGzKb   the JavaScript that load fetched, as sent (gzipped), in KB
 *   idleRssCostMb     RSS of the whole process group idle after the loads, less the same before
 *                     any console file was asked for (the console's files are read on first use)
 *   lighthouse        Lighthouse's desktop preset on the signed-in runs page, median of N runs of
 *                     the performance and accessibility scores (0–100)
 * Before the runs list endpoint is served, the page draws no list: runsListMs is null, with a note.
 */
import fs from 'node:fs';
import type { Config as LighthouseConfig } from 'lighthouse';
import { chromium } from 'playwright-core';
import { startNpmStart } from './npm-start';
import { descendantPids, round } from './util';
import { hmacEvent } from '../test/helpers/signing';
import { sleep, until } from '../test/helpers/wait';

export interface ConsoleResult {
  runsListMs: number | null;
  loadsMs: number[];
  /** Before the runs list endpoint is served: navigation start → the page drawn with its error, per load. */
  settledMs: number[];
  firstPageJsGzKb: number | null;
  idleRssCostMb: number | null;
  lighthouse: {
    performance: number;
    accessibility: number;
    runs: Array<{ performance: number; accessibility: number }>;
  } | null;
  notes: string[];
}

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const MARK = 'console:runs-list-drawn';

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

function groupRssMb(root: number): number {
  let total = 0;
  for (const pid of [root, ...descendantPids(root)]) {
    try {
      const match = /^VmRSS:\s+(\d+)\s+kB/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
      if (match) total += Number(match[1]) / 1024;
    } catch {
      // gone meanwhile
    }
  }
  return total;
}

async function json(res: Response, what: string): Promise<Record<string, unknown>> {
  if (!res.ok) throw new Error(`${what}: HTTP ${res.status} ${await res.text()}`);
  return (await res.json()) as Record<string, unknown>;
}

/** The group's RSS once settled: the median of 5 samples a second apart, after `settleMs`. */
async function settledRssMb(root: number, settleMs: number): Promise<number> {
  await sleep(settleMs);
  const samples: number[] = [];
  for (let i = 0; i < 5; i++) {
    samples.push(groupRssMb(root));
    await sleep(1_000);
  }
  return median(samples);
}

/** Runs to list: one published automation with a log step, `count` signed deliveries. */
async function makeRuns(api: string, token: string, count: number): Promise<void> {
  const auth = { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' };
  const created = await json(
    await fetch(`${api}/api/v1/automations`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({
        displayName: 'Console bench',
        trigger: { incomingWebhook: { authMethod: 'HMAC' } },
        steps: [{ id: 'hello', log: { message: "'hello ' + ctx.trigger.n" } }],
      }),
    }),
    'create automation',
  );
  const automation = created.automation as { id: string; trigger: { incomingWebhook: { url: string } } };
  await json(
    await fetch(`${api}/api/v1/automations/${encodeURIComponent(automation.id)}/publish`, {
      method: 'POST',
      headers: auth,
    }),
    'publish',
  );
  const listener = new URL(automation.trigger.incomingWebhook.url).pathname;
  for (let n = 0; n < count; n++) {
    const event = hmacEvent(String(created.signingSecret), { n: String(n) });
    const res = await fetch(`${api}${listener}`, { method: 'POST', headers: event.headers, body: event.body });
    if (res.status !== 200) throw new Error(`delivery ${n}: HTTP ${res.status} ${await res.text()}`);
  }
}

/** A console session through local sign-in: the cookie a browser would hold. */
async function signIn(
  api: string,
  credentials: { clientId: string; clientSecret: string },
): Promise<{ name: string; value: string }> {
  const res = await fetch(`${api}/console/auth/local`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Origin: api },
    body: JSON.stringify(credentials),
  });
  await json(res, 'console sign-in');
  const pair = res.headers
    .getSetCookie()
    .map((line) => line.split(';')[0]!)
    .find((p) => p.includes('console_session='));
  if (!pair) throw new Error('console sign-in set no session cookie');
  const at = pair.indexOf('=');
  return { name: pair.slice(0, at), value: pair.slice(at + 1) };
}

/** Lighthouse, desktop preset, on the signed-in runs page: `runs` times, each with a fresh Chromium. */
async function runLighthouse(
  url: string,
  cookie: string,
  runs: number,
  log: (line: string) => void,
): Promise<NonNullable<ConsoleResult['lighthouse']>> {
  // Both are ES modules only.
  const { default: lighthouse } = await import('lighthouse');
  const { default: desktopConfig } = (await import('lighthouse/core/config/desktop-config.js')) as {
    default: LighthouseConfig;
  };
  const { launch } = await import('chrome-launcher');
  const scores: Array<{ performance: number; accessibility: number }> = [];
  // A run that Lighthouse itself could not finish (a runtime error such as NO_NAVSTART: its trace
  // had no navigation) measured nothing: it is logged and run again (up to twice as many retries as
  // runs asked for), rather than counted as a score of 0.
  let retries = 0;
  for (let i = 0; i < runs; i++) {
    const chrome = await launch({
      chromePath: CHROMIUM,
      chromeFlags: ['--headless=new', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
    });
    try {
      const result = await lighthouse(
        url,
        {
          port: chrome.port,
          output: 'json',
          logLevel: 'error',
          extraHeaders: { Cookie: cookie },
          onlyCategories: ['performance', 'accessibility'],
        },
        desktopConfig,
      );
      const runtimeError = result!.lhr.runtimeError;
      if (runtimeError) {
        const again = retries < 2 * runs;
        log(
          `console: Lighthouse run ${i + 1}: ${runtimeError.code} ${runtimeError.message} (${again ? 'Lighthouse measured nothing: run again' : 'no retry left: its scores count as 0'})`,
        );
        if (again) {
          retries += 1;
          i -= 1;
          continue;
        }
      }
      const categories = result!.lhr.categories;
      const score = {
        performance: Math.round((categories.performance!.score ?? 0) * 100),
        accessibility: Math.round((categories.accessibility!.score ?? 0) * 100),
      };
      if (result!.lhr.finalDisplayedUrl !== url)
        throw new Error(`Lighthouse ended on ${result!.lhr.finalDisplayedUrl}, not ${url} (signed out?)`);
      const failed = Object.values(result!.lhr.audits).filter(
        (a) =>
          a.score !== null &&
          a.score < 0.9 &&
          a.scoreDisplayMode !== 'informative' &&
          a.scoreDisplayMode !== 'notApplicable' &&
          a.scoreDisplayMode !== 'manual',
      );
      log(
        `console: Lighthouse run ${i + 1}/${runs}: performance ${score.performance}, accessibility ${score.accessibility}${failed.length ? `; below 0.9: ${failed.map((a) => `${a.id} ${a.displayValue ?? a.score}`).join(', ')}` : ''}`,
      );
      scores.push(score);
    } finally {
      chrome.kill();
    }
  }
  return {
    performance: median(scores.map((s) => s.performance)),
    accessibility: median(scores.map((s) => s.accessibility)),
    runs: scores,
  };
}

/** Measures the console on a fresh `npm start` (see the module comment). */
export async function runConsoleBench(
  options: { loads: number; lighthouseRuns: number; runsListOnly?: boolean; lighthouseOnly?: boolean },
  log: (line: string) => void,
): Promise<ConsoleResult> {
  const service = await startNpmStart('console', {}, log);
  const credentials = { clientId: service.clientId, clientSecret: service.clientSecret };
  const api = `http://localhost:${service.port}`;
  const result: ConsoleResult = {
    runsListMs: null,
    loadsMs: [],
    settledMs: [],
    firstPageJsGzKb: null,
    idleRssCostMb: null,
    lighthouse: null,
    notes: [],
  };
  const browser = await chromium.launch({ executablePath: CHROMIUM });
  try {
    await until(
      async () => {
        if ((await fetch(`${api}/ready`).catch(() => undefined))?.status !== 200) return false;
        // A console never built is built while the service starts: 503 until it is in place.
        return (await fetch(`${api}/console`).catch(() => undefined))?.status === 200;
      },
      'npm start ready, with its console',
      { timeoutMs: 300_000, intervalMs: 200 },
    );
    await makeRuns(api, service.token, 20);
    // Idle before any console file is asked for, then after the loads: what serving the console keeps.
    const rssBefore = await settledRssMb(service.pid, 10_000);
    const session = await signIn(api, credentials);
    const runsUrl = `${api}/console/runs`;
    const served = (
      await fetch(`${api}/console/api/v1/automation_executions?pageSize=1`, {
        headers: { Cookie: `${session.name}=${session.value}` },
      })
    ).status;

    if (!options.lighthouseOnly) {
      for (let i = 0; i < options.loads; i++) {
        const context = await browser.newContext();
        await context.addCookies([{ ...session, url: api }]);
        const page = await context.newPage();
        if (served === 404) {
          // No list to draw: the page drawn with the answer it got (its error), marked in the page
          // when the alert appears (asking from here would add the round trips of the polling).
          await page.addInitScript({
            content: `new MutationObserver((records, observer) => {
              if (!document.querySelector('[role="alert"]')) return;
              performance.mark(${JSON.stringify(`${MARK}-error`)});
              observer.disconnect();
            }).observe(document, { childList: true, subtree: true });`,
          });
        }
        await page.goto(runsUrl);
        if (served === 404) {
          await page.waitForFunction((mark) => performance.getEntriesByName(mark).length > 0, `${MARK}-error`, {
            timeout: 30_000,
          });
          result.settledMs.push(
            await page.evaluate((mark) => performance.getEntriesByName(mark)[0]!.startTime, `${MARK}-error`),
          );
        } else {
          await page.waitForFunction((mark) => performance.getEntriesByName(mark).length > 0, MARK, {
            timeout: 30_000,
          });
          result.loadsMs.push(await page.evaluate((mark) => performance.getEntriesByName(mark)[0]!.startTime, MARK));
        }
        if (i === 0) {
          const js = await page.evaluate(() =>
            performance
              .getEntriesByType('resource')
              .filter((e) => new URL(e.name).pathname.endsWith('.js'))
              .reduce((sum, e) => sum + (e as unknown as { encodedBodySize: number }).encodedBodySize, 0),
          );
          result.firstPageJsGzKb = round(js / 1024, 1);
        }
        await context.close();
      }
      if (served === 404) {
        result.notes.push(
          `console.runsListMs: GET /api/v1/automation_executions is not served by this build, so the Runs page draws no list; the page drawn with its error: median ${median(result.settledMs).toFixed(0)} ms (${result.settledMs.map((ms) => ms.toFixed(0)).join(', ')})`,
        );
      } else result.runsListMs = round(median(result.loadsMs), 0);
      result.idleRssCostMb = round((await settledRssMb(service.pid, 10_000)) - rssBefore, 1);
      log(
        `console: runs list ${result.loadsMs.map((ms) => ms.toFixed(0)).join(', ')} ms; first page JS ${result.firstPageJsGzKb} KB gz; idle RSS ${rssBefore.toFixed(0)} MB + ${result.idleRssCostMb} MB with the console served`,
      );
    }
    if (!options.runsListOnly && options.lighthouseRuns > 0) {
      result.lighthouse = await runLighthouse(runsUrl, `${session.name}=${session.value}`, options.lighthouseRuns, log);
    }
    return result;
  } finally {
    await browser.close();
    await service.stop();
  }
}

if (require.main === module) {
  // `npm run lighthouse [-- runs]`: Lighthouse alone; performance and accessibility must be ≥ 95.
  const runs = Number(process.argv[2] ?? 3);
  const log = (line: string): void => void process.stderr.write(`${line}\n`);
  runConsoleBench({ loads: 0, lighthouseRuns: runs, lighthouseOnly: true }, log).then(
    (r) => {
      console.log(JSON.stringify(r.lighthouse));
      const ok = r.lighthouse !== null && r.lighthouse.performance >= 95 && r.lighthouse.accessibility >= 95;
      if (!ok) console.error('Lighthouse: performance and accessibility must each be ≥ 95 (median)');
      process.exit(ok ? 0 : 1);
    },
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
}
