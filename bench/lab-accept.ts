/**
 * `node -r ./scripts/swc-register.js bench/lab-accept.ts [rounds] [seconds] [sides]`: where the
 * accept path's CPU goes, by process. Not part of `npm run bench`; a lab for docs/performance.md#labs.
 *
 * Sides, at concurrency 32 on the unpolled queue, taking turns round by round:
 *   api        signed webhooks to the real API (the ingress figure's measured side)
 *   bare       32 loops of `client.workflow.start` with the run's input (the ingress baseline)
 *   startAsApi the same loops with the start options the API sends (search attributes, memo,
 *              summary: `runStartOptions`), nothing else of the service
 *   startViaRuns  the same loops through the API's own run engine (`engine.start`: its deadline
 *              and its lazy client), nothing else of the service
 *   httpStart  signed webhooks to the bench's product-shaped floor (bench/webhooks.ts): a bare
 *              Node handler that reads the body, parses it and starts the run as the API does
 *              (`runStartOptions`): HTTP and the start, nothing checked
 *   apiNoEngine   signed webhooks to the real app whose run engine starts nothing (answers at once):
 *              the service's own part of an accepted delivery, without Temporal
 *   httpNoEngine  the same requests to a bare Node handler that reads the body, parses it and
 *              answers 200 with the same JSON: the floor of apiNoEngine
 * For each: requests/s, and CPU per request of this process (all threads, and its main thread
 * alone), of the Temporal server and of the load generator (/proc; Linux only). Medians over rounds.
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { createBenchAutomation } from './automation';
import { LoadGenerator } from './load';
import { installRuntime, startStack, UNPOLLED_QUEUE, type Server, type Stack } from './stack';
import { startHttpStartFloor } from './webhooks';
import { closeHttpAgent, percentile, runToExit, startCpuProfile } from './util';
import { getAutomationByListener } from '../src/store/automations';
import { runStartOptions } from '../src/temporal/engine';
import { NO_TEMPORAL } from '../test/helpers/engine';
import type { AutomationRunInput } from '../src/contract/run';
import { AUTOMATION_WORKFLOW } from '../src/contract/workflows';
import pino from 'pino';
import { composeApp } from '../src/compose';
import { createApp } from '../src/http/app';
import { loadConfig } from '../src/config';
import { createLogger } from '../src/logger';
import { AccessTokens } from '../src/auth/tokens';
import type { AppDeps } from '../src/http/context';
import { SERVICE_HEADERS } from '../src/http/response-headers';

const SIDES = ['api', 'bare', 'startAsApi', 'startViaRuns', 'httpStart', 'apiNoEngine', 'httpNoEngine'] as const;
type Side = (typeof SIDES)[number];

const log = (line: string): void => void process.stderr.write(`[lab] ${line}\n`);

/** utime + stime of a process (or one of its threads), µs. */
function cpuOf(path: string): number {
  try {
    const stat = fs.readFileSync(path, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1e6) / 100;
  } catch {
    return Number.NaN;
  }
}

/** CPU µs of this process's threads, summed by thread name. */
function threadsCpu(): Map<string, number> {
  const byName = new Map<string, number>();
  for (const tid of fs.readdirSync(`/proc/${process.pid}/task`)) {
    try {
      const name =
        tid === String(process.pid) ? 'main' : fs.readFileSync(`/proc/${process.pid}/task/${tid}/comm`, 'utf8').trim();
      byName.set(name, (byName.get(name) ?? 0) + cpuOf(`/proc/${process.pid}/task/${tid}/stat`));
    } catch {
      /* gone meanwhile */
    }
  }
  return byName;
}

interface Sample {
  perSec: number;
  count: number;
  benchUs: number;
  mainUs: number;
  temporalUs: number;
  loadUs: number;
}

async function startLoops(
  client: Client,
  concurrency: number,
  seconds: number,
  start: (client: Client) => Promise<unknown>,
): Promise<number> {
  let count = 0;
  const end = performance.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        await start(client);
        count += 1;
      }
    }),
  );
  return count;
}

