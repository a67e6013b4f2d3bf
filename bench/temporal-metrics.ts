/**
 * The Temporal dev server's own Prometheus metrics, for counting what a phase of a bench asked of
 * it: requests per service and operation (`service_requests`: frontend, history, matching), store
 * operations (`persistence_requests`) and the history service's queue tasks (`task_requests`:
 * transfer, timer, visibility). `temporal server start-dev` always serves `/metrics`, on a random
 * port unless told one: the port is found among the process's listening sockets.
 */
import fs from 'node:fs';
import http from 'node:http';

/** Counter values by series (`name{operation=…,service_name=…}`). */
export type Counters = Map<string, number>;

const COUNTED = new Set(['service_requests', 'persistence_requests', 'task_requests']);

/** TCP ports `pid` listens on (from /proc: its socket inodes, then the kernel's socket tables). */
function listeningPorts(pid: number): number[] {
  const inodes = new Set<string>();
  for (const fd of fs.readdirSync(`/proc/${pid}/fd`)) {
    try {
      const match = /^socket:\[(\d+)\]$/.exec(fs.readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (match) inodes.add(match[1]!);
    } catch {
      // closed meanwhile
    }
  }
  const ports = new Set<number>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = '';
    try {
      text = fs.readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      // local_address is field 1 (hex ip:port), st field 3 (0A = LISTEN), inode field 9.
      if (fields[3] === '0A' && inodes.has(fields[9]!)) ports.add(parseInt(fields[1]!.split(':').pop()!, 16));
    }
  }
  return [...ports];
}

function get(url: string): Promise<string | undefined> {
  return new Promise((resolve) => {
    const req = http.get(url, { timeout: 2000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve(res.statusCode === 200 ? body : undefined));
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(undefined));
  });
}

/** The counters of interest in a Prometheus text exposition, summed over the labels not kept. */
export function parseCounters(text: string): Counters {
  const counters: Counters = new Map();
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!match || !COUNTED.has(match[1]!)) continue;
    const labels = new Map<string, string>();
    for (const label of (match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels.set(label[1]!, label[2]!);
    const key = `${match[1]}{${['service_name', 'operation'].map((name) => labels.get(name) ?? '').join(' ')}}`;
    counters.set(key, (counters.get(key) ?? 0) + Number(match[3]));
  }
  return counters;
}

/** Reads the server's counters; undefined when its metrics endpoint was not found. */
export async function temporalMetrics(pid: number | undefined): Promise<(() => Promise<Counters>) | undefined> {
  if (pid === undefined) return undefined;
  let ports: number[];
  try {
    ports = listeningPorts(pid);
  } catch {
    return undefined;
  }
  for (const port of ports) {
    const url = `http://127.0.0.1:${port}/metrics`;
    const body = await get(url);
    if (body?.includes('service_requests')) {
      return async () => parseCounters((await get(url)) ?? '');
    }
  }
  return undefined;
}

/** b − a, series by series. */
export function delta(a: Counters, b: Counters): Counters {
  const out: Counters = new Map();
  for (const [key, value] of b) {
    const d = value - (a.get(key) ?? 0);
    if (d !== 0) out.set(key, d);
  }
  return out;
}
