/**
 * TLS ended in front of the production shape's nginx, as a load balancer ends it: a self-signed
 * certificate for `localhost` (made with openssl in the caller's folder) and a node:tls server on
 * a port of its own (bound to 0) that passes each connection's bytes on to a plain TCP port. The
 * upstream need not listen yet: the terminator's address is known first, so the service behind it
 * can be given it as its BASE_URL before it starts. Clients accept the certificate explicitly
 * (Playwright's `ignoreHTTPSErrors`).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import tls from 'node:tls';

export interface TlsTerminator {
  /** https://localhost:<port>: the address people open. */
  url: string;
  port: number;
  close(): Promise<void>;
}

/** Starts the terminator; `dir` receives tls.key and tls.pem (the caller removes it). */
export async function startTlsTerminator(upstreamPort: number, dir: string): Promise<TlsTerminator> {
  const [keyFile, certFile] = [path.join(dir, 'tls.key'), path.join(dir, 'tls.pem')];
  // prettier-ignore
  execFileSync('openssl', [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1',
    '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost', '-keyout', keyFile, '-out', certFile,
  ], { stdio: ['ignore', 'ignore', 'pipe'] });
  const sockets = new Set<net.Socket>();
  const server = tls.createServer({ key: fs.readFileSync(keyFile), cert: fs.readFileSync(certFile) }, (socket) => {
    const upstream = net.connect(upstreamPort, '127.0.0.1');
    for (const s of [socket, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
    }
    socket.pipe(upstream).pipe(socket);
    socket.on('error', () => upstream.destroy());
    upstream.on('error', () => socket.destroy());
  });
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    url: `https://localhost:${port}`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        // Open keep-alive connections would hold close() until the browser drops them.
        for (const socket of sockets) socket.destroy();
      }),
  };
}
