/**
 * The idle memory trimmer (src/memory-trim.ts): when it trims (idle and grown since the last trim,
 * once more one follow-up later), when it does not (busy, not grown, a trim still running), that
 * MEMORY_TRIM turns it off, and glibc's real malloc_trim called through koffi off the event loop.
 */
import { loadConfig } from '../../src/config';
import { ConfigError } from '../../src/errors';
import { MemoryTrimmer, TRIM_DEFAULTS, loadMallocTrim, processProbe, type TrimProbe } from '../../src/memory-trim';

const MB = 1024 * 1024;

/** A probe whose readings the test sets; its trim counts calls and resolves when the test says. */
class SetProbe implements TrimProbe {
  rssBytes = 300 * MB;
  load = 0;
  clock = 0;
  calls = 0;
  /** The resident set a trim leaves. */
  afterTrimBytes = 250 * MB;
  private pending: Array<() => void> = [];
  holdTrims = false;

  trim(): Promise<boolean> {
    this.calls += 1;
    return new Promise((resolve) => {
      const finish = (): void => {
        this.rssBytes = this.afterTrimBytes;
        resolve(true);
      };
      if (this.holdTrims) this.pending.push(finish);
      else finish();
    });
  }

  release(): void {
    for (const finish of this.pending.splice(0)) finish();
  }

  rss(): number {
    return this.rssBytes;
  }

  utilization(): number {
    return this.load;
  }

  now(): number {
    return this.clock;
  }
}

describe('the idle memory trimmer', () => {
  it('trims at its first idle look, then only once the resident set has grown by the minimum', async () => {
    const probe = new SetProbe();
    const reports: Array<{ rssBeforeBytes: number; rssAfterBytes: number }> = [];
    const trimmer = new MemoryTrimmer(probe, TRIM_DEFAULTS, (report) => reports.push(report));
    expect(await trimmer.check()).toBe('trimmed');
    expect(reports).toEqual([
      expect.objectContaining({ rssBeforeBytes: 300 * MB, rssAfterBytes: 250 * MB, released: true }),
    ]);
    // Grown by less than the minimum (8 MB), long after the follow-up: nothing.
    probe.clock = 60_000;
    await trimmer.check(); // the follow-up of the first trim
    probe.rssBytes = 250 * MB + TRIM_DEFAULTS.minGrowthBytes - 1;
    expect(await trimmer.check()).toBe('unchanged');
    probe.rssBytes = 250 * MB + TRIM_DEFAULTS.minGrowthBytes;
    probe.afterTrimBytes = 240 * MB;
    expect(await trimmer.check()).toBe('trimmed');
    expect(probe.calls).toBe(3);
  });

  it('never trims while the event loop is busy, however much the process grew', async () => {
    const probe = new SetProbe();
    const trimmer = new MemoryTrimmer(probe);
    probe.load = TRIM_DEFAULTS.idleUtilization + 0.01;
    probe.rssBytes = 900 * MB;
    expect(await trimmer.check()).toBe('busy');
    expect(probe.calls).toBe(0);
    probe.load = TRIM_DEFAULTS.idleUtilization;
    expect(await trimmer.check()).toBe('trimmed');
    expect(probe.calls).toBe(1);
  });

  it('trims once more one follow-up after a trim that growth asked for, then waits for growth again', async () => {
    const probe = new SetProbe();
    const trimmer = new MemoryTrimmer(probe);
    expect(await trimmer.check()).toBe('trimmed'); // at 0: the follow-up is due at 10 s
    probe.clock = TRIM_DEFAULTS.followUpMs - 1;
    expect(await trimmer.check()).toBe('unchanged');
    // Memory freed after the trim does not show in the resident set: the follow-up trims anyway.
    probe.clock = TRIM_DEFAULTS.followUpMs;
    probe.afterTrimBytes = 230 * MB;
    expect(await trimmer.check()).toBe('trimmed');
    expect(probe.rssBytes).toBe(230 * MB);
    // A follow-up has no follow-up of its own.
    probe.clock = 10 * TRIM_DEFAULTS.followUpMs;
    expect(await trimmer.check()).toBe('unchanged');
    expect(probe.calls).toBe(2);
  });

  it('a look while a trim is running does not call it again', async () => {
    const probe = new SetProbe();
    probe.holdTrims = true;
    const trimmer = new MemoryTrimmer(probe);
    const first = trimmer.check();
    probe.rssBytes = 800 * MB;
    expect(await trimmer.check()).toBe('in-flight');
    probe.release();
    expect(await first).toBe('trimmed');
    expect(probe.calls).toBe(1);
    expect(trimmer.trims).toBe(1);
  });

  it('a failing call rejects the look and leaves no trim marked as running', async () => {
    const probe = new SetProbe();
    let fail = true;
    const trimmer = new MemoryTrimmer({
      ...probe,
      rss: () => probe.rss(),
      utilization: () => 0,
      now: () => 0,
      trim: () => (fail ? Promise.reject(new Error('no malloc_trim')) : probe.trim()),
    });
    await expect(trimmer.check()).rejects.toThrow('no malloc_trim');
    fail = false;
    expect(await trimmer.check()).toBe('trimmed');
  });

  it('MEMORY_TRIM is on unless set to false, and refuses what is not a boolean', () => {
    expect(loadConfig({}).memoryTrim).toBe(true);
    expect(loadConfig({ MEMORY_TRIM: '' }).memoryTrim).toBe(true);
    expect(loadConfig({ MEMORY_TRIM: 'false' }).memoryTrim).toBe(false);
    expect(loadConfig({ MEMORY_TRIM: 'true' }).memoryTrim).toBe(true);
    expect(() => loadConfig({ MEMORY_TRIM: 'sometimes' })).toThrow(ConfigError);
    expect(() => loadConfig({ MEMORY_TRIM: 'sometimes' })).toThrow(/MEMORY_TRIM/);
  });
});

