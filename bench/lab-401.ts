/**
 * `node -r ./scripts/swc-register.js bench/lab-401.ts [seconds per turn] [turns]`: the service's own CPU per
 * refused delivery (a wrong HMAC signature), without the network. Not part of `npm run bench`; a
 * lab for docs/performance.md#labs.
 *
 * The real app (as bench/stack.ts's `startApi` builds it, no workflow engine) answers requests
 * made in this process: an `IncomingMessage` whose 1 KB body has arrived, handed to the app's
 * request listener with a response that only keeps what is written. So the figure is the
 * receiver's own work per 401 (the fast path, the checks, the answer, the metrics and the delivery
 * log), without sockets, HTTP parsing or the load generator, which the bench's rejection figure
 * also holds. Beside it, the floor's handler (bench/webhooks.ts) on the same requests: the body
 * read, the HMAC checked, the same answer written, through Koa.
 * 32 requests in flight; CPU µs per request of this process, rounds taking turns.
 */
import { IncomingMessage, ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import { randomBytes } from 'node:crypto';
import { createBenchAutomation } from './automation';
import Koa from 'koa';
import { openStore, startApi } from './stack';
import { runToExit } from './util';
import { AccessTokens } from '../src/auth/tokens';
import { createClient } from '../src/auth/clients';
import { createApp } from '../src/http/app';
import { SecretBox } from '../src/crypto/secret-box';
import { hmacEvent } from '../test/helpers/signing';
import { hmacFloorHandler } from './webhooks';

const log = (line: string): void => void process.stderr.write(`[lab] ${line}\n`);

type Listener = (req: IncomingMessage, res: ServerResponse) => void;
interface Answer {
  status: number;
  /** The headers given to `writeHead` (the app's fast path gives them all there). */
  headers: Record<string, string>;
  body: string;
}

/** A request whose headers and whole body have arrived, as Node's parser hands a small POST over. */
function arrived(
  path: string,
  headers: Record<string, string>,
  body: Buffer,
): { req: IncomingMessage; res: ServerResponse; done: Promise<Answer> } {
  const socket = new Socket();
  Object.defineProperty(socket, 'remoteAddress', { value: '127.0.0.1' });
  const req = new IncomingMessage(socket);
  req.method = 'POST';
  req.url = path;
  req.headers = {
    ...Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value])),
    'content-length': String(body.length),
    host: '127.0.0.1',
  };
  req.push(body);
  req.push(null);
  req.complete = true;
  const res = new ServerResponse(req);
  let finish: (answer: Answer) => void = () => undefined;
  const done = new Promise<Answer>((resolve) => (finish = resolve));
  // No socket: what is written is dropped; the answer's status, headers and body are kept.
  let written: Record<string, string> = {};
  res.writeHead = function writeHead(this: ServerResponse, status: number, headers?: Record<string, string>) {
    this.statusCode = status;
    written = headers ?? {};
    return this;
  } as ServerResponse['writeHead'];
  res.end = function end(this: ServerResponse, chunk?: unknown) {
    finish({ status: this.statusCode, headers: written, body: String(chunk) });
    return this;
  } as ServerResponse['end'];
  return { req, res, done };
}

async function drive(
  listener: Listener,
  path: string,
  body: string,
  seconds: number,
): Promise<{ count: number; cpuUs: number; statuses: Record<number, number> }> {
  const bytes = Buffer.from(body);
  const statuses: Record<number, number> = {};
  let count = 0;
  const end = performance.now() + seconds * 1000;
  const cpu0 = process.cpuUsage();
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (performance.now() < end) {
        const { headers } = hmacEvent('not-the-signing-secret', undefined, { body });
        const { req, res, done } = arrived(path, headers, bytes);
        listener(req, res);
        const { status } = await done;
        statuses[status] = (statuses[status] ?? 0) + 1;
        count += 1;
      }
    }),
  );
  const cpu = process.cpuUsage(cpu0);
  return { count, cpuUs: (cpu.user + cpu.system) / count, statuses };
}

async function main(): Promise<void> {
  const seconds = Number(process.argv[2] ?? 0.5);
  const rounds = Number(process.argv[3] ?? 20);
  const stops: Array<() => Promise<void>> = [];
  const db = await openStore(undefined);
  try {
    const secretBox = new SecretBox(randomBytes(32));
    const tokens = await AccessTokens.load(db, secretBox, 3600);
    const api = await startApi({ db, tokens, pageTokenKey: randomBytes(32), secretBox }, stops);
    const admin = await tokens.issue(
      (await createClient(db, secretBox, { displayName: 'lab', roles: ['super_admin'] })).client.clientId,
      ['super_admin'],
    );
    const automation = await createBenchAutomation(api.url, admin, { withOwnership: false });
    const app = createApp(api.deps).callback() as Listener;
    // The service's answer to a wrong signature, which the floor sends too.
    const probe = arrived(
      automation.listenerPath,
      hmacEvent('not-the-signing-secret', undefined, { body: automation.body }).headers,
      Buffer.from(automation.body),
    );
    app(probe.req, probe.res);
    const refusal = await probe.done;
    if (refusal.status !== 401) throw new Error(`a wrong signature was answered ${refusal.status}: ${refusal.body}`);
    // The floor's handler, as bench/webhooks.ts serves it, on a Koa app of its own, sending the app's answer.
    const { 'Content-Length': _length, ...refusalHeaders } = refusal.headers;
    const floorApp = new Koa();
    floorApp.use(
      hmacFloorHandler(automation.signingSecret, {
        status: refusal.status,
        headers: refusalHeaders,
        body: refusal.body,
      }),
    );
    const floor = floorApp.callback() as Listener;
    const sides: Record<string, Listener> = { api: app, floor };
    for (const [name, listener] of Object.entries(sides))
      await drive(listener, automation.listenerPath, automation.body, 2).then((r) =>
        log(`warm-up ${name}: ${JSON.stringify(r.statuses)}`),
      );
    // Short turns: the machine's speed drifts over seconds, and both sides see the same drift.
    const totals: Record<string, { cpuUs: number; count: number }> = {};
    for (let round = 1; round <= rounds; round++) {
      const names = Object.keys(sides);
      for (const name of round % 2 ? names : names.reverse()) {
        const result = await drive(sides[name]!, automation.listenerPath, automation.body, seconds);
        const total = (totals[name] ??= { cpuUs: 0, count: 0 });
        total.cpuUs += result.cpuUs * result.count;
        total.count += result.count;
      }
    }
    for (const [name, total] of Object.entries(totals))
      log(`${name}: ${(total.cpuUs / total.count).toFixed(2)} µs CPU/request over ${total.count} requests`);
  } finally {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    await db.close();
  }
}

runToExit(main);
