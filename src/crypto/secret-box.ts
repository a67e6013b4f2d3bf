/**
 * Encryption at rest for secrets the service must read back (HMAC signing secrets, named outbound
 * secrets, the service's own keys): AES-256-GCM under a 256-bit key from SECRET_KEY, or from a key
 * file made once in DATA_DIR with mode 0600.
 *
 * Every value is sealed for one place: its context (`sealContext`: what it is and which row holds
 * it, e.g. `outbound_secret:crm_token`) is the cipher's associated data, so a sealed value copied
 * to another row or another purpose does not open. Sealed form: `v2.<iv>.<ciphertext>.<tag>`,
 * base64url parts. Values sealed by earlier versions without a context (`v1.…`) open only through
 * `openLegacy`, which the one-time migration (src/store/sealing.ts) uses to seal them again.
 */
import { createCipheriv, createDecipheriv, createSecretKey, hkdfSync, randomBytes, type KeyObject } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

const VERSION = 'v2';
const LEGACY_VERSION = 'v1';

/** Where a sealed value lives: bound to it as associated data. */
export type SealKind = 'service_secret' | 'outbound_secret' | 'automation_signing_secret';

/** The context of a value of `kind` held by the row `id` (a service secret's or outbound secret's name, an automation id). */
export function sealContext(kind: SealKind, id: string): string {
  return `${kind}:${id}`;
}

export class SecretBox {
  /**
   * The key as a KeyObject, made once: `createCipheriv` with a Buffer key repeats its key-type checks
   * each time, most of an encryption's cost (docs/performance.md#constants).
   */
  private readonly key: KeyObject;

  constructor(key: Buffer) {
    if (key.length !== 32) throw new Error('secret key must be 32 bytes');
    this.key = createSecretKey(key);
  }

  /** Seals `plain` for `context` (see `sealContext`); it opens only with the same context. */
  seal(plain: string, context: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(Buffer.from(context, 'utf8'));
    const ciphertext = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return [
      VERSION,
      iv.toString('base64url'),
      ciphertext.toString('base64url'),
      cipher.getAuthTag().toString('base64url'),
    ].join('.');
  }

  /** True for a value in a sealed form (either version; not necessarily sealed with this key). */
  static isSealed(value: string): boolean {
    return /^v[12]\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+$/.test(value);
  }

  /** True for a value sealed by an earlier version, without a context. */
  static isLegacy(value: string): boolean {
    return SecretBox.isSealed(value) && value.startsWith(`${LEGACY_VERSION}.`);
  }

  /** A 32-byte key for one purpose (HKDF-SHA256 of the sealing key): independent of the sealing key. */
  deriveKey(purpose: string): Buffer {
    return Buffer.from(hkdfSync('sha256', this.key, Buffer.alloc(0), `automation-governance:${purpose}`, 32));
  }

  /** The plain secret; throws when the value was not sealed with this key for this context, or was altered. */
  open(sealed: string, context: string): string {
    return this.decrypt(sealed, VERSION, Buffer.from(context, 'utf8'));
  }

  /** A value sealed without a context by an earlier version (`v1.…`); for the migration only. */
  openLegacy(sealed: string): string {
    return this.decrypt(sealed, LEGACY_VERSION, undefined);
  }

  private decrypt(sealed: string, expected: string, aad: Buffer | undefined): string {
    const [version, iv, ciphertext, tag] = sealed.split('.');
    if (version !== expected || !iv || ciphertext === undefined || !tag) throw new Error('not a sealed secret');
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64url'));
    if (aad) decipher.setAAD(aad);
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]).toString('utf8');
  }
}

/** Parses SECRET_KEY: 32 bytes as base64url, base64 or hex. */
export function parseSecretKey(text: string): Buffer {
  const trimmed = text.trim();
  const candidates = [
    /^[0-9a-fA-F]{64}$/.test(trimmed) ? Buffer.from(trimmed, 'hex') : undefined,
    Buffer.from(trimmed, 'base64url'),
    Buffer.from(trimmed, 'base64'),
  ];
  const key = candidates.find((candidate) => candidate?.length === 32);
  if (!key)
    throw new Error('SECRET_KEY must be 32 bytes, given as hex (64 characters) or base64/base64url (43-44 characters)');
  return key;
}

/** The key from SECRET_KEY, else from DATA_DIR/secret.key (made with mode 0600 when missing). */
export function loadSecretKey(
  secretKey: string | undefined,
  dataDir: string,
): { key: Buffer; source: 'env' | 'file' | 'generated' } {
  if (secretKey) return { key: parseSecretKey(secretKey), source: 'env' };
  const file = path.join(dataDir, 'secret.key');
  if (fs.existsSync(file)) return { key: parseSecretKey(fs.readFileSync(file, 'utf8')), source: 'file' };
  ensurePrivateDir(dataDir);
  const key = randomBytes(32);
  fs.writeFileSync(file, `${key.toString('base64url')}\n`, { mode: 0o600, flag: 'wx' });
  return { key, source: 'generated' };
}

/**
 * Creates `dir` (and missing parents) with mode 0700. An existing directory is left as it is (it
 * may be shared, e.g. a mount point); `openToOthers` says whether group or others can reach it.
 */
export function ensurePrivateDir(dir: string): { openToOthers: boolean } {
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  return { openToOthers: (fs.statSync(dir).mode & 0o077) !== 0 };
}