const glibcLinux =
  process.platform === 'linux' &&
  Boolean((process.report.getReport() as { header?: { glibcVersionRuntime?: string } }).header?.glibcVersionRuntime);

describe('glibc malloc_trim through koffi', () => {
  (glibcLinux ? it : it.skip)(
    `is available on Linux with glibc, runs off the event loop and trims this process${glibcLinux ? '' : ' (skipped: needs Linux with glibc)'}`,
    async () => {
      const loaded = loadMallocTrim();
      if ('unavailable' in loaded) throw new Error(`malloc_trim unavailable: ${loaded.unavailable}`);
      // The event loop keeps turning while the call runs on a libuv thread.
      let turned = false;
      const turning = new Promise<void>((resolve) =>
        setImmediate(() => {
          turned = true;
          resolve();
        }),
      );
      const result = loaded.trim();
      await turning;
      expect(turned).toBe(true);
      expect(typeof (await result)).toBe('boolean');
      // The process's own probe: a first idle look trims and reports the resident set around it.
      const reports: Array<{ rssBeforeBytes: number; rssAfterBytes: number }> = [];
      const trimmer = new MemoryTrimmer(processProbe(loaded.trim), { ...TRIM_DEFAULTS, idleUtilization: 1 }, (report) =>
        reports.push(report),
      );
      expect(await trimmer.check()).toBe('trimmed');
      expect(reports).toHaveLength(1);
      expect(reports[0]!.rssBeforeBytes).toBeGreaterThan(10 * MB);
      expect(reports[0]!.rssAfterBytes).toBeGreaterThan(10 * MB);
    },
  );

  it('says why it is unavailable off Linux instead of loading anything', () => {
    const platform = Object.getOwnPropertyDescriptor(process, 'platform')!;
    Object.defineProperty(process, 'platform', { value: 'darwin' });
    try {
      expect(loadMallocTrim()).toEqual({ unavailable: 'not Linux (darwin)' });
    } finally {
      Object.defineProperty(process, 'platform', platform);
    }
  });
});
