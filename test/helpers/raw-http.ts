/**
 * HTTP at the byte level, for attacks a well-behaved client cannot make (lying `Content-Length`,
 * chunked bodies over the limit, bodies that stall), and a small POST client for a server on any
 * port that reports transport failures as values instead of throwing.
 */
import http from 'node:http';
import net from 'node:net';

export interface ParsedResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export interface RawExchange {
  /** Every complete response read from the connection, in order. */
  responses: ParsedResponse[];
  /** True when the server closed the connection before `waitMs` ran out. */
  closedByServer: boolean;
  /** Everything the server sent. */
  raw: string;
}

/** `POST path HTTP/1.1` request head with exactly these headers (plus `Host`). */
export function requestHead(path: string, headers: Record<string, string>): string {
  const lines = [`POST ${path} HTTP/1.1`, 'Host: 127.0.0.1'];
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
  return `${lines.join('\r\n')}\r\n\r\n`;
}

/**
 * Opens a connection to 127.0.0.1:`port`, lets `send` write to it (write errors after the server
 * closed are ignored), and reads until the server closes the connection or `waitMs` passes.
 */
export function rawExchange(
  port: number,
  send: (socket: net.Socket) => void | Promise<void>,
  waitMs: number,
): Promise<RawExchange> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    const chunks: Buffer[] = [];
    let settled = false;
    const finish = (closedByServer: boolean): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      const raw = Buffer.concat(chunks).toString('latin1');
      resolve({ responses: parseResponses(raw), closedByServer, raw });
    };
    const timer = setTimeout(() => finish(false), waitMs);
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('end', () => finish(true));
    socket.on('close', () => finish(true));
    socket.on('error', () => {
      // EPIPE / ECONNRESET once the server has given up on the request: read what arrived.
    });
    socket.once('connect', () => {
      Promise.resolve(send(socket)).catch((err: unknown) => {
        if (!settled) {
          settled = true;
          clearTimeout(timer);
          socket.destroy();
          reject(err instanceof Error ? err : new Error(String(err)));
        }
      });
    });
  });
}

/** Writes `data` unless the socket is gone; resolves when it is flushed (or could not be). */
export function writeQuietly(socket: net.Socket, data: string | Buffer): Promise<void> {
  return new Promise((resolve) => {
    if (socket.destroyed || !socket.writable) {
      resolve();
      return;
    }
    socket.write(data, () => resolve());
  });
}

/** Splits a byte stream of HTTP/1.1 responses (Content-Length or chunked bodies). */
export function parseResponses(raw: string): ParsedResponse[] {
  const out: ParsedResponse[] = [];
  let rest = raw;
  while (rest.startsWith('HTTP/')) {
    const headEnd = rest.indexOf('\r\n\r\n');
    if (headEnd < 0) break;
    const [statusLine = '', ...headerLines] = rest.slice(0, headEnd).split('\r\n');
    const status = Number(statusLine.split(' ')[1]);
    const headers: Record<string, string> = {};
    for (const line of headerLines) {
      const colon = line.indexOf(':');
      if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
    rest = rest.slice(headEnd + 4);
    let body = '';
    if (headers['transfer-encoding']?.toLowerCase() === 'chunked') {
      for (;;) {
        const lineEnd = rest.indexOf('\r\n');
        if (lineEnd < 0) break;
        const size = parseInt(rest.slice(0, lineEnd), 16);
        rest = rest.slice(lineEnd + 2);
        if (!Number.isFinite(size) || size === 0) {
          rest = rest.slice(rest.indexOf('\r\n') + 2);
          break;
        }
        body += rest.slice(0, size);
        rest = rest.slice(size + 2);
      }
    } else {
      const length = Number(headers['content-length'] ?? 0);
      body = rest.slice(0, length);
      rest = rest.slice(length);
    }
    out.push({ status, headers, body: Buffer.from(body, 'latin1').toString('utf8') });
  }
  return out;
}

export type PostOutcome =
  | { kind: 'response'; status: number; headers: http.IncomingHttpHeaders; body: Record<string, unknown> }
  /** No HTTP answer: `code` is the socket error code (ECONNREFUSED, ECONNRESET, TIMEOUT, ...). */
  | { kind: 'error'; code: string };

/** POSTs `body` with exactly `headers` to 127.0.0.1:`port`; never throws. One connection per call. */
export function postOnce(
  port: number,
  path: string,
  headers: Record<string, string>,
  body: string,
  timeoutMs: number,
): Promise<PostOutcome> {
  return new Promise((resolve) => {
    let done = false;
    const settle = (outcome: PostOutcome): void => {
      if (!done) {
        done = true;
        resolve(outcome);
      }
    };
    const req = http.request({ host: '127.0.0.1', port, path, method: 'POST', headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', () => settle({ kind: 'error', code: 'RESPONSE_ABORTED' }));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let parsed: Record<string, unknown>;
        try {
          parsed = text ? (JSON.parse(text) as Record<string, unknown>) : {};
        } catch {
          parsed = { raw: text };
        }
        settle({ kind: 'response', status: res.statusCode ?? 0, headers: res.headers, body: parsed });
      });
    });
    req.setTimeout(timeoutMs, () => {
      settle({ kind: 'error', code: 'TIMEOUT' });
      req.destroy();
    });
    req.on('error', (err: NodeJS.ErrnoException) => settle({ kind: 'error', code: err.code ?? err.message }));
    req.end(body);
  });
}
