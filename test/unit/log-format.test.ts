/**
 * Logs a person can read on a terminal, JSON elsewhere, and the start banner: the format chosen
 * from LOG_FORMAT and the terminal, the readable line (level, message first, then fields), the
 * redaction applying to both formats, and the banner's lines that people and scripts read.
 */
import { loadConfig } from '../../src/config';
import { createLogger, resolveLogFormat, type LogFormat } from '../../src/logger';
import { formatLogLine } from '../../src/log-pretty';
import { StartBanner } from '../../src/banner';
import { ConfigError } from '../../src/errors';

function capture(format: LogFormat): { lines: string[]; logger: ReturnType<typeof createLogger> } {
  const lines: string[] = [];
  const logger = createLogger(
    'info',
    { write: (text: string) => void lines.push(...text.split('\n').filter(Boolean)) },
    format,
  );
  return { lines, logger };
}

describe('log format', () => {
  it('is pretty on a terminal and JSON otherwise, unless LOG_FORMAT says which', () => {
    expect(resolveLogFormat(undefined, { isTTY: true })).toBe('pretty');
    expect(resolveLogFormat(undefined, { isTTY: false })).toBe('json');
    expect(resolveLogFormat(undefined, {})).toBe('json');
    expect(resolveLogFormat('json', { isTTY: true })).toBe('json');
    expect(resolveLogFormat('pretty', { isTTY: false })).toBe('pretty');
  });

  it('LOG_FORMAT accepts json and pretty, and refuses anything else naming the variable', () => {
    expect(loadConfig({ LOG_FORMAT: 'JSON' }).logFormat).toBe('json');
    expect(loadConfig({ LOG_FORMAT: 'pretty' }).logFormat).toBe('pretty');
    expect(loadConfig({}).logFormat).toBeUndefined();
    expect(() => loadConfig({ LOG_FORMAT: 'text' })).toThrow(ConfigError);
    expect(() => loadConfig({ LOG_FORMAT: 'text' })).toThrow(/LOG_FORMAT/);
  });

  it('a readable line is the level, the message, then the fields and the time', () => {
    const line = formatLogLine(
      JSON.stringify({
        level: 40,
        time: Date.UTC(2026, 0, 1, 12),
        msg: 'store ready',
        store: 'pglite',
        n: 3,
        note: 'two words',
      }),
      false,
    );
    expect(line).toMatch(/^WARN {2}store ready {2}store=pglite n=3 note="two words" · \d\d:\d\d:\d\d$/);
    expect(formatLogLine(JSON.stringify({ level: 30, time: 0, msg: 'stopped' }), true)).toContain(
      '\u001b[32mINFO \u001b[0m stopped',
    );
    expect(formatLogLine('not json\n', false)).toBe('not json');
  });

  it('secret-like fields are redacted in both formats', () => {
    for (const format of ['json', 'pretty'] as const) {
      const { lines, logger } = capture(format);
      logger.info({ client: { clientSecret: 'very-secret-value', clientId: 'cli_1' } }, 'client made');
      expect(lines).toHaveLength(1);
      expect(lines[0]).not.toContain('very-secret-value');
      expect(lines[0]).toContain('[redacted]');
      if (format === 'json') expect(JSON.parse(lines[0]!)).toMatchObject({ msg: 'client made', level: 30 });
      else expect(lines[0]).toMatch(/^INFO {2}client made {2}client=/);
    }
  });
});

describe('start banner', () => {
  it('lists the URLs and the one-time secret, each line starting with its label', () => {
    const banner = new StartBanner();
    banner.addUrl('Temporal Web UI', 'http://127.0.0.1:8233');
    banner.addUrl('API', 'http://localhost:8080');
    banner.setBootstrap({
      clientId: 'cli_abc',
      clientSecret: 's3cret',
      tokenUrl: 'http://localhost:8080/auth/v1/token',
    });
    const text = banner.render(false);
    expect(text).toMatch(/^API: +http:\/\/localhost:8080$/m);
    expect(text).toMatch(/^Temporal Web UI: +http:\/\/127\.0\.0\.1:8233$/m);
    expect(text).toMatch(/^ {2}client_id: +cli_abc$/m);
    expect(text).toMatch(/^ {2}client_secret: s3cret$/m);
    expect(text).toContain('-d client_secret=... http://localhost:8080/auth/v1/token');
    expect(text).not.toContain('\u001b[');
    expect(banner.render(true)).toContain('\u001b[1;33ms3cret\u001b[0m');
  });

  it('says nothing about a secret when no client was created', () => {
    const banner = new StartBanner();
    banner.addUrl('API', 'http://localhost:8080');
    expect(banner.render(false)).not.toMatch(/client_secret/);
  });
});
