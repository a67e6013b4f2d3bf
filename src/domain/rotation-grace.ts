import { z } from 'zod';
import { whileValid } from './validation';
/**
 * The grace period of a secret's rotation, shared by the listener's signing secret (the replaced
 * secret keeps verifying) and named outbound secrets (the replaced value keeps signing outbound
 * calls, next to the new one): `gracePeriod`, a protobuf-JSON duration in seconds, default 24 h,
 * at most 7 days, "0s" ends the old value at once.
 */

/** Default grace period of a rotation (Svix keeps the old secret for 24 hours). */
export const DEFAULT_ROTATION_GRACE_SECONDS = 86_400;
export const MAX_ROTATION_GRACE_SECONDS = 7 * 86_400;

const GRACE_FORMAT = /^(\d{1,7})(\.\d{1,9})?s$/;
const FORMAT_RULE = 'must be a duration in seconds such as "86400s" (0s revokes the old secret at once)';

/** The seconds of a `gracePeriod` that `gracePeriodSchema` accepted. */
export function gracePeriodSeconds(value: string): number {
  const match = GRACE_FORMAT.exec(value);
  if (!match) throw new Error(`not a grace period: ${value}`);
  return Number(match[1]) + Number(match[2] ?? 0);
}

/** `gracePeriod` (a protobuf Duration string such as "86400s"); 400 when malformed or over 7 days. */
export function gracePeriodSchema() {
  return z
    .string({ error: FORMAT_RULE })
    .regex(GRACE_FORMAT, { error: FORMAT_RULE, ...whileValid })
    .refine((value) => gracePeriodSeconds(value) <= MAX_ROTATION_GRACE_SECONDS, {
      error: `must be at most ${MAX_ROTATION_GRACE_SECONDS}s (7 days)`,
      ...whileValid,
    });
}
