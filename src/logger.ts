/** pino JSON logs. Secrets, tokens and payloads are never logged; these paths are redacted too. */
import pino, { type Logger } from 'pino';

export type { Logger };

export function createLogger(level = 'info', destination?: pino.DestinationStream): Logger {
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
    destination,
  );
}
