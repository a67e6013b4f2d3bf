/** Identifier generation: UUIDv7 for records (time-ordered, so keyset pagination by id is stable). */
import { randomBytes } from 'node:crypto';

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
