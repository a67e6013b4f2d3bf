/**
 * Whose address a request comes from, for TRUST_PROXY = `hops` (a hop count): 0 = the socket's
 * address; N = the N-th `X-Forwarded-For` entry from the right (the address the outermost trusted
 * proxy saw), never an entry the client wrote at the left. Koa's `ctx.ip` follows the same rule
 * with `proxyOptions(hops)`; the webhook receiver, which answers before Koa, uses `clientAddress`.
 */
import type { IncomingMessage } from 'node:http';

/** Koa's proxy settings for TRUST_PROXY = `hops` (`maxIpsCount` keeps only the last `hops` entries). */
export function proxyOptions(hops: number): { proxy: boolean; maxIpsCount: number } {
  return { proxy: hops > 0, maxIpsCount: hops };
}

/** The request's source address under TRUST_PROXY = `hops`, exactly as Koa's `ctx.ip` with `proxyOptions(hops)`. */
export function clientAddress(req: IncomingMessage, hops: number): string {
  const socketAddress = req.socket.remoteAddress ?? '';
  if (hops <= 0) return socketAddress;
  // Node joins repeated X-Forwarded-For headers with ", " (one string).
  const header = req.headers['x-forwarded-for'] as string | undefined;
  if (!header) return socketAddress;
  const entries = header.split(',');
  return entries[Math.max(0, entries.length - hops)]!.trim() || socketAddress;
}
