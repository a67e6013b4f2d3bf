/**
 * pino logs. Secrets, tokens and payloads are never logged; these paths are redacted too.
 * `json`: one JSON object per line (for log collectors); `pretty`: readable lines for a terminal.
 */
import pino, { type Logger } from 'pino';
import { prettyDestination } from './log-pretty';

export type { Logger };
export type LogFormat = 'json' | 'pretty';

/** LOG_FORMAT, or by default: pretty on a terminal, JSON otherwise (a pipe, a file, a collector). */
export function resolveLogFormat(
  configured: LogFormat | undefined,
  stream: { isTTY?: boolean } = process.stdout,
): LogFormat {
  return configured ?? (stream.isTTY ? 'pretty' : 'json');
}

export function createLogger(level = 'info', destination?: pino.DestinationStream, format: LogFormat = 'json'): Logger {
  return pino(
    {
      level,
      base: undefined,
      redact: {
        paths: [
          'req.headers.authorization',
          'req.headers["webhook-signature"]',
          '*.clientSecret',
          '*.client_secret',
          '*.signingSecret',
          '*.access_token',
          '*.password',
        ],
        censor: '[redacted]',
      },
    },
    format === 'pretty'
      ? prettyDestination(
          destination ?? process.stdout,
          destination === undefined && process.stdout.isTTY === true && !process.env.NO_COLOR,
        )
      : destination,
  );
}
