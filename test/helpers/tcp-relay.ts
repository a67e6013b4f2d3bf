/**
 * A TCP relay on a port of its own (bound to port 0 and held for the relay's lifetime), forwarding
 * each connection to a target that can change. Tests put it between the app and a server they
 * stop, cut or replace (Temporal, PostgreSQL), so the app keeps one address throughout and no other
 * process can take that port in between, which a "free port" found in advance cannot promise.
 */
import net from 'node:net';

export interface TcpTarget {
  host: string;
  port: number;
}

export interface TcpRelay {
  /** `127.0.0.1:<port>` of the relay. */
  address: string;
  port: number;
  /** New connections go to `target` from now on; `undefined`: they are reset at once (a dead server). */
  setTarget(target: TcpTarget | undefined): void;
  /** Destroys every open connection through the relay (the relay keeps listening). */
  cut(): void;
  close(): Promise<void>;
}

export async function startTcpRelay(initial: TcpTarget | undefined): Promise<TcpRelay> {
  let target = initial;
  const sockets = new Set<net.Socket>();
  const track = (socket: net.Socket): void => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
  };
  const server = net.createServer((client) => {
    if (target === undefined) {
      client.resetAndDestroy();
      return;
    }
    const upstream = net.connect(target);
    track(client);
    track(upstream);
    // Either side gone: the other goes too (a refused upstream resets the client's connection).
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  const cut = (): void => {
    for (const socket of sockets) socket.destroy();
  };
  return {
    address: `127.0.0.1:${port}`,
    port,
    setTarget(next) {
      target = next;
    },
    cut,
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      cut();
      await closed;
    },
  };
}
