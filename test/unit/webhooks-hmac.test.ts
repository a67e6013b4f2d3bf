import type { WebhookRejection } from '../../src/errors';
import fc from 'fast-check';
import {
  bodySha256,
  hmacAuthenticator,
  signHmac,
  verifyHmac,
  verifyHmacWithAny,
} from '../../src/webhooks/authenticators/hmac';
import { webhookStatus } from '../../src/http/errors';

const SECRET = 'c2VjcmV0LWZvci10ZXN0LXZlY3Rvci0wMDAwMDAwMDA';
const TIMESTAMP = '1700000000';
const EVENT_ID = '3f2504e0-4f89-41d3-9a0c-0305e82c3301';
const BODY = '{"employee_id":"12345","status":"terminated"}';
const SIGNATURE = 'H07KL-x37c1d6zTJ6aG_VwlzmA1LfiNzfn1hM40H2PM';

describe('HMAC test vector', () => {
  it('signs the vector with the secret string as the key', () => {
    expect(signHmac(SECRET, TIMESTAMP, EVENT_ID, BODY)).toBe(SIGNATURE);
    expect(signHmac(SECRET, TIMESTAMP, EVENT_ID, Buffer.from(BODY))).toBe(SIGNATURE);
  });

  it('verifies the vector', () => {
    expect(verifyHmac(SECRET, TIMESTAMP, EVENT_ID, BODY, SIGNATURE)).toBe(true);
    expect(verifyHmac(SECRET, TIMESTAMP, EVENT_ID, Buffer.from(BODY), SIGNATURE)).toBe(true);
  });

  it('hashes the vector body for htb_s256', () => {
    expect(bodySha256(BODY)).toBe('cboFB3-nsKSV5NiWMJ7Kcy5WS1zAmX2vu6_R-Uzm_dU');
    expect(bodySha256(Buffer.from(BODY))).toBe('cboFB3-nsKSV5NiWMJ7Kcy5WS1zAmX2vu6_R-Uzm_dU');
  });

  it('does not base64-decode the secret', () => {
    const decoded = Buffer.from(SECRET, 'base64url').toString('latin1');
    expect(signHmac(decoded, TIMESTAMP, EVENT_ID, BODY)).not.toBe(SIGNATURE);
  });
});

describe('verifyHmac refusals', () => {
  it.each([
    ['tampered body', SECRET, TIMESTAMP, EVENT_ID, '{"employee_id":"12346","status":"terminated"}'],
    ['body with extra whitespace', SECRET, TIMESTAMP, EVENT_ID, `${BODY} `],
    ['tampered timestamp', SECRET, '1700000001', EVENT_ID, BODY],
    ['tampered event id', SECRET, TIMESTAMP, '3f2504e0-4f89-41d3-9a0c-0305e82c3302', BODY],
    ['upper-cased event id', SECRET, TIMESTAMP, EVENT_ID.toUpperCase(), BODY],
    ['other secret', `${SECRET}x`, TIMESTAMP, EVENT_ID, BODY],
  ])('refuses a %s', (_name, secret, timestamp, eventId, body) => {
    expect(verifyHmac(secret, timestamp, eventId, body, SIGNATURE)).toBe(false);
  });

  it('refuses the padded spelling of the right signature', () => {
    expect(verifyHmac(SECRET, TIMESTAMP, EVENT_ID, BODY, `${SIGNATURE}=`)).toBe(false);
  });

  it('refuses the standard-base64 spelling of the right signature', () => {
    const standard = Buffer.from(SIGNATURE, 'base64url').toString('base64');
    expect(standard).not.toBe(SIGNATURE);
    expect(standard).toMatch(/[+/]/);
    expect(verifyHmac(SECRET, TIMESTAMP, EVENT_ID, BODY, standard)).toBe(false);
    expect(verifyHmac(SECRET, TIMESTAMP, EVENT_ID, BODY, standard.replace(/=+$/, ''))).toBe(false);
  });

  it.each(['', 'x', SIGNATURE.slice(0, -1), `${SIGNATURE}A`, 'é'.repeat(43), 'a'.repeat(10_000)])(
    'refuses a wrong-length signature without throwing (%#)',
    (signature) => {
      expect(verifyHmac(SECRET, TIMESTAMP, EVENT_ID, BODY, signature)).toBe(false);
    },
  );

  it('refuses a signature that differs in one character', () => {
    const flipped = `${SIGNATURE.slice(0, 10)}${SIGNATURE[10] === 'A' ? 'B' : 'A'}${SIGNATURE.slice(11)}`;
    expect(verifyHmac(SECRET, TIMESTAMP, EVENT_ID, BODY, flipped)).toBe(false);
  });
});

