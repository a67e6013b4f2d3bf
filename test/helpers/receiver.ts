/**
 * A local HTTP receiver standing in for the target of outbound calls (callWebhook, notify): it
 * records every request in arrival order and answers what `respond` says (default 200 `{"ok":true}`).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedRequest {
  method: string;
  /** The request target as sent (path and query). */
  path: string;
  /** Single-valued headers, names in lower case. */
  headers: Record<string, string>;
  body: Buffer;
}

export interface Answer {
  status: number;
  body?: unknown;
}

export interface Receiver {
  /** `http://127.0.0.1:<port>` */
  origin: string;
  received: ReceivedRequest[];
  close(): Promise<void>;
}

export async function startReceiver(
  respond: (request: ReceivedRequest) => Answer = () => ({ status: 200 }),
): Promise<Receiver> {
  const received: ReceivedRequest[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(req.headers)) if (typeof value === 'string') headers[name] = value;
      const request: ReceivedRequest = {
        method: req.method ?? '',
        path: req.url ?? '',
        headers,
        body: Buffer.concat(chunks),
      };
      received.push(request);
      const answer = respond(request);
      res.writeHead(answer.status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(answer.body ?? { ok: answer.status < 300 }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
