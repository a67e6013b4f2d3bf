/**
 * Ports for servers that tests start as child processes (which cannot tell the test a port they
 * bound to 0) and that must come back on the same port after a restart.
 *
 * A "free port" found by binding to 0 and closing lies in the kernel's ephemeral range, so any
 * outgoing connection on this busy machine may take it before the child binds it, or while the
 * child is down. These ports come from below that range (/proc/sys/net/ipv4/ip_local_port_range),
 * which the kernel never hands out by itself: only a process naming that exact port can take it.
 * Every test here binds to 0 or takes its ports from this helper.
 */
import fs from 'node:fs';
import net from 'node:net';
import { startDevServer, type DevServer, type DevServerOptions } from '../../src/temporal/devserver';

const LOWEST = 20_000;

/** First port of the kernel's ephemeral range (32768 when it cannot be read). */
function ephemeralStart(): number {
  try {
    const first = Number(fs.readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(first) && first > LOWEST + 1000 ? first : 32_768;
  } catch {
    return 32_768;
  }
}

function canBind(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen({ port, host: '127.0.0.1', exclusive: true }, () => server.close(() => resolve(true)));
  });
}

/** A port below the ephemeral range that nothing listens on now (see the module comment). */
export async function reservedPort(): Promise<number> {
  const span = ephemeralStart() - LOWEST;
  for (let attempt = 0; attempt < 200; attempt += 1) {
    const port = LOWEST + Math.floor(Math.random() * span);
    if (await canBind(port)) return port;
  }
  throw new Error('no free port below the ephemeral range');
}

/**
 * Starts a Temporal dev server on a reserved port (and a reserved UI port when `ui` is set). Should
 * another process name the same port in the same moment, the start fails and another port is tried.
 */
export async function startTestDevServer(
  options: Omit<DevServerOptions, 'port' | 'uiPort'> & { port?: number; ui?: boolean },
): Promise<DevServer> {
  const { ui, port: fixed, ...rest } = options;
  let lastError: unknown;
  for (let attempt = 0; attempt < 5; attempt += 1) {
    const port = fixed ?? (await reservedPort());
    const uiPort = ui ? await reservedPort() : undefined;
    try {
      return await startDevServer({ ...rest, port, ...(uiPort !== undefined ? { uiPort } : {}) });
    } catch (err) {
      lastError = err;
      if (fixed !== undefined) break;
    }
  }
  throw lastError;
}
