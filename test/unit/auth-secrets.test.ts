/**
 * Client-secret hashes (src/auth/secrets.ts): a keyed hash for generated secrets, salted scrypt for
 * chosen ones; each verifies its own secret only, under its own key, and a malformed stored hash
 * verifies nothing. The slow path goes through the gate; the keyed one never does.
 */
import { randomBytes } from 'node:crypto';
import {
  hashChosenSecret,
  hashGeneratedSecret,
  isSlowHash,
  looksGenerated,
  verifySecret,
  UNGATED,
  type SlowGate,
} from '../../src/auth/client-secret-hashes';

const KEY = randomBytes(32);
const OTHER_KEY = randomBytes(32);
const GENERATED = randomBytes(32).toString('base64url');

/** A gate that counts what passes through it. */
function countingGate(): { gate: SlowGate; calls: () => number } {
  let calls = 0;
  return {
    gate: (work) => {
      calls += 1;
      return work();
    },
    calls: () => calls,
  };
}

describe('keyed hashes of generated secrets', () => {
  it('have the form hmac-sha256$<43 base64url characters> and are deterministic under one key', () => {
    const hash = hashGeneratedSecret(GENERATED, KEY);
    expect(hash).toMatch(/^hmac-sha256\$[A-Za-z0-9_-]{43}$/);
    expect(hashGeneratedSecret(GENERATED, KEY)).toBe(hash);
    expect(hashGeneratedSecret(GENERATED, OTHER_KEY)).not.toBe(hash);
    expect(hash).not.toContain(GENERATED);
    expect(isSlowHash(hash)).toBe(false);
  });

  it('verify the secret, and nothing else, without passing the gate', async () => {
    const hash = hashGeneratedSecret(GENERATED, KEY);
    const { gate, calls } = countingGate();
    await expect(verifySecret(GENERATED, hash, KEY, gate)).resolves.toBe(true);
    await expect(verifySecret(`${GENERATED}x`, hash, KEY, gate)).resolves.toBe(false);
    await expect(verifySecret(GENERATED.slice(1), hash, KEY, gate)).resolves.toBe(false);
    await expect(verifySecret('', hash, KEY, gate)).resolves.toBe(false);
    await expect(verifySecret(GENERATED, hash, OTHER_KEY, gate)).resolves.toBe(false);
    expect(calls()).toBe(0);
  });

  it('a truncated or empty stored mac verifies nothing (length checked before comparing)', async () => {
    const hash = hashGeneratedSecret(GENERATED, KEY);
    await expect(verifySecret(GENERATED, hash.slice(0, -2), KEY)).resolves.toBe(false);
    await expect(verifySecret(GENERATED, 'hmac-sha256$', KEY)).resolves.toBe(false);
    await expect(verifySecret(GENERATED, `${hash}AA`, KEY)).resolves.toBe(false);
  });

  it('the scheme name must match exactly', async () => {
    const mac = hashGeneratedSecret(GENERATED, KEY).split('$')[1];
    await expect(verifySecret(GENERATED, `hmac-sha256x$${mac}`, KEY)).resolves.toBe(false);
    await expect(verifySecret(GENERATED, `hmac-sha25$${mac}`, KEY)).resolves.toBe(false);
    await expect(verifySecret(GENERATED, `Xhmac-sha256$${mac}`, KEY)).resolves.toBe(false);
  });
});

