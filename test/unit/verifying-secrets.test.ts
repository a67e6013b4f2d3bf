/**
 * Which secrets verify a delivery's HMAC after a rotation: the current one always, the previous one
 * strictly before `previousSecretExpiresAt` and never at or after it. The clock is injected, so the
 * boundary itself is tested (an off-by-one `<` → `<=` fails here).
 */
import { verifyingHmacSecrets, type Listener } from '../../src/delivery/listener-cache';

const EXPIRES_AT = Date.parse('2026-01-01T12:00:00.000Z');

function listener(hmacSecret: string | undefined, previous?: { secret: string; expiresAtMs: number }): Listener {
  return { hmacSecret, previousHmacSecret: previous } as Listener;
}

describe('verifyingHmacSecrets', () => {
  const rotated = listener('new-secret', { secret: 'old-secret', expiresAtMs: EXPIRES_AT });

  it.each([
    ['long before the expiry', EXPIRES_AT - 86_400_000, ['new-secret', 'old-secret']],
    ['1 ms before the expiry', EXPIRES_AT - 1, ['new-secret', 'old-secret']],
    ['exactly at the expiry', EXPIRES_AT, ['new-secret']],
    ['1 ms after the expiry', EXPIRES_AT + 1, ['new-secret']],
    ['long after the expiry', EXPIRES_AT + 86_400_000, ['new-secret']],
  ])('%s', (_when, now, expected) => {
    expect(verifyingHmacSecrets(rotated, now)).toEqual(expected);
  });

  it('without a rotation only the current secret; without any secret nothing', () => {
    expect(verifyingHmacSecrets(listener('only-secret'), EXPIRES_AT)).toEqual(['only-secret']);
    expect(verifyingHmacSecrets(listener(undefined), EXPIRES_AT)).toEqual([]);
    expect(
      verifyingHmacSecrets(listener(undefined, { secret: 'old-secret', expiresAtMs: EXPIRES_AT }), EXPIRES_AT - 1),
    ).toEqual(['old-secret']);
  });

  it('reads the real clock when none is given', () => {
    const now = Date.now();
    expect(verifyingHmacSecrets(listener('new-secret', { secret: 'old-secret', expiresAtMs: now + 60_000 }))).toEqual([
      'new-secret',
      'old-secret',
    ]);
    expect(verifyingHmacSecrets(listener('new-secret', { secret: 'old-secret', expiresAtMs: now - 60_000 }))).toEqual([
      'new-secret',
    ]);
  });
});
