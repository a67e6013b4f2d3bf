import { invalidArgument } from '../errors';
/**
 * The grace period of a secret's rotation, shared by the listener's signing secret (the replaced
 * secret keeps verifying) and named outbound secrets (the replaced value keeps signing outbound
 * calls, next to the new one): `gracePeriod`, a protobuf-JSON duration in seconds, default 24 h,
 * at most 7 days, "0s" ends the old value at once.
 */

/** Default grace period of a rotation (Svix keeps the old secret for 24 hours). */
export const DEFAULT_ROTATION_GRACE_SECONDS = 86_400;
export const MAX_ROTATION_GRACE_SECONDS = 7 * 86_400;

/** Parses `gracePeriod` (a protobuf Duration string such as "86400s"); 400 when malformed or over 7 days. */
export function parseGracePeriod(value: unknown): number {
  if (value === undefined) return DEFAULT_ROTATION_GRACE_SECONDS;
  const match = typeof value === 'string' ? /^(\d{1,7})(\.\d{1,9})?s$/.exec(value) : null;
  if (!match) {
    throw invalidArgument({ field: 'gracePeriod', description: 'must be a duration in seconds such as "86400s" (0s revokes the old secret at once)' });
  }
  const seconds = Number(match[1]) + Number(match[2] ?? 0);
  if (seconds > MAX_ROTATION_GRACE_SECONDS) {
    throw invalidArgument({ field: 'gracePeriod', description: `must be at most ${MAX_ROTATION_GRACE_SECONDS}s (7 days)` });
  }
  return seconds;
}
