/**
 * readRawBody over a real HTTP server and raw sockets: the deadline and the minimum rate are
 * watched by one shared timer (src/http/body.ts), and each still answers its own 408.
 */
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { readRawBody, type ReadBodyOptions } from '../../src/http/body';
import { AppError } from '../../src/http/errors';
import { DataRateWatch } from '../../src/webhooks/admission';

interface Outcome {
  body?: string;
  status?: number;
  message?: string;
}

/** A server answering each request with what readRawBody made of its body. */
async function serve(
  options: () => ReadBodyOptions,
): Promise<{ port: number; outcomes: Outcome[]; close(): Promise<void> }> {
  const outcomes: Outcome[] = [];
  const server = http.createServer((req, res) => {
    readRawBody(req, 1024, options()).then(
      (body) => {
        outcomes.push({ body: body.toString('utf8') });
        res.end('ok');
      },
      (err: unknown) => {
        const error = err as AppError;
        outcomes.push({ status: error.status, message: error.message });
        res.writeHead(error instanceof AppError ? error.status : 500, error instanceof AppError ? error.headers : {});
        res.end();
      },
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    outcomes,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Sends the head and `sent` bytes of a `length`-byte body, then waits for the server to close. */
function partialRequest(port: number, length: number, sent: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: '127.0.0.1', port }, () => {
      socket.write(`POST / HTTP/1.1\r\nHost: x\r\nContent-Length: ${length}\r\n\r\n${sent}`);
    });
    let answer = '';
    socket.on('data', (chunk: Buffer) => (answer += chunk.toString('latin1')));
    socket.on('close', () => resolve(answer));
    socket.on('error', reject);
  });
}

describe('readRawBody deadlines and rates', () => {
  it.each([
    {
      what: 'a body that stops arriving, no rate set: 408 at the deadline',
      options: (): ReadBodyOptions => ({ timeoutMs: 300 }),
      length: 100,
      sent: 40,
      message: 'request body not received within 300 ms',
    },
    {
      what: 'a body slower than the minimum rate: 408 naming the rate, well before a long deadline',
      options: (): ReadBodyOptions => ({ timeoutMs: 600_000, rate: new DataRateWatch(1_000, 100) }),
      length: 500,
      sent: 10,
      message: 'request body arrives slower than 1000 bytes per second',
    },
  ])('$what, and the connection closes', async ({ options, length, sent, message }) => {
    const server = await serve(options);
    try {
      const answer = await partialRequest(server.port, length, 'x'.repeat(sent));
      expect(answer.startsWith('HTTP/1.1 408')).toBe(true);
      expect(server.outcomes).toEqual([{ status: 408, message }]);
    } finally {
      await server.close();
    }
  });

  it('bodies that arrive in full are read whole under the same watch, many at once', async () => {
    const server = await serve(() => ({ timeoutMs: 10_000, rate: new DataRateWatch(1, 1_000) }));
    try {
      const bodies = Array.from({ length: 20 }, (_, i) => `body-${i}-${'y'.repeat(i * 30)}`);
      const answers = await Promise.all(
        bodies.map(
          (body) =>
            new Promise<number>((resolve, reject) => {
              const req = http.request(
                { host: '127.0.0.1', port: server.port, method: 'POST', path: '/', agent: false },
                (res) => {
                  res.resume();
                  res.on('end', () => resolve(res.statusCode ?? 0));
                },
              );
              req.on('error', reject);
              // Head first, body later: the read is pending (and watched) when the body arrives.
              req.flushHeaders();
              setImmediate(() => req.end(body));
            }),
        ),
      );
      expect(answers).toEqual(bodies.map(() => 200));
      expect(server.outcomes.map((o) => o.body).sort()).toEqual([...bodies].sort());
    } finally {
      await server.close();
    }
  });
});
