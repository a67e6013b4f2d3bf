/**
 * Gives the C heap's free pages back to the kernel while the process is idle (Linux with glibc).
 *
 * glibc's malloc keeps what a process frees. Start-up (1,300 modules compiled, the embedded
 * store's first statements, the worker's bundle) and every burst of work leave tens of MB free
 * inside its arenas, below their tops, where its own trimming never reaches: they stay resident
 * for the life of the process. `malloc_trim(0)` walks every arena and hands the free pages inside
 * them back (docs/performance.md#constants measures it: an idle `npm start` holds 35–55 MB less).
 *
 * The trimmer looks every `everyMs` (an unref'd timer, so it never keeps the process alive). It
 * trims only when the main thread was idle since its last look (event-loop utilisation below
 * `idleUtilization`: under load nothing happens, and the pages a trim returns would be faulted
 * back at once) and the resident set has grown by `minGrowthBytes` since the last trim (the first
 * idle look trims what start-up left). What the work before it frees only later (buffers that the
 * next collections release) is not seen in the resident set, so one idle look `followUpMs` after
 * such a trim trims once more. The call runs on a libuv thread (koffi's asynchronous
 * call), so the event loop never waits for it. `malloc_trim` only returns memory already freed:
 * nothing live is touched, and the next allocation is served as before.
 */
import { performance } from 'node:perf_hooks';

/** What one look decided. */
export type TrimOutcome = 'trimmed' | 'busy' | 'unchanged' | 'in-flight';

/** What the trimmer reads and calls; `loadMallocTrim` and the process give the real ones. */
export interface TrimProbe {
  /** malloc_trim(0) off the event loop; resolves true when memory was released. */
  trim(): Promise<boolean>;
  /** The process's resident set, in bytes. */
  rss(): number;
  /** The event loop's utilisation (0–1) since the previous call. */
  utilization(): number;
  /** A monotonic clock, in ms. */
  now(): number;
}

export interface TrimOptions {
  everyMs: number;
  idleUtilization: number;
  minGrowthBytes: number;
  followUpMs: number;
}

export const TRIM_DEFAULTS: TrimOptions = {
  everyMs: 2_000,
  idleUtilization: 0.05,
  minGrowthBytes: 8 * 1024 * 1024,
  followUpMs: 10_000,
};

/** Told about each trim: the resident set before and after, and how long the call took. */
export type TrimReport = (report: {
  rssBeforeBytes: number;
  rssAfterBytes: number;
  released: boolean;
  ms: number;
}) => void;

export class MemoryTrimmer {
  /** The resident set after the last trim; 0 before the first, so that the first idle look trims. */
  private baseline = 0;
  /** When the follow-up of the last trim that growth asked for is due; undefined: none. */
  private followUpAt: number | undefined;
  private running = false;
  private timer: NodeJS.Timeout | undefined;
  /** Trims done since start (a test reads it). */
  trims = 0;

  constructor(
    private readonly probe: TrimProbe,
    private readonly options: TrimOptions = TRIM_DEFAULTS,
    private readonly report: TrimReport = () => undefined,
  ) {}

  /** One look: trims when the loop was idle and the resident set grew; resolves with what it did. */
  async check(): Promise<TrimOutcome> {
    // Read at every look, so that each covers the time since the previous one.
    const utilization = this.probe.utilization();
    if (this.running) return 'in-flight';
    if (utilization > this.options.idleUtilization) return 'busy';
    const before = this.probe.rss();
    const grown = before - this.baseline >= this.options.minGrowthBytes;
    const followUp = !grown && this.followUpAt !== undefined && this.probe.now() >= this.followUpAt;
    if (!grown && !followUp) return 'unchanged';
    this.running = true;
    const started = process.hrtime.bigint();
    try {
      const released = await this.probe.trim();
      const after = this.probe.rss();
      // Whatever it released, this is the level to grow from: a trim that found nothing to return
      // is not repeated until the process has grown again.
      this.baseline = after;
      this.followUpAt = grown ? this.probe.now() + this.options.followUpMs : undefined;
      this.trims += 1;
      this.report({
        rssBeforeBytes: before,
        rssAfterBytes: after,
        released,
        ms: Number(process.hrtime.bigint() - started) / 1e6,
      });
      return 'trimmed';
    } finally {
      this.running = false;
    }
  }

  start(): void {
    if (this.timer) return;
    this.probe.utilization(); // the first look measures from here
    this.timer = setInterval(() => {
      this.check().catch(() => this.stop()); // a failing call is not retried every few seconds
    }, this.options.everyMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }
}

/** koffi's function handle, as far as it is used here. */
interface KoffiFunction {
  async(pad: number, callback: (err: unknown, result: number) => void): void;
}

/**
 * glibc's malloc_trim, called off the event loop, or the reason it is not available: not Linux,
 * no glibc (musl has no malloc_trim), or the optional `koffi` package (a foreign-function
 * interface with prebuilt binaries) not installed for this platform.
 */
export function loadMallocTrim(): { trim: () => Promise<boolean> } | { unavailable: string } {
  if (process.platform !== 'linux') return { unavailable: `not Linux (${process.platform})` };
  let fn: KoffiFunction;
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const koffi = require('koffi') as { load(path: string): { func(signature: string): KoffiFunction } };
    fn = koffi.load('libc.so.6').func('int malloc_trim(size_t pad)');
  } catch (err) {
    return { unavailable: (err as Error).message.split('\n')[0]! };
  }
  return {
    trim: () =>
      new Promise<boolean>((resolve, reject) =>
        fn.async(0, (err, result) => (err ? reject(err as Error) : resolve(result === 1))),
      ),
  };
}

/** The process's probe: its resident set and its event loop's utilisation since the last read. */
export function processProbe(trim: () => Promise<boolean>): TrimProbe {
  let last = performance.eventLoopUtilization();
  return {
    trim,
    rss: () => process.memoryUsage.rss(),
    now: () => performance.now(),
    utilization: () => {
      const now = performance.eventLoopUtilization();
      const since = performance.eventLoopUtilization(now, last);
      last = now;
      return since.utilization;
    },
  };
}

/**
 * Starts trimming this process (its `stop` is returned), or says why it cannot: `log` is told
 * either way, and about each trim.
 */
export function startMemoryTrim(
  log: (message: string, fields: Record<string, unknown>) => void,
): { stop(): void } | undefined {
  const loaded = loadMallocTrim();
  if ('unavailable' in loaded) {
    log('memory trim unavailable', { reason: loaded.unavailable });
    return undefined;
  }
  const mb = (bytes: number): number => Math.round(bytes / 104857.6) / 10;
  const trimmer = new MemoryTrimmer(processProbe(loaded.trim), TRIM_DEFAULTS, (report) =>
    log('memory trimmed', {
      rssBeforeMb: mb(report.rssBeforeBytes),
      rssAfterMb: mb(report.rssAfterBytes),
      released: report.released,
      ms: Math.round(report.ms * 10) / 10,
    }),
  );
  trimmer.start();
  return trimmer;
}
