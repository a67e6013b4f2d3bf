/**
 * Client-secret hashes. A secret the service generated (256 random bits) needs no slow hash: it is
 * stored as a keyed hash, `hmac-sha256$<mac>`, HMAC-SHA256 under a server key derived from
 * SECRET_KEY, verified in microseconds on the event loop. Only a secret an operator chose
 * (BOOTSTRAP_CLIENT_SECRET, or one given to `createClient`) is stored as a salted scrypt hash,
 * `scrypt$N$r$p$<salt>$<key>`; every slow verification passes through a gate that caps how many
 * run at once. A refused attempt costs one scrypt verification whatever the client (src/auth/clients.ts
 * verifies against `decoyScryptHash` where nothing else ran scrypt). Hashes made before keyed hashes
 * existed (`scrypt$` for generated secrets) still verify. Comparisons are in constant time.
 */
import { createHmac, randomBytes, scrypt as scryptCb, timingSafeEqual, type ScryptOptions } from 'node:crypto';

const N = 16384;
const R = 8;
const P = 1;
const KEY_LENGTH = 32;
const HMAC_SCHEME = 'hmac-sha256';

/** Runs a slow verification, or refuses it when too many are already running. */
export type SlowGate = <T>(work: () => Promise<T>) => Promise<T>;

/** A gate without a cap (start-up, tests of other things). */
export const UNGATED: SlowGate = (work) => work();

/**
 * The key derivation behind every scrypt hash and verification, in one place (an object, so that
 * a test can count the runs and see their parameters: timings never go in tests).
 */
export const kdf = {
  scrypt(secret: string, salt: Buffer, keyLength: number, options: ScryptOptions): Promise<Buffer> {
    return new Promise((resolve, reject) =>
      scryptCb(secret, salt, keyLength, options, (err, key) => (err ? reject(err) : resolve(key))),
    );
  },
};

function mac(secret: string, macKey: Buffer): Buffer {
  return createHmac('sha256', macKey).update(secret, 'utf8').digest();
}

/** The stored form of a generated (high-entropy) secret: a keyed hash. */
export function hashGeneratedSecret(secret: string, macKey: Buffer): string {
  return `${HMAC_SCHEME}$${mac(secret, macKey).toString('base64url')}`;
}

/** The stored form of an operator-chosen secret: salted scrypt. */
export async function hashChosenSecret(secret: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await kdf.scrypt(secret, salt, KEY_LENGTH, { N, r: R, p: P });
  return `scrypt$${N}$${R}$${P}$${salt.toString('base64url')}$${key.toString('base64url')}`;
}

/**
 * A hash of the form and parameters `hashChosenSecret` makes (a random salt, a random key) that no
 * secret matches: verifying against it costs what verifying an operator-chosen secret costs.
 */
export function decoyScryptHash(): string {
  return `scrypt$${N}$${R}$${P}$${randomBytes(16).toString('base64url')}$${randomBytes(KEY_LENGTH).toString('base64url')}`;
}

/** True when verifying against this stored hash runs scrypt. */
export function isSlowHash(stored: string): boolean {
  return stored.startsWith('scrypt$');
}

/**
 * True when `secret` matches `stored` (either format). A scrypt hash is verified through `gate`,
 * which may throw instead of running it; a keyed hash never waits for anything.
 */
export async function verifySecret(
  secret: string,
  stored: string,
  macKey: Buffer,
  gate: SlowGate = UNGATED,
): Promise<boolean> {
  if (stored.startsWith(`${HMAC_SCHEME}$`)) {
    const expected = Buffer.from(stored.slice(HMAC_SCHEME.length + 1), 'base64url');
    const actual = mac(secret, macKey);
    return actual.length === expected.length && timingSafeEqual(actual, expected);
  }
  const [scheme, n, r, p, salt, key] = stored.split('$');
  if (scheme !== 'scrypt' || !n || !r || !p || !salt || !key) return false;
  const expected = Buffer.from(key, 'base64url');
  const actual = await gate(() =>
    kdf.scrypt(secret, Buffer.from(salt, 'base64url'), expected.length, { N: Number(n), r: Number(r), p: Number(p) }),
  );
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}

/** True for a secret of the shape the service generates (32 random bytes, base64url). */
export function looksGenerated(secret: string): boolean {
  return /^[A-Za-z0-9_-]{43}$/.test(secret);
}
