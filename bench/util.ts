/** Small helpers of the benchmark: percentiles, a keep-alive HTTP client, process memory. */
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';

/** The p-th percentile (0..100) of a list of numbers, nearest rank; NaN for an empty list. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank]!;
}

export function round(value: number, digits = 2): number {
  if (!Number.isFinite(value)) return value;
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

export interface HttpResponse {
  status: number;
  body: Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });

/** One HTTP request to a loopback URL over a keep-alive agent; the body is parsed as JSON. */
export function request(
  method: string,
  url: string,
  options: { headers?: Record<string, string>; body?: string | Buffer; token?: string } = {},
): Promise<HttpResponse> {
  const target = new URL(url);
  const headers: Record<string, string> = { ...options.headers };
  if (options.token) headers.Authorization = `Bearer ${options.token}`;
  if (options.body !== undefined && headers['Content-Type'] === undefined) headers['Content-Type'] = 'application/json';
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: target.hostname, port: target.port, path: `${target.pathname}${target.search}`, method, headers, agent },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let body: Record<string, unknown> = {};
          try {
            body = text ? (JSON.parse(text) as Record<string, unknown>) : {};
          } catch {
            body = { raw: text };
          }
          resolve({ status: res.statusCode ?? 0, body });
        });
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

export function closeHttpAgent(): void {
  agent.destroy();
}

/** Samples this process's RSS every `intervalMs` until stopped; returns the peak in MB. */
export function startRssSampler(intervalMs = 50): { stop(): number } {
  let peak = process.memoryUsage().rss;
  const timer = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, intervalMs);
  return {
    stop() {
      clearInterval(timer);
      peak = Math.max(peak, process.memoryUsage().rss);
      return peak / (1024 * 1024);
    },
  };
}

/** VmHWM (peak resident set) of a process from /proc, in MB; undefined when unreadable. */
export function peakRssOfPid(pid: number): number | undefined {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const match = /^VmHWM:\s+(\d+)\s+kB/m.exec(status);
    return match ? Number(match[1]) / 1024 : undefined;
  } catch {
    return undefined;
  }
}

/** Pids of every descendant of `root` (from /proc; Linux only). */
export function descendantPids(root: number): number[] {
  let entries: string[];
  try {
    entries = fs.readdirSync('/proc').filter((name) => /^\d+$/.test(name));
  } catch {
    return [];
  }
  const parentOf = new Map<number, number>();
  for (const name of entries) {
    try {
      const stat = fs.readFileSync(`/proc/${name}/stat`, 'utf8');
      // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so split after the last ')'.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      parentOf.set(Number(name), Number(fields[1]));
    } catch {
      /* gone meanwhile */
    }
  }
  const result: number[] = [];
  const frontier = [root];
  while (frontier.length > 0) {
    const parent = frontier.pop()!;
    for (const [pid, ppid] of parentOf) {
      if (ppid === parent) {
        result.push(pid);
        frontier.push(pid);
      }
    }
  }
  return result;
}

export function commandLineOf(pid: number): string[] {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
  } catch {
    return [];
  }
}

/**
 * Starts the V8 CPU profiler in this process (API + workers); `stop(file)` writes a
 * `.cpuprofile` (open it in Chrome DevTools or speedscope). Used by `npm run bench -- --cpu-prof=<dir>`.
 */
export async function startCpuProfile(): Promise<{ stop(file: string): Promise<void> }> {
  const { Session } = await import('node:inspector/promises');
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 200 });
  await session.post('Profiler.start');
  return {
    async stop(file) {
      const { profile } = await session.post('Profiler.stop');
      session.disconnect();
      fs.mkdirSync(path.dirname(file), { recursive: true });
      fs.writeFileSync(file, JSON.stringify(profile));
    },
  };
}

/** Runs a bench entry point to its end: exit 0, or its error's stack through `report` and exit 1. */
export function runToExit(
  main: () => Promise<void>,
  report: (line: string) => void = (line) => console.error(line),
): void {
  main().then(
    () => process.exit(0),
    (err: unknown) => {
      report(`failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
      process.exit(1);
    },
  );
}
