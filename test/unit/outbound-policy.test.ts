/**
 * The outbound-URL policy of callWebhook steps and JWKS URLs: ALLOW_PRIVATE_OUTBOUND opens
 * loopback and private targets (and http://) to callWebhook, never link-local or metadata ones;
 * ALLOW_INSECURE_JWKS no longer affects callWebhook. Configuration comes from loadConfig.
 */
import { validateOutboundUrl } from '../../activities/call-webhook';
import { loadConfig } from '../../src/config';
import { isForbiddenAddress, validateJwksUrl } from '../../src/webhooks/jwks';
import { checkOutboundUrl, MAX_URL_LENGTH } from '../../src/outbound/policy';

describe('callWebhook URLs with private targets allowed', () => {
  it.each([
    'http://127.0.0.1:8080/x',
    'http://localhost/x',
    'https://10.1.2.3/x',
    'http://192.168.0.10/x',
    'http://[::1]:9/x',
    'http://[fd12::1]/x',
    'http://[::ffff:127.0.0.1]/x',
  ])('accepts %s', (url) => {
    expect(validateOutboundUrl(url, true)).toBeUndefined();
  });

  it.each([
    'http://169.254.169.254/latest/meta-data',
    'http://[fe80::1]/x',
    'http://[fd00:ec2::254]/x',
    'http://100.100.100.200/x',
    'http://[::ffff:169.254.169.254]/x',
    'http://[64:ff9b::a9fe:a9fe]/x',
    'http://0.0.0.0/x',
    'http://224.0.0.1/x',
  ])('refuses the link-local, metadata or reserved target %s', (url) => {
    expect(validateOutboundUrl(url, true)).toBe(
      'URL must not point to a link-local, metadata or other reserved address',
    );
  });

  it('still refuses other schemes and credentials', () => {
    expect(validateOutboundUrl('ftp://127.0.0.1/x', true)).toBe('URL must use http or https');
    expect(validateOutboundUrl('http://u:p@127.0.0.1/x', true)).toBe('URL must not contain credentials');
  });
});

describe('callWebhook URLs with private targets refused (the default)', () => {
  const nonPublic = 'URL must not point to a loopback, private, link-local or other non-public address';
  it.each([
    ['http://example.com/x', 'URL must use https'],
    ['https://127.0.0.1/x', nonPublic],
    ['https://localhost/x', 'URL must not point to localhost'],
    ['https://10.0.0.1/x', nonPublic],
    ['https://169.254.169.254/x', nonPublic],
  ])('refuses %s', (url, message) => {
    expect(validateOutboundUrl(url, false)).toBe(message);
  });

  it('accepts a public https URL', () => {
    expect(validateOutboundUrl('https://hooks.example.com/x', false)).toBeUndefined();
  });
});

describe('address policies', () => {
  it('public: every non-public address is forbidden', () => {
    for (const address of ['127.0.0.1', '10.0.0.1', '::1', '169.254.169.254', 'fd00:ec2::254'])
      expect(isForbiddenAddress(address)).toBe(true);
    expect(isForbiddenAddress('93.184.216.34')).toBe(false);
  });

  it('private: loopback and private allowed, link-local and metadata forbidden', () => {
    for (const address of ['127.0.0.1', '10.0.0.1', '::1', '192.168.1.1', 'fd12::1'])
      expect(isForbiddenAddress(address, 'private')).toBe(false);
    for (const address of ['169.254.169.254', 'fe80::1', 'fd00:ec2::254', '100.100.100.200', '0.0.0.0', '::']) {
      expect(isForbiddenAddress(address, 'private')).toBe(true);
    }
  });
});

describe('configuration', () => {
  it('ALLOW_PRIVATE_OUTBOUND and ALLOW_INSECURE_JWKS are separate flags', () => {
    expect(loadConfig({ ALLOW_INSECURE_JWKS: 'true' })).toMatchObject({
      allowInsecureJwks: true,
      allowPrivateOutbound: false,
    });
    expect(loadConfig({ ALLOW_PRIVATE_OUTBOUND: 'true' })).toMatchObject({
      allowInsecureJwks: false,
      allowPrivateOutbound: true,
    });
    expect(() => loadConfig({ ALLOW_PRIVATE_OUTBOUND: 'maybe' })).toThrow(
      'ALLOW_PRIVATE_OUTBOUND must be true or false',
    );
  });

  it('ALLOW_INSECURE_JWKS still opens JWKS URLs', () => {
    expect(validateJwksUrl('http://127.0.0.1:9/jwks', true)).toBeUndefined();
    expect(validateJwksUrl('http://127.0.0.1:9/jwks', false)).toBe('JWKS URL must use https');
  });
});

describe('checkOutboundUrl and isForbiddenAddress: edges StrykerJS found unpinned', () => {
  it('reads a boolean policy as any (true) or public (false)', () => {
    expect(checkOutboundUrl('http://10.0.0.1/x', true, 'URL')).toBeUndefined();
    expect(checkOutboundUrl('http://10.0.0.1/x', false, 'URL')).toBe('URL must use https');
    expect(checkOutboundUrl('https://localhost/x', 'any', 'URL')).toBeUndefined();
    expect(checkOutboundUrl('https://169.254.169.254/x', 'any', 'URL')).toBeUndefined();
  });

  it(`takes a URL of exactly ${MAX_URL_LENGTH} characters, not one more`, () => {
    const base = 'https://example.com/';
    const exact = base + 'a'.repeat(MAX_URL_LENGTH - base.length);
    expect(checkOutboundUrl(exact, 'public', 'URL')).toBeUndefined();
    expect(checkOutboundUrl(exact + 'a', 'public', 'URL')).toBe(`URL must be at most ${MAX_URL_LENGTH} characters`);
  });

  it('refuses a user name or a password alone', () => {
    expect(checkOutboundUrl('https://user@example.com/', 'public', 'URL')).toBe('URL must not contain credentials');
    expect(checkOutboundUrl('https://:secret@example.com/', 'public', 'URL')).toBe('URL must not contain credentials');
  });

  it('shows an invalid URL whole up to 100 characters, cut with … beyond', () => {
    const exact = 'x'.repeat(100);
    expect(validateOutboundUrl(exact, false)).toBe(`"${exact}" is not a valid absolute URL`);
    expect(validateOutboundUrl(exact + 'yz', false)).toBe(`"${exact}…" is not a valid absolute URL`);
  });

  it('allows public IPv6 addresses, with a zone id too, and a NAT64 or 6to4 form of a public IPv4 address', () => {
    for (const address of [
      '2001:4860:4860::8888',
      '2606:4700:4700::1111',
      '2001:4860:4860::8888%eth0',
      '64:ff9b::808:808',
      '2002:808:808::1',
    ]) {
      expect([address, isForbiddenAddress(address)]).toStrictEqual([address, false]);
    }
    expect(isForbiddenAddress('8.8.8.8%eth0')).toBe(false);
    expect(isForbiddenAddress('10.0.0.1%eth0')).toBe(true);
  });
});