describe('HMAC properties', () => {
  it('a signature verifies exactly its own input', () => {
    fc.assert(
      fc.property(
        fc.string(),
        fc.string(),
        fc.uuid(),
        fc.uint8Array({ maxLength: 256 }),
        fc.uint8Array({ maxLength: 256 }),
        (secret, ts, id, a, b) => {
          const signature = signHmac(secret, ts, id, Buffer.from(a));
          expect(signature).toMatch(/^[A-Za-z0-9_-]{43}$/);
          expect(verifyHmac(secret, ts, id, Buffer.from(a), signature)).toBe(true);
          expect(verifyHmac(secret, ts, id, Buffer.from(b), signature)).toBe(Buffer.from(a).equals(Buffer.from(b)));
        },
      ),
    );
  });
});

describe('verification with the rotation secrets', () => {
  const signature = signHmac(SECRET, TIMESTAMP, EVENT_ID, BODY);

  it.each([
    ['the current secret alone', [SECRET], true],
    ['the right one first', [SECRET, 'old-secret'], true],
    ['the right one second (the previous secret during a grace period)', ['new-secret', SECRET], true],
    ['only wrong secrets', ['new-secret', 'old-secret'], false],
    ['no secret at all', [], false],
  ])('verifyHmacWithAny with %s', (_what, secrets, expected) => {
    expect(verifyHmacWithAny(secrets, TIMESTAMP, EVENT_ID, BODY, signature)).toBe(expected);
  });

  const verify = hmacAuthenticator.createVerifier();
  const request = (secrets: string[], credential: string | undefined) => ({
    listenerId: 'l',
    listenerUrl: 'https://example.test/l',
    fields: {},
    secrets,
    credential,
    timestampHeader: TIMESTAMP,
    eventIdHeader: EVENT_ID,
    body: Buffer.from(BODY),
  });
  // The verifier answers synchronously (no promise per delivery), and returns its refusal: never thrown.
  const refusal = (secrets: string[], credential: string | undefined): unknown => {
    const answer = verify(request(secrets, credential) as unknown as Parameters<typeof verify>[0]);
    expect(answer).not.toBeInstanceOf(Promise);
    if (answer === undefined) return undefined;
    const { reason, message } = answer as WebhookRejection;
    return { ...(answer as object), status: webhookStatus(reason), message };
  };

  it('the verifier accepts a signature made with either secret, and refuses a wrong, missing or secret-less one with 401', () => {
    expect(refusal([SECRET], signature)).toBeUndefined();
    expect(refusal(['new-secret', SECRET], signature)).toBeUndefined();
    const mismatch = { status: 401, reason: 'signature_mismatch', message: 'invalid webhook signature' };
    expect(refusal(['new-secret'], signature)).toMatchObject(mismatch);
    expect(refusal([SECRET], undefined)).toMatchObject(mismatch);
    expect(refusal([], signature)).toMatchObject(mismatch);
    expect(refusal([''], signHmac('', TIMESTAMP, EVENT_ID, BODY))).toBeUndefined(); // an empty secret is still a secret
  });

  it('the sender signs exactly as signHmac', async () => {
    const sign = await hmacAuthenticator.sender.signer({ secret: SECRET });
    expect(
      await sign({ url: 'https://example.test/l', body: Buffer.from(BODY), eventId: EVENT_ID, timestamp: TIMESTAMP }),
    ).toEqual({
      'Webhook-Signature': SIGNATURE,
    });
  });

  it('reads the credential as sent and issues 256-bit base64url secrets', () => {
    expect(hmacAuthenticator.readCredential(SIGNATURE)).toBe(SIGNATURE);
    const secrets = new Set(Array.from({ length: 20 }, () => hmacAuthenticator.secret.generate()));
    expect(secrets.size).toBe(20);
    for (const secret of secrets) expect(secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });
});
