import { resolveNameTo } from '../helpers/resolver';
import {
  fetchJwks,
  guardedLookup,
  isForbiddenAddress,
  validateJwksUrl,
  ADDRESS_REFUSED,
} from '../../src/webhooks/jwks';
import { parseWebhookJson } from '../../src/webhooks/body';
import { WebhookRejection } from '../../src/errors';
import { webhookStatus } from '../../src/http/errors';

describe('validateJwksUrl', () => {
  it.each([
    'https://idp.example/jwks.json',
    'https://idp.example:8443/.well-known/jwks.json?v=1',
    'https://203.0.113.5/jwks',
    'https://[2001:db8::1]/jwks',
  ])('accepts %s', (url) => {
    expect(validateJwksUrl(url, false)).toBeUndefined();
  });

  it.each([
    ['', 'empty', 'is required'],
    ['not a url', 'syntax', 'is not a valid absolute URL'],
    ['/relative/jwks.json', 'relative', 'is not a valid absolute URL'],
    ['http://idp.example/jwks.json', 'http', 'must use https'],
    ['ftp://idp.example/jwks.json', 'scheme', 'must use https'],
    ['file:///etc/passwd', 'file', 'must use https'],
    ['https://user:pass@idp.example/jwks.json', 'credentials', 'must not contain credentials'],
    ['https://localhost/jwks.json', 'localhost', 'must not point to localhost'],
    ['https://LOCALHOST./jwks.json', 'localhost with dot', 'must not point to localhost'],
    ['https://api.localhost/jwks.json', '.localhost', 'must not point to localhost'],
    [
      'https://127.0.0.1/jwks.json',
      'loopback',
      'must not point to a loopback, private, link-local or other non-public address',
    ],
    [
      'https://2130706433/jwks.json',
      'loopback as an integer',
      'must not point to a loopback, private, link-local or other non-public address',
    ],
    [
      'https://0x7f.1/jwks.json',
      'loopback in hex',
      'must not point to a loopback, private, link-local or other non-public address',
    ],
    [
      'https://10.1.2.3/jwks.json',
      '10/8',
      'must not point to a loopback, private, link-local or other non-public address',
    ],
    [
      'https://172.16.0.1/jwks.json',
      '172.16/12',
      'must not point to a loopback, private, link-local or other non-public address',
    ],
    [
      'https://172.31.255.255/jwks.json',
      '172.16/12 top',
      'must not point to a loopback, private, link-local or other non-public address',
    ],
    [
      'https://192.168.1.1/jwks.json',
      '192.168/16',
      'must not point to a loopback, private, link-local or other non-public address',
    ],
    [
      'https://169.254.169.254/latest/meta-data',
      'metadata',
      'must not point to a loopback, private, link-local or other non-public address',
    ],
    [
      'https://0.0.0.0/jwks.json',
      'unspecified',
      'must not point to a loopback, private, link-local or other non-public address',
    ],
    [
      'https://[::1]/jwks.json',
      'IPv6 loopback',
      'must not point to a loopback, private, link-local or other non-public address',
    ],
    [
      'https://[::]/jwks.json',
      'IPv6 unspecified',
      'must not point to a loopback, private, link-local or other non-public address',
    ],
    [
      'https://[fd00:ec2::254]/jwks.json',
      'IPv6 unique local',
      'must not point to a loopback, private, link-local or other non-public address',
    ],
    [
      'https://[fe80::1]/jwks.json',
      'IPv6 link-local',
      'must not point to a loopback, private, link-local or other non-public address',
    ],
    [
      'https://[::ffff:10.0.0.1]/jwks.json',
      'mapped private',
      'must not point to a loopback, private, link-local or other non-public address',
    ],
    [
      'https://[::ffff:169.254.169.254]/jwks.json',
      'mapped metadata',
      'must not point to a loopback, private, link-local or other non-public address',
    ],
    [
      'https://[64:ff9b::a9fe:a9fe]/jwks.json',
      'NAT64 metadata',
      'must not point to a loopback, private, link-local or other non-public address',
    ],
    [`https://idp.example/${'a'.repeat(3000)}`, 'too long', 'must be at most'],
  ])('refuses %s (%s)', (url, _label, reason) => {
    const message = validateJwksUrl(url, false);
    expect(message?.startsWith('JWKS URL ')).toBe(true);
    expect(message).toContain(reason);
  });

  it('allows http and private hosts when insecure JWKS are allowed', () => {
    expect(validateJwksUrl('http://127.0.0.1:8080/jwks.json', true)).toBeUndefined();
    expect(validateJwksUrl('http://localhost/jwks.json', true)).toBeUndefined();
    expect(validateJwksUrl('ftp://localhost/jwks.json', true)).toBe('JWKS URL must use http or https');
  });
});

