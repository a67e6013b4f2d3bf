/**
 * The Temporal SDK's loggers compose metadata (the worker's task queue, an activity's or a run's
 * attributes) before they hand a line to the runtime's logger, which only then compares the line's
 * level with its own: every `trace` and `debug` line of the worker's pipeline builds its metadata
 * for a logger at WARN that drops it, several times per run. `skipDroppedSdkLogMetadata` makes the
 * SDK's composing logger ask first: a line whose own logger is a `DefaultLogger` that would drop it
 * is not composed. What is logged is unchanged: lines at or above the level keep their metadata,
 * and a composing logger over any other logger composes everything as before.
 * Reaches `LoggerWithComposedMetadata` (@temporalio/common/lib/logger, internal): its file is pinned
 * by test/unit/temporal-sdk-internals.test.ts.
 */
import { LoggerWithComposedMetadata } from '@temporalio/common/lib/logger';
import { DefaultLogger, type LogLevel, type LogMetadata } from '@temporalio/worker';

const LEVELS: readonly LogLevel[] = ['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR'];
const METHODS = ['trace', 'debug', 'info', 'warn', 'error'] as const;

type Composing = { parentLogger: unknown };
type LevelMethod = (this: Composing, message: string, meta?: LogMetadata) => void;
type LogMethod = (this: Composing, level: LogLevel, message: string, meta?: LogMetadata) => void;

/** True when the composing logger's own logger is a DefaultLogger that drops lines of `level`. */
function dropped(logger: Composing, level: LogLevel): boolean {
  const parent = logger.parentLogger;
  return parent instanceof DefaultLogger && LEVELS.indexOf(level) < LEVELS.indexOf(parent.level);
}

let installed = false;

/** Installs the check on the SDK's composing logger, once per process (src/main.ts, next to `Runtime.install`). */
export function skipDroppedSdkLogMetadata(): void {
  if (installed) return;
  installed = true;
  const proto = LoggerWithComposedMetadata.prototype as unknown as Record<(typeof METHODS)[number], LevelMethod> & {
    log: LogMethod;
  };
  METHODS.forEach((method, i) => {
    const original = proto[method];
    const level = LEVELS[i]!;
    proto[method] = function (this: Composing, message: string, meta?: LogMetadata): void {
      if (!dropped(this, level)) original.call(this, message, meta);
    };
  });
  const log = proto.log;
  proto.log = function (this: Composing, level: LogLevel, message: string, meta?: LogMetadata): void {
    if (!dropped(this, level)) log.call(this, level, message, meta);
  };
}
