/** Identifier generation: UUIDv7 for records (time-ordered, so keyset pagination by id is stable). */
import { createHash, randomBytes } from 'node:crypto';

let lastMs = 0;
let seq = 0;

/** A UUIDv7 string; ids made in the same process are strictly increasing. */
export function newId(): string {
  let ms = Date.now();
  if (ms <= lastMs) {
    seq += 1;
    if (seq > 0xfff) {
      lastMs += 1;
      seq = 0;
    }
    ms = lastMs;
  } else {
    lastMs = ms;
    seq = 0;
  }
  const bytes = randomBytes(16);
  bytes.writeUIntBE(ms, 0, 6);
  bytes[6] = 0x70 | (seq >> 8);
  bytes[7] = seq & 0xff;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** An unguessable token of `bytes` random bytes, base64url without padding. */
export function randomToken(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}

/**
 * A UUIDv7 derived from `seed`: its time is `ms` and its other 74 bits come from the seed's SHA-256,
 * so the same seed and time always give the same id, and ids of different times sort by time (a
 * run's step derives its grants' ids from the run, whose start time `ms` is, the step and the
 * entitlement).
 */
export function derivedId(seed: string, ms: number): string {
  const bytes = createHash('sha256').update(seed, 'utf8').digest().subarray(0, 16);
  bytes.writeUIntBE(Math.max(0, Math.min(ms, 2 ** 48 - 1)), 0, 6);
  bytes[6] = 0x70 | (bytes[6]! & 0x0f);
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** The time (ms) a UUIDv7 was made at (Temporal's run ids are UUIDv7); undefined for another kind of id. */
export function uuidV7Time(id: string): number | undefined {
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i.test(id)) return undefined;
  return parseInt(id.slice(0, 8) + id.slice(9, 13), 16);
}
