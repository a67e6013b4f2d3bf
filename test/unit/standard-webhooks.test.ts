/**
 * The call key and the Standard Webhooks signature (src/webhooks/standard-webhooks.ts), against the
 * `standardwebhooks` npm package (a receiver's own code) and the libraries' test vector.
 */
import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { callKey, isMalformedWhsec, signingKey, standardSignature } from '../../src/webhooks/standard-webhooks';

const UUID_V5 = /^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('callKey', () => {
  const run = { workflowId: 'webhook:l1:e1', runId: '0193a0c4-1111-7000-8000-000000000001' };

  it('is a version 5 UUID, the same for the same run and step, another for another run id, workflow id or step', () => {
    const key = callKey(run, 'notify');
    expect(key).toMatch(UUID_V5);
    expect(callKey({ ...run }, 'notify')).toBe(key);
    const others = [
      callKey({ ...run, runId: '0193a0c4-1111-7000-8000-000000000002' }, 'notify'),
      callKey({ ...run, workflowId: 'webhook:l1:e1:rerun-1' }, 'notify'),
      callKey(run, 'notify2'),
    ];
    expect(new Set([key, ...others]).size).toBe(4);
  });

  it('cannot be made equal by moving characters between the parts', () => {
    expect(callKey({ workflowId: 'a.b', runId: 'c' }, 'd')).not.toBe(callKey({ workflowId: 'a', runId: 'b.c' }, 'd'));
    expect(callKey({ workflowId: 'a', runId: 'b' }, 'c"d')).not.toBe(callKey({ workflowId: 'a', runId: 'b"' }, 'cd'));
  });
});

describe('Standard Webhooks signatures', () => {
  it('matches the test vector of the Standard Webhooks libraries', () => {
    const key = signingKey('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw');
    expect(
      standardSignature([key], 'msg_p5jXN8AQM9LWM0D4loKWxJek', '1614265330', Buffer.from('{"test": 2432232314}')),
    ).toBe('v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=');
  });

  it('verifies with the standardwebhooks package: whsec_ values decoded, other values as raw bytes, both signatures during a rotation', () => {
    const now = String(Math.floor(Date.now() / 1000));
    const body = Buffer.from(JSON.stringify({ user: 'ada', note: 'café ☕' }), 'utf8');
    const whsec = `whsec_${randomBytes(32).toString('base64')}`;
    const raw = `plain-${randomBytes(8).toString('hex')}`;
    const headers = (signature: string) => ({
      'webhook-id': 'k-1',
      'webhook-timestamp': now,
      'webhook-signature': signature,
    });

    expect(
      new Webhook(whsec).verify(
        body.toString('utf8'),
        headers(standardSignature([signingKey(whsec)], 'k-1', now, body)),
      ),
    ).toEqual({
      user: 'ada',
      note: 'café ☕',
    });
    expect(() =>
      new Webhook(raw, { format: 'raw' }).verify(
        body.toString('utf8'),
        headers(standardSignature([signingKey(raw)], 'k-1', now, body)),
      ),
    ).not.toThrow();

    const both = standardSignature([signingKey(whsec), signingKey(raw)], 'k-1', now, body);
    expect(both.split(' ')).toHaveLength(2);
    expect(() => new Webhook(whsec).verify(body.toString('utf8'), headers(both))).not.toThrow();
    expect(() => new Webhook(raw, { format: 'raw' }).verify(body.toString('utf8'), headers(both))).not.toThrow();
    // Another id, timestamp or body: no match.
    expect(() => new Webhook(whsec).verify(body.toString('utf8'), { ...headers(both), 'webhook-id': 'k-2' })).toThrow();
    expect(() => new Webhook(whsec).verify(body.toString('utf8').replace('ada', 'adb'), headers(both))).toThrow();
  });

  it('signs with a value of Latin-1 characters as one byte each, as the package reads a raw secret', () => {
    const value = 'clé-secrète-½';
    expect(signingKey(value)).toEqual(Buffer.from([...value].map((c) => c.charCodeAt(0))));
    expect(signingKey(value)).toHaveLength(value.length);
    const now = String(Math.floor(Date.now() / 1000));
    const body = Buffer.from('{"a":1}', 'utf8');
    const signature = standardSignature([signingKey(value)], 'k-1', now, body);
    expect(() =>
      new Webhook(value, { format: 'raw' }).verify(body.toString('utf8'), {
        'webhook-id': 'k-1',
        'webhook-timestamp': now,
        'webhook-signature': signature,
      }),
    ).not.toThrow();
  });

  it('refuses a whsec_ value that is not base64 after the prefix', () => {
    for (const value of ['whsec_', 'whsec_abc', 'whsec_not base64', 'whsec_YWJj=']) {
      expect([value, isMalformedWhsec(value)]).toEqual([value, true]);
      expect(() => signingKey(value)).toThrow('base64');
    }
    for (const value of ['whsec_YWJj', 'whsec_YWI=', 'sk_live_whsec_', 'not-a-whsec'])
      expect([value, isMalformedWhsec(value)]).toEqual([value, false]);
  });
});
