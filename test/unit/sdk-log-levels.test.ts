/**
 * src/temporal/sdk-log-levels.ts: the SDK's composing logger builds no metadata for a line its
 * DefaultLogger would drop, and logs every other line as before, metadata included.
 */
import { LoggerWithComposedMetadata } from '@temporalio/common/lib/logger';
import { DefaultLogger, type LogEntry, type Logger } from '@temporalio/worker';
import { skipDroppedSdkLogMetadata } from '../../src/temporal/sdk-log-levels';

skipDroppedSdkLogMetadata();

/** A composing logger over `parent` whose metadata function counts how often it is asked. */
function composed(parent: Logger): { logger: Logger; built: () => number } {
  let built = 0;
  const logger = LoggerWithComposedMetadata.compose(
    LoggerWithComposedMetadata.compose(parent, { sdkComponent: 'worker', taskQueue: 'q' }),
    () => {
      built += 1;
      return { runId: 'run-1' };
    },
  );
  return { logger, built: () => built };
}

const lines = (entries: LogEntry[]) => entries.map(({ level, message, meta }) => ({ level, message, meta }));

describe('the SDK log lines a DefaultLogger drops', () => {
  it('build no metadata below the level; at and above it are logged with all their metadata', () => {
    const entries: LogEntry[] = [];
    const { logger, built } = composed(new DefaultLogger('WARN', (entry) => entries.push(entry)));
    logger.trace('Got workflow activation', { big: 'x' });
    logger.debug('Activity started');
    logger.info('Worker state changed');
    logger.log('DEBUG', 'by level');
    expect(built()).toBe(0);
    expect(entries).toEqual([]);

    logger.warn('slow', { ms: 5 });
    logger.log('ERROR', 'failed');
    logger.error('stuck');
    expect(built()).toBe(3);
    expect(lines(entries)).toEqual([
      { level: 'WARN', message: 'slow', meta: { sdkComponent: 'worker', taskQueue: 'q', runId: 'run-1', ms: 5 } },
      { level: 'ERROR', message: 'failed', meta: { sdkComponent: 'worker', taskQueue: 'q', runId: 'run-1' } },
      { level: 'ERROR', message: 'stuck', meta: { sdkComponent: 'worker', taskQueue: 'q', runId: 'run-1' } },
    ]);
  });

  it('a DefaultLogger at TRACE gets every line with its metadata', () => {
    const entries: LogEntry[] = [];
    const { logger, built } = composed(new DefaultLogger('TRACE', (entry) => entries.push(entry)));
    logger.trace('Got workflow activation');
    logger.debug('Activity started', { attempt: 1 });
    expect(built()).toBe(2);
    expect(lines(entries)).toEqual([
      {
        level: 'TRACE',
        message: 'Got workflow activation',
        meta: { sdkComponent: 'worker', taskQueue: 'q', runId: 'run-1' },
      },
      {
        level: 'DEBUG',
        message: 'Activity started',
        meta: { sdkComponent: 'worker', taskQueue: 'q', runId: 'run-1', attempt: 1 },
      },
    ]);
  });

  it('any other logger gets every line composed, as the SDK does', () => {
    const seen: Array<[string, string, unknown]> = [];
    const record =
      (level: string) =>
      (message: string, meta?: unknown): void =>
        void seen.push([level, message, meta]);
    const other: Logger = {
      log: (level, message, meta) => seen.push([level, message, meta]),
      trace: record('TRACE'),
      debug: record('DEBUG'),
      info: record('INFO'),
      warn: record('WARN'),
      error: record('ERROR'),
    };
    const { logger, built } = composed(other);
    logger.trace('t');
    logger.debug('d');
    expect(built()).toBe(2);
    expect(seen).toEqual([
      ['TRACE', 't', { sdkComponent: 'worker', taskQueue: 'q', runId: 'run-1' }],
      ['DEBUG', 'd', { sdkComponent: 'worker', taskQueue: 'q', runId: 'run-1' }],
    ]);
  });
});