describe('isForbiddenAddress', () => {
  it.each([
    '127.0.0.1',
    '10.0.0.1',
    '172.20.0.1',
    '192.168.0.1',
    '169.254.169.254',
    '0.0.0.0',
    '100.64.0.1',
    '224.0.0.1',
    '255.255.255.255',
    '::1',
    '::',
    'fc00::1',
    'fd12::1',
    'fe80::1%eth0',
    '::ffff:127.0.0.1',
    '2002:7f00:1::',
    'garbage',
  ])('forbids %s', (address) => {
    expect(isForbiddenAddress(address)).toBe(true);
  });

  it.each(['8.8.8.8', '203.0.113.10', '172.32.0.1', '2001:4860:4860::8888', '::ffff:8.8.8.8'])(
    'allows %s',
    (address) => {
      expect(isForbiddenAddress(address)).toBe(false);
    },
  );

  // RFC 8215 local-use NAT64 prefix, with the IPv4 address where RFC 6052 puts it for each prefix length.
  it.each([
    ['64:ff9b:1::7f00:1', '127.0.0.1 at /96'],
    ['64:ff9b:1::a9fe:a9fe', '169.254.169.254 at /96'],
    ['64:ff9b:1:ffff::a00:1', '10.0.0.1 at /96 with a subnet id'],
    ['64:ff9b:1:a9fe:a9:fe00::', '169.254.169.254 at /48'],
    ['64:ff9b:1:7f:0:100::', '127.0.0.1 at /56'],
    ['64:ff9b:1:0:a:0:100:0', '10.0.0.1 at /64'],
    ['64:ff9b:1::', '0.0.0.0'],
  ])('forbids the NAT64 local-use address %s (%s)', (address) => {
    expect(isForbiddenAddress(address)).toBe(true);
  });

  it.each(['64:ff9b:1::808:808', '64:ff9b:1::cb00:710a'])(
    'allows the NAT64 local-use address %s of a public IPv4 address',
    (address) => {
      expect(isForbiddenAddress(address)).toBe(false);
    },
  );
});

describe('guardedLookup', () => {
  function lookup(hostname: string, all: boolean): Promise<{ err: NodeJS.ErrnoException | null; address: unknown }> {
    return new Promise((resolve) => {
      guardedLookup(hostname, { all }, (err, address) => resolve({ err, address }));
    });
  }

  it.each([true, false])('refuses a name that resolves to loopback (all: %s)', async (all) => {
    const { err } = await lookup('localhost', all);
    expect(err?.code).toBe(ADDRESS_REFUSED);
    expect(err?.message).not.toMatch(/127\.0\.0\.1|::1/);
  });

  it('guards the JWKS fetch: a host name resolving to loopback is refused at connect time', async () => {
    // The name must pass the URL check (so not "localhost") and resolve to loopback. No test
    // machine's DNS can be relied on for that, so the resolver answers for this one name; the
    // guard and the fetch around it are the real ones.
    const spy = resolveNameTo('jwks.loopback.test', '127.0.0.1');
    try {
      await expect(
        fetchJwks('https://jwks.loopback.test:1/jwks.json', {
          allowInsecure: false,
          timeoutMs: 10_000,
          maxBytes: 1024,
        }),
      ).rejects.toMatchObject({ reason: 'jwks_url_refused' });
      expect(webhookStatus('jwks_url_refused')).toBe(401);
      expect(spy).toHaveBeenCalledWith('jwks.loopback.test', expect.anything(), expect.any(Function));
    } finally {
      spy.restore();
    }
  });

  it('passes resolver errors through', async () => {
    const { err } = await lookup('no-such-host.invalid', false);
    expect(err).not.toBeNull();
    expect(err?.code).not.toBe(ADDRESS_REFUSED);
  });
});

describe('parseWebhookJson', () => {
  it.each([
    ['{}', {}],
    ['[]', []],
    ['"x"', 'x'],
    ['1', 1],
    ['null', null],
    ['{"a":{"b":[1,2,3]}}', { a: { b: [1, 2, 3] } }],
    ['\ufeff{}', {}],
  ])('parses %j', (text, value) => {
    expect(parseWebhookJson(Buffer.from(text))).toEqual(value);
  });

  it.each([
    ['empty', Buffer.alloc(0)],
    ['truncated', Buffer.from('{"a":')],
    ['trailing garbage', Buffer.from('{} x')],
    ['invalid UTF-8', Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d])],
    ['single quotes', Buffer.from("{'a':1}")],
  ])('refuses %s with 400 invalid_json', (_name, body) => {
    try {
      parseWebhookJson(body);
      throw new Error('expected a rejection');
    } catch (err) {
      expect(err).toBeInstanceOf(WebhookRejection);
      expect(err).toMatchObject({ reason: 'invalid_json' });
      expect(webhookStatus((err as WebhookRejection).reason)).toBe(400);
    }
  });
});
