/**
 * Request body reading with the size limit enforced while streaming: a body is never buffered past
 * its limit, whatever `Content-Length` claims; optionally with a deadline for the whole body, so a
 * client that sends part of a body and stalls gets a 408 and loses its connection.
 */
import type { IncomingMessage } from 'node:http';
import type { Context } from 'koa';
import { AppError } from './errors';
import { fieldPath } from '../domain/validation';
import { jsonDepth, MAX_JSON_DEPTH } from '../json';
import type { DataRateWatch } from '../webhooks/admission';
import { invalidArgument } from '../errors';

export const API_BODY_LIMIT = 1024 * 1024;

export interface ReadBodyOptions {
  /** Time allowed for the whole body to arrive; then 408 and the connection is closed. */
  timeoutMs?: number;
  /** A minimum data rate: when the body arrives slower, 408 and the connection is closed. */
  rate?: DataRateWatch;
}

const RATE_CHECK_INTERVAL_MS = 250;

/** A body being read under a deadline or a minimum rate, until it ends or `fail` is called. */
interface WatchedBody {
  /** Epoch ms after which the body is late (408), or undefined. */
  deadlineAt: number | undefined;
  timeoutMs: number | undefined;
  rate: DataRateWatch | undefined;
  fail(message: string): void;
}

/**
 * Every body read under a deadline or a rate is checked by one timer, every RATE_CHECK_INTERVAL_MS
 * while any is pending (so a 408 comes at most that much after the deadline), instead of two
 * timers per request.
 */
const watched = new Set<WatchedBody>();
let sweeper: NodeJS.Timeout | undefined;

function sweepBodies(): void {
  const now = Date.now();
  for (const body of watched) {
    if (body.deadlineAt !== undefined && now >= body.deadlineAt)
      body.fail(`request body not received within ${body.timeoutMs} ms`);
    else if (body.rate?.tooSlow())
      body.fail(`request body arrives slower than ${body.rate.minBytesPerSecond} bytes per second`);
  }
}

function watchBody(body: WatchedBody): void {
  watched.add(body);
  if (!sweeper) {
    sweeper = setInterval(sweepBodies, RATE_CHECK_INTERVAL_MS);
    sweeper.unref();
  }
}

function unwatchBody(body: WatchedBody): void {
  watched.delete(body);
  if (watched.size === 0 && sweeper) {
    clearInterval(sweeper);
    sweeper = undefined;
  }
}

/**
 * Reads the raw body; 413 as soon as more than `limit` bytes have arrived (or are announced), 408
 * when `timeoutMs` is given and the body has not fully arrived within it, or when it arrives slower
 * than `rate` allows.
 */
export function readRawBody(req: IncomingMessage, limit: number, options: ReadBodyOptions = {}): Promise<Buffer> {
  const declared = req.headers['content-length'];
  if (declared && Number(declared) > limit) {
    req.resume();
    return Promise.reject(tooLarge(limit));
  }
  const { timeoutMs, rate } = options;
  const reading = collectBody(req, limit, rate);
  // A body that has fully arrived can be neither late nor slow.
  if ((timeoutMs === undefined && rate === undefined) || req.complete) return reading;
  return new Promise<Buffer>((resolve, reject) => {
    const body: WatchedBody = {
      deadlineAt: timeoutMs === undefined ? undefined : Date.now() + timeoutMs,
      timeoutMs,
      rate,
      fail(message) {
        unwatchBody(body);
        // The pending read ends with an error once the connection is closed after the 408.
        reject(new AppError(408, message, { headers: { Connection: 'close' } }));
      },
    };
    watchBody(body);
    reading.then(
      (value) => {
        unwatchBody(body);
        resolve(value);
      },
      (err: unknown) => {
        unwatchBody(body);
        reject(err);
      },
    );
  });
}

/** What `collectBody` keeps while a body arrives (on the request, under a symbol). */
interface Collecting {
  chunks: Buffer[];
  size: number;
  limit: number;
  rate: DataRateWatch | undefined;
  resolve(body: Buffer): void;
  reject(err: unknown): void;
}

const COLLECTING = Symbol('collecting');
type CollectingRequest = IncomingMessage & { [COLLECTING]?: Collecting };