describe('scrypt hashes of chosen secrets', () => {
  it('have the form scrypt$16384$8$1$<salt>$<key>, are salted, and are slow hashes', async () => {
    const a = await hashChosenSecret('correct horse');
    const b = await hashChosenSecret('correct horse');
    expect(a).toMatch(/^scrypt\$16384\$8\$1\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/);
    expect(a).not.toBe(b);
    expect(isSlowHash(a)).toBe(true);
    expect(isSlowHash(`x${a}`)).toBe(false);
    expect(isSlowHash('scrypt')).toBe(false);
  });

  it('verify the secret and nothing else, through the gate, whatever the mac key', async () => {
    const hash = await hashChosenSecret('correct horse');
    const { gate, calls } = countingGate();
    await expect(verifySecret('correct horse', hash, KEY, gate)).resolves.toBe(true);
    await expect(verifySecret('correct horse', hash, OTHER_KEY, gate)).resolves.toBe(true);
    await expect(verifySecret('correct horsf', hash, KEY, gate)).resolves.toBe(false);
    await expect(verifySecret('', hash, KEY, gate)).resolves.toBe(false);
    expect(calls()).toBe(4);
  });

  it('a gate that refuses makes the verification fail with its error', async () => {
    const hash = await hashChosenSecret('correct horse');
    const refusing: SlowGate = () => Promise.reject(new Error('busy'));
    await expect(verifySecret('correct horse', hash, KEY, refusing)).rejects.toThrow('busy');
  });

  it('uses the parameters stored in the hash (a hash made with other N, r, p still verifies)', async () => {
    const { scryptSync } = await import('node:crypto');
    const salt = randomBytes(16);
    const key = scryptSync('legacy', salt, 32, { N: 1024, r: 4, p: 2 });
    const stored = `scrypt$1024$4$2$${salt.toString('base64url')}$${key.toString('base64url')}`;
    await expect(verifySecret('legacy', stored, KEY)).resolves.toBe(true);
    await expect(verifySecret('legacy', stored.replace('$1024$', '$2048$'), KEY)).resolves.toBe(false);
    await expect(verifySecret('legacy', stored.replace('$4$2$', '$4$1$'), KEY)).resolves.toBe(false);
    await expect(verifySecret('legacy', stored.replace('$4$2$', '$8$2$'), KEY)).resolves.toBe(false);
    // The key length comes from the stored key: a 16-byte key verifies as such.
    const short = scryptSync('legacy', salt, 16, { N: 1024, r: 4, p: 2 });
    await expect(
      verifySecret('legacy', `scrypt$1024$4$2$${salt.toString('base64url')}$${short.toString('base64url')}`, KEY),
    ).resolves.toBe(true);
  });

  it.each([
    ['another scheme', (h: string) => h.replace(/^scrypt/, 'bcrypt')],
    ['no N', (h: string) => h.replace('$16384$', '$$')],
    ['no r', (h: string) => h.replace('$8$', '$$')],
    ['no p', (h: string) => h.replace('$1$', '$$')],
    [
      'no salt',
      (h: string) =>
        h
          .split('$')
          .map((part, i) => (i === 4 ? '' : part))
          .join('$'),
    ],
    ['no key', (h: string) => h.split('$').slice(0, 5).join('$') + '$'],
    ['fewer parts', (h: string) => h.split('$').slice(0, 5).join('$')],
    [
      'another salt',
      (h: string) =>
        h
          .split('$')
          .map((part, i) => (i === 4 ? randomBytes(16).toString('base64url') : part))
          .join('$'),
    ],
  ])('a stored hash with %s verifies nothing', async (_what, spoil) => {
    const hash = await hashChosenSecret('correct horse');
    const { gate, calls } = countingGate();
    await expect(verifySecret('correct horse', spoil(hash), KEY, gate)).resolves.toBe(false);
    expect(calls()).toBeLessThanOrEqual(1);
  });

  it('an unknown stored form verifies nothing and never runs scrypt', async () => {
    const { gate, calls } = countingGate();
    await expect(verifySecret('x', '', KEY, gate)).resolves.toBe(false);
    await expect(verifySecret('x', 'plain-text-secret', KEY, gate)).resolves.toBe(false);
    expect(calls()).toBe(0);
  });

  it('UNGATED runs the work as it is', async () => {
    await expect(UNGATED(() => Promise.resolve(42))).resolves.toBe(42);
  });
});

describe('looksGenerated', () => {
  it('is true only for 43 base64url characters', () => {
    expect(looksGenerated(GENERATED)).toBe(true);
    expect(looksGenerated('A'.repeat(43))).toBe(true);
    expect(looksGenerated('-_'.repeat(21) + 'z')).toBe(true);
    expect(looksGenerated('A'.repeat(42))).toBe(false);
    expect(looksGenerated('A'.repeat(44))).toBe(false);
    expect(looksGenerated(`${'A'.repeat(42)}=`)).toBe(false);
    expect(looksGenerated(`${'A'.repeat(42)}+`)).toBe(false);
    expect(looksGenerated(`x${'A'.repeat(43)}`)).toBe(false);
    expect(looksGenerated(`${'A'.repeat(43)}\n`)).toBe(false);
    expect(looksGenerated('')).toBe(false);
  });
});
