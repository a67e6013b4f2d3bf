/**
 * The secret box (src/auth/secret-box.ts): sealed values open only with the same key and context,
 * any change to a sealed value is detected, legacy values open only through openLegacy, and the
 * secret key is parsed strictly (32 bytes) or made once with mode 0600.
 */
import { createCipheriv, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ensurePrivateDir, loadSecretKey, parseSecretKey, sealContext, SecretBox } from '../../src/crypto/secret-box';

const KEY = randomBytes(32);
const box = new SecretBox(KEY);

/** A value sealed the way version 1 did: AES-256-GCM without associated data. */
function legacySeal(key: Buffer, plain: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const ciphertext = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
  return [
    'v1',
    iv.toString('base64url'),
    ciphertext.toString('base64url'),
    cipher.getAuthTag().toString('base64url'),
  ].join('.');
}

describe('SecretBox', () => {
  it('refuses a key that is not 32 bytes', () => {
    expect(() => new SecretBox(randomBytes(31))).toThrow('secret key must be 32 bytes');
    expect(() => new SecretBox(randomBytes(33))).toThrow('secret key must be 32 bytes');
  });

  it('seals to v2.<iv>.<ciphertext>.<tag> and opens with the same context', () => {
    const context = sealContext('outbound_secret', 'crm_token');
    expect(context).toBe('outbound_secret:crm_token');
    const sealed = box.seal('hunter2 ✓', context);
    expect(sealed).toMatch(/^v2\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{22}$/);
    expect(sealed).not.toContain('hunter2');
    expect(box.seal('hunter2 ✓', context)).not.toBe(sealed);
    expect(box.open(sealed, context)).toBe('hunter2 ✓');
    expect(box.open(box.seal('', context), context)).toBe('');
  });

  it('does not open under another context, another key, or after any change', () => {
    const sealed = box.seal('value', sealContext('service_secret', 'a'));
    expect(() => box.open(sealed, sealContext('service_secret', 'b'))).toThrow();
    expect(() => box.open(sealed, sealContext('outbound_secret', 'a'))).toThrow();
    expect(() => new SecretBox(randomBytes(32)).open(sealed, sealContext('service_secret', 'a'))).toThrow();
    const [v, iv, ct, tag] = sealed.split('.');
    const flip = (part: string): string => {
      const bytes = Buffer.from(part, 'base64url');
      bytes[0] = bytes[0]! ^ 1;
      return bytes.toString('base64url');
    };
    expect(() => box.open([v, flip(iv!), ct, tag].join('.'), 'service_secret:a')).toThrow();
    expect(() => box.open([v, iv, flip(ct!), tag].join('.'), 'service_secret:a')).toThrow();
    expect(() => box.open([v, iv, ct, flip(tag!)].join('.'), 'service_secret:a')).toThrow();
  });

  it.each([
    ['no iv', (p: string[]) => [p[0], '', p[2], p[3]].join('.')],
    ['no tag', (p: string[]) => [p[0], p[1], p[2], ''].join('.')],
    ['no ciphertext part', (p: string[]) => [p[0], p[1]].join('.')],
    ['another version', (p: string[]) => ['v3', p[1], p[2], p[3]].join('.')],
    ['the legacy version', (p: string[]) => ['v1', p[1], p[2], p[3]].join('.')],
  ])('a value with %s is not a sealed secret', (_what, spoil) => {
    const sealed = box.seal('value', 'ctx');
    expect(() => box.open(spoil(sealed.split('.')), 'ctx')).toThrow('not a sealed secret');
  });

  it('an empty ciphertext part is a sealed value (of the empty string)', () => {
    const sealed = box.seal('', 'ctx');
    expect(sealed.split('.')[2]).toBe('');
    expect(SecretBox.isSealed(sealed)).toBe(true);
    expect(box.open(sealed, 'ctx')).toBe('');
  });

  it('legacy values open only through openLegacy; v2 values not through it', () => {
    const legacy = legacySeal(KEY, 'old');
    expect(box.openLegacy(legacy)).toBe('old');
    expect(() => box.open(legacy, '')).toThrow('not a sealed secret');
    expect(() => box.openLegacy(box.seal('new', 'ctx'))).toThrow('not a sealed secret');
    expect(() => new SecretBox(randomBytes(32)).openLegacy(legacy)).toThrow();
  });

  it('isSealed and isLegacy recognise the forms exactly', () => {
    const sealed = box.seal('x', 'ctx');
    const legacy = legacySeal(KEY, 'x');
    expect(SecretBox.isSealed(sealed)).toBe(true);
    expect(SecretBox.isSealed(legacy)).toBe(true);
    expect(SecretBox.isLegacy(legacy)).toBe(true);
    expect(SecretBox.isLegacy(sealed)).toBe(false);
    expect(SecretBox.isLegacy('v1.plain')).toBe(false);
    for (const value of [
      'plain',
      '',
      'v2.a.b',
      'v3.a.b.c',
      'v2.a.b.c.d',
      'v2..b.c',
      'v2.a.b.',
      'v2.a+.b.c',
      ` ${sealed}`,
      `${sealed}\n`,
      `xv2.a.b.c`,
    ]) {
      expect(SecretBox.isSealed(value)).toBe(false);
    }
  });

  it('derived keys are 32 bytes, stable, one per purpose, and not the sealing key', () => {
    const a = box.deriveKey('client-secret-hmac');
    expect(a).toHaveLength(32);
    expect(box.deriveKey('client-secret-hmac')).toEqual(a);
    expect(box.deriveKey('other')).not.toEqual(a);
    expect(a).not.toEqual(KEY);
    expect(new SecretBox(randomBytes(32)).deriveKey('client-secret-hmac')).not.toEqual(a);
  });
});