// The listeners are module functions (`this` is the request), not closures made per request.
function stopCollecting(req: CollectingRequest): Collecting | undefined {
  const state = req[COLLECTING];
  if (!state) return undefined;
  req[COLLECTING] = undefined;
  req.off('data', onBodyData);
  req.off('end', onBodyEnd);
  req.off('error', onBodyError);
  req.off('close', onBodyClose);
  return state;
}

function onBodyData(this: CollectingRequest, chunk: Buffer): void {
  const state = this[COLLECTING];
  if (!state) return;
  state.size += chunk.length;
  state.rate?.add(chunk.length);
  if (state.size > state.limit) {
    stopCollecting(this);
    this.unpipe();
    this.resume();
    state.reject(tooLarge(state.limit));
    return;
  }
  state.chunks.push(chunk);
}

function onBodyEnd(this: CollectingRequest): void {
  const state = stopCollecting(this);
  if (state) state.resolve(state.chunks.length === 1 ? state.chunks[0]! : Buffer.concat(state.chunks, state.size));
}

function onBodyError(this: CollectingRequest, err: Error): void {
  stopCollecting(this)?.reject(err);
}

/** The connection closed before the body ended (the client went away). */
function onBodyClose(this: CollectingRequest): void {
  stopCollecting(this)?.reject(Object.assign(new Error('aborted'), { code: 'ECONNRESET' }));
}

/** The body's chunks as they arrive (stream events: cheaper than an async iterator per request). */
function collectBody(req: CollectingRequest, limit: number, rate?: DataRateWatch): Promise<Buffer> {
  if (req.readableEnded) return Promise.resolve(Buffer.alloc(0));
  return new Promise<Buffer>((resolve, reject) => {
    req[COLLECTING] = { chunks: [], size: 0, limit, rate, resolve, reject };
    req.on('data', onBodyData);
    req.on('end', onBodyEnd);
    req.on('error', onBodyError);
    req.on('close', onBodyClose);
  });
}

function tooLarge(limit: number): AppError {
  return new AppError(413, `request body exceeds ${limit} bytes`, { headers: { Connection: 'close' } });
}

/** Parses a JSON object body (empty body = `{}`); 400 for malformed JSON or a non-object. */
export async function readJsonObject(ctx: Context, limit = API_BODY_LIMIT): Promise<Record<string, unknown>> {
  const raw = await readRawBody(ctx.req, limit);
  if (raw.length === 0) return {};
  let value: unknown;
  const text = raw.toString('utf8');
  try {
    value = JSON.parse(text);
  } catch {
    throw new AppError(400, 'request body is not valid JSON');
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw invalidArgument({ field: '(body)', description: 'must be a JSON object' });
  }
  if (jsonDepth(text) > MAX_JSON_DEPTH) {
    throw invalidArgument({
      field: '(body)',
      description: `must not nest arrays and objects deeper than ${MAX_JSON_DEPTH} levels`,
    });
  }
  const nul = pathOfNul(value);
  if (nul) throw invalidArgument({ field: fieldPath(nul), description: 'must not contain NUL characters (\\u0000)' });
  return value as Record<string, unknown>;
}

/**
 * The path of the first string or key holding a NUL character: the store cannot keep one
 * (PostgreSQL text and jsonb refuse it), so such a body is a 400, never a 500. Iterative, so that
 * a deeply nested body cannot exhaust the stack.
 */
function pathOfNul(root: unknown): PropertyKey[] | undefined {
  interface Node {
    value: unknown;
    key: PropertyKey | undefined;
    parent: Node | undefined;
  }
  const pathTo = (node: Node | undefined, last?: PropertyKey): PropertyKey[] => {
    const path: PropertyKey[] = last === undefined ? [] : [last];
    for (let at = node; at && at.key !== undefined; at = at.parent) path.unshift(at.key);
    return path;
  };
  const stack: Node[] = [{ value: root, key: undefined, parent: undefined }];
  for (let node = stack.pop(); node; node = stack.pop()) {
    const value = node.value;
    if (typeof value === 'string') {
      if (value.includes('\u0000')) return pathTo(node);
    } else if (value !== null && typeof value === 'object') {
      const entries: Array<[PropertyKey, unknown]> = Array.isArray(value)
        ? value.map((item, i) => [i, item])
        : Object.entries(value);
      for (const [key, child] of entries.reverse()) {
        if (typeof key === 'string' && key.includes('\u0000')) return pathTo(node, key.replaceAll('\u0000', '\\u0000'));
        stack.push({ value: child, key, parent: node });
      }
    }
  }
  return undefined;
}
