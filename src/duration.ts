/** Protobuf-JSON durations (`"3600s"`, `"1.5s"`, `"0.000000001s"`), as used by wait steps. Pure: safe in workflows. */

/** Longest duration protobuf allows: 10,000 years. */
export const MAX_DURATION_SECONDS = 315_576_000_000;

const DURATION = /^(\d+)(?:\.(\d{1,9}))?s$/;

/**
 * Milliseconds of a non-negative protobuf-JSON duration, rounded up to whole milliseconds;
 * undefined when the text is not one (negative durations are refused too).
 */
export function parseDuration(text: string): number | undefined {
  const match = DURATION.exec(text);
  if (!match) return undefined;
  const seconds = Number(match[1]);
  if (!Number.isSafeInteger(seconds) || seconds > MAX_DURATION_SECONDS) return undefined;
  const nanos = Number((match[2] ?? '').padEnd(9, '0'));
  if (seconds === MAX_DURATION_SECONDS && nanos > 0) return undefined;
  return seconds * 1000 + Math.ceil(nanos / 1_000_000);
}