describe('parseSecretKey', () => {
  it('reads 32 bytes as hex, base64url or base64, trimmed', () => {
    const key = randomBytes(32);
    expect(parseSecretKey(key.toString('hex'))).toEqual(key);
    expect(parseSecretKey(key.toString('hex').toUpperCase())).toEqual(key);
    expect(parseSecretKey(key.toString('base64url'))).toEqual(key);
    expect(parseSecretKey(key.toString('base64'))).toEqual(key);
    expect(parseSecretKey(`  ${key.toString('base64url')}\n`)).toEqual(key);
  });

  it('reads hex only when the whole text is 64 hex digits (after trimming)', () => {
    const key = randomBytes(32);
    const hex = key.toString('hex');
    expect(parseSecretKey(` ${hex}\n`)).toEqual(key);
    expect(() => parseSecretKey(`${hex}0`)).toThrow('SECRET_KEY must be 32 bytes');
    expect(() => parseSecretKey(`0${hex}`)).toThrow('SECRET_KEY must be 32 bytes');
    expect(() => parseSecretKey(`${hex}zz`)).toThrow('SECRET_KEY must be 32 bytes');
  });

  it('never takes 32 characters of text as the key bytes themselves', () => {
    expect(() => parseSecretKey('a'.repeat(32))).toThrow('SECRET_KEY must be 32 bytes');
    expect(() => parseSecretKey('correct horse battery staple 123')).toThrow('SECRET_KEY must be 32 bytes');
  });

  it('refuses anything that is not 32 bytes', () => {
    for (const text of [
      '',
      'short',
      randomBytes(31).toString('base64url'),
      randomBytes(33).toString('hex'),
      'g'.repeat(64),
    ]) {
      expect(() => parseSecretKey(text)).toThrow('SECRET_KEY must be 32 bytes');
    }
  });
});

describe('loadSecretKey and ensurePrivateDir', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'secret-box-'));
  });
  afterEach(() => {
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('SECRET_KEY wins; else the key file; else a new key file with mode 0600', () => {
    const key = randomBytes(32);
    expect(loadSecretKey(key.toString('hex'), dir)).toEqual({ key, source: 'env' });
    expect(fs.existsSync(path.join(dir, 'secret.key'))).toBe(false);

    const dataDir = path.join(dir, 'data', 'nested');
    const made = loadSecretKey(undefined, dataDir);
    expect(made.source).toBe('generated');
    expect(made.key).toHaveLength(32);
    const file = path.join(dataDir, 'secret.key');
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(fs.statSync(dataDir).mode & 0o777).toBe(0o700);
    expect(fs.readFileSync(file, 'utf8')).toBe(`${made.key.toString('base64url')}\n`);
    expect(loadSecretKey(undefined, dataDir)).toEqual({ key: made.key, source: 'file' });
    expect(loadSecretKey('', dataDir)).toEqual({ key: made.key, source: 'file' });
  });

  it('ensurePrivateDir says whether an existing directory is open to others, and leaves it as it is', () => {
    fs.chmodSync(dir, 0o755);
    expect(ensurePrivateDir(dir)).toEqual({ openToOthers: true });
    expect(fs.statSync(dir).mode & 0o777).toBe(0o755);
    fs.chmodSync(dir, 0o700);
    expect(ensurePrivateDir(dir)).toEqual({ openToOthers: false });
    fs.chmodSync(dir, 0o710);
    expect(ensurePrivateDir(dir)).toEqual({ openToOthers: true });
  });
});
