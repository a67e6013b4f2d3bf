/**
 * Log lines a person can read, for a terminal: `INFO  store ready  store=pglite · 01:12:47`
 * (level in its colour, the message, then the fields and the time dimmed). pino has already
 * serialized and redacted each entry; this only re-formats its JSON line, in the same thread.
 */
import type { DestinationStream } from 'pino';

const LEVELS: Record<number, { label: string; color: string }> = {
  10: { label: 'TRACE', color: '90' },
  20: { label: 'DEBUG', color: '36' },
  30: { label: 'INFO ', color: '32' },
  40: { label: 'WARN ', color: '33' },
  50: { label: 'ERROR', color: '31' },
  60: { label: 'FATAL', color: '1;41' },
};

const paint = (colors: boolean, code: string, text: string): string =>
  colors ? `\u001b[${code}m${text}\u001b[0m` : text;

function fieldValue(value: unknown): string {
  if (typeof value === 'string' && /^[^\s"=]+$/.test(value)) return value;
  return JSON.stringify(value) ?? String(value);
}

/** One pino JSON line as a readable line (a line that is not JSON is returned as it is). */
export function formatLogLine(line: string, colors: boolean): string {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return line.replace(/\n$/, '');
  }
  const { level, time, msg, ...fields } = entry;
  const known = LEVELS[Number(level)] ?? { label: String(level).padEnd(5), color: '0' };
  const stamp = typeof time === 'number' ? new Date(time).toTimeString().slice(0, 8) : '';
  const details = Object.entries(fields)
    .map(([key, value]) => `${key}=${fieldValue(value)}`)
    .join(' ');
  const tail = [details, stamp].filter(Boolean).join(' · ');
  return `${paint(colors, known.color, known.label)} ${String(msg ?? '')}${tail ? `  ${paint(colors, '2', tail)}` : ''}`;
}

/** A pino destination writing readable lines to `out` (colours when asked). */
export function prettyDestination(out: { write(text: string): unknown }, colors: boolean): DestinationStream {
  return { write: (line: string) => void out.write(`${formatLogLine(line, colors)}\n`) };
}