async function main(): Promise<void> {
  const rounds = Number(process.argv[2] ?? 3);
  const seconds = Number(process.argv[3] ?? 5);
  const sides = (process.argv[4]?.split(',') ?? [...SIDES]) as Side[];
  installRuntime();
  const stack: Stack = await startStack({ log, databaseUrl: undefined, embeddedStore: 'dataDir' });
  const load = await LoadGenerator.start();
  let httpStartServer: Server | undefined;
  const httpNoEngine = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      JSON.parse(Buffer.concat(chunks).toString('utf8'));
      const eventId = String(req.headers['webhook-event-id']);
      const body = JSON.stringify({ eventId, executionId: `webhook:x:${eventId}` });
      res.writeHead(200, {
        ...SERVICE_HEADERS,
        'Content-Type': 'application/json; charset=utf-8',
        'Content-Length': String(Buffer.byteLength(body)),
      });
      res.end(body);
    });
  });
  const stops: Array<() => Promise<void>> = [];
  try {
    await new Promise<void>((resolve) => httpNoEngine.listen(0, '127.0.0.1', resolve));
    const httpNoEngineUrl = `http://127.0.0.1:${(httpNoEngine.address() as AddressInfo).port}`;
    // The real app as bench/stack.ts builds it, its run engine answering at once (the same store and secret box).
    const noEngineServer = http.createServer();
    await new Promise<void>((resolve) => noEngineServer.listen(0, '127.0.0.1', resolve));
    const noEngineUrl = `http://127.0.0.1:${(noEngineServer.address() as AddressInfo).port}`;
    const config = loadConfig({ PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: process.env.LOG_LEVEL ?? 'info' });
    const deps = await composeApp({
      config,
      db: stack.db,
      logger: createLogger(config.logLevel, pino.destination({ dest: '/dev/null', sync: true })),
      secretBox: stack.secretBox,
      engine: { ...NO_TEMPORAL, start: async () => 'started' as const, ping: async () => undefined },
      pageTokenKey: Buffer.alloc(32, 1),
      tokens: await AccessTokens.load(stack.db, stack.secretBox, 600),
    });
    noEngineServer.on('request', createApp(deps).callback());
    stops.push(async () => {
      noEngineServer.closeAllConnections();
      noEngineServer.close();
      await deps.close();
    });
    const noEngine = { url: noEngineUrl };
    const automation = await createBenchAutomation(stack.e2eApi.url, stack.adminToken);
    const record = (await getAutomationByListener(stack.db, automation.listenerPath.split('/').pop()!))!;
    const inputOf = (eventId: string, trigger: unknown): AutomationRunInput => ({
      automationId: record.id,
      version: record.version,
      listenerId: record.listenerId,
      eventId,
      receivedAt: new Date().toISOString(),
      trigger,
    });
    const trigger = JSON.parse(automation.body) as unknown;
    const display = { automationName: 'bench', summary: 'event' };

    // The bench's own floor of the product's shape (bench/webhooks.ts).
    httpStartServer = await startHttpStartFloor(stack.client, record);
    const httpStartUrl = `${httpStartServer.url}${automation.listenerPath}`;

    const job = {
      connections: 32,
      body: automation.body,
      secret: automation.signingSecret,
      mode: 'valid' as const,
      expectStatus: 200,
    };
    const run = async (side: Side, secs: number): Promise<number> => {
      switch (side) {
        case 'api':
          return (
            await load.run({ ...job, url: `${stack.ingressApi.url}${automation.listenerPath}`, durationSec: secs })
          ).expected;
        case 'httpStart':
          return (await load.run({ ...job, url: httpStartUrl, durationSec: secs })).expected;
        case 'apiNoEngine':
          return (await load.run({ ...job, url: `${noEngine.url}${automation.listenerPath}`, durationSec: secs }))
            .expected;
        case 'httpNoEngine':
          return (await load.run({ ...job, url: `${httpNoEngineUrl}${automation.listenerPath}`, durationSec: secs }))
            .expected;
        case 'bare':
          return startLoops(stack.client, 32, secs, (client) =>
            client.workflow.start(AUTOMATION_WORKFLOW, {
              taskQueue: UNPOLLED_QUEUE,
              workflowId: `bare-start:${randomUUID()}`,
              args: [inputOf(randomUUID(), trigger)],
            }),
          );
        case 'startViaRuns':
          return startLoops(stack.client, 32, secs, () => {
            const eventId = randomUUID();
            return (stack.ingressApi as unknown as { deps: AppDeps }).deps.engine.start({
              runId: `webhook:${record.listenerId}:${eventId}`,
              input: inputOf(eventId, trigger),
              automationName: 'bench',
              summary: `event ${eventId}`,
            });
          });
        case 'startAsApi':
          return startLoops(stack.client, 32, secs, (client) => {
            const eventId = randomUUID();
            return client.workflow.start(
              AUTOMATION_WORKFLOW,
              runStartOptions(UNPOLLED_QUEUE, {
                runId: `webhook:${record.listenerId}:${eventId}`,
                input: inputOf(eventId, trigger),
                ...display,
              }),
            );
          });
      }
    };
    log('warm-up');
    for (const side of sides) await run(side, 2);

    const samples: Record<string, Sample[]> = {};
    for (let round = 0; round < rounds; round++) {
      const order = sides.map((_, i) => sides[(i + round) % sides.length]!);
      for (const side of order) {
        const before = {
          bench: process.cpuUsage(),
          main: cpuOf(`/proc/${process.pid}/task/${process.pid}/stat`),
          temporal: stack.temporalPid ? cpuOf(`/proc/${stack.temporalPid}/stat`) : Number.NaN,
          load: load.pid ? cpuOf(`/proc/${load.pid}/stat`) : Number.NaN,
          at: performance.now(),
          threads: threadsCpu(),
        };
        // LAB_CPU_PROF=<dir>: a CPU profile of this process per side and round.
        const profiler = process.env.LAB_CPU_PROF ? await startCpuProfile() : undefined;
        const count = await run(side, seconds);
        const elapsed = (performance.now() - before.at) / 1000;
        const bench = process.cpuUsage(before.bench);
        const sample: Sample = {
          count,
          perSec: count / elapsed,
          benchUs: (bench.user + bench.system) / count,
          mainUs: (cpuOf(`/proc/${process.pid}/task/${process.pid}/stat`) - before.main) / count,
          temporalUs:
            (stack.temporalPid ? cpuOf(`/proc/${stack.temporalPid}/stat`) - before.temporal : Number.NaN) / count,
          loadUs: (load.pid ? cpuOf(`/proc/${load.pid}/stat`) - before.load : Number.NaN) / count,
        };
        (samples[side] ??= []).push(sample);
        const threads = [...threadsCpu()]
          .map(([name, us]) => [name, (us - (before.threads.get(name) ?? 0)) / count] as const)
          .filter(([, us]) => us >= 10);
        log(`  threads µs/request: ${threads.map(([name, us]) => `${name} ${us.toFixed(0)}`).join(', ')}`);
        await profiler?.stop(`${process.env.LAB_CPU_PROF}/${side}-round${round + 1}.cpuprofile`);
        log(
          `round ${round + 1} ${side.padEnd(10)} ${sample.perSec.toFixed(0).padStart(5)}/s  CPU µs/request: bench ${sample.benchUs.toFixed(0)} (main thread ${sample.mainUs.toFixed(0)}), Temporal ${sample.temporalUs.toFixed(0)}, load generator ${sample.loadUs.toFixed(0)}; load average ${fs.readFileSync('/proc/loadavg', 'utf8').split(' ')[0]}`,
        );
      }
    }
    const median = (values: number[]): number => percentile(values, 50);
    console.log('side        req/s  bench µs  main µs  Temporal µs  loadgen µs  (medians)');
    for (const side of sides) {
      const s = samples[side]!;
      console.log(
        `${side.padEnd(10)} ${median(s.map((x) => x.perSec))
          .toFixed(0)
          .padStart(6)} ${median(s.map((x) => x.benchUs))
          .toFixed(0)
          .padStart(9)} ${median(s.map((x) => x.mainUs))
          .toFixed(0)
          .padStart(8)} ${median(s.map((x) => x.temporalUs))
          .toFixed(0)
          .padStart(12)} ${median(s.map((x) => x.loadUs))
          .toFixed(0)
          .padStart(11)}`,
      );
    }
  } finally {
    for (const stop of stops.reverse()) await stop();
    httpNoEngine.closeAllConnections();
    httpNoEngine.close();
    await httpStartServer?.close();
    await load.close();
    await stack.stop();
    closeHttpAgent();
  }
}

runToExit(main, log);
