/**
 * Edges of the CIDR check (src/net/cidr.ts) that the cases and property tests of
 * webhooks-cidr.test.ts did not pin, found as mutants StrykerJS left alive (docs/testing.md#mutation-testing):
 * which IPv6 addresses count as IPv4-mapped (and so match IPv4 ranges), the
 * bytes of a dotted IPv4 tail, the longest address text, `::` standing for at least one group and
 * appearing at most once, the 100-entry limit and the refusal reasons.
 */
import { formatIp, isAddressAllowed, parseCidrList, parseIp } from '../../src/net/cidr';

describe('IPv4-mapped addresses', () => {
  it.each([
    // Only ::ffff:0:0/96 is mapped: a non-zero byte before the ffff, or half of it, is plain IPv6.
    ['1::ffff:a00:1', false],
    ['::1:0:ffff:a00:1', false],
    ['::ff:a00:1', false],
    ['::ff00:a00:1', false],
    ['::a00:1', false],
    ['::ffff:a00:1', true],
    ['::ffff:10.0.0.1', true],
  ])('%s is in 10.0.0.0/8: %s', (address, allowed) => {
    expect(isAddressAllowed(address, ['10.0.0.0/8'])).toBe(allowed);
  });

  it.each([
    ['1::ffff:a00:1', '1::ffff:a00:1'],
    ['::ff:a00:1', '::ff:a00:1'],
    ['::ff00:a00:1', '::ff00:a00:1'],
    ['::ffff:a00:1', '::ffff:10.0.0.1'],
  ])('formats %s as %s', (input, output) => {
    const ip = parseIp(input);
    expect(ip && formatIp(ip)).toBe(output);
  });
});

describe('IPv6 text', () => {
  it('reads every byte of a dotted IPv4 tail', () => {
    expect(Array.from(parseIp('::ffff:1.2.3.4')?.bytes ?? [])).toEqual([
      0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 1, 2, 3, 4,
    ]);
    const ip = parseIp('64:ff9b::192.0.2.33');
    expect(ip && formatIp(ip)).toBe('64:ff9b::c000:221');
  });

  it('accepts the longest address text (45 characters)', () => {
    const text = 'ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255';
    expect(text).toHaveLength(45);
    const ip = parseIp(text);
    expect(ip && formatIp(ip)).toBe('ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff');
  });

  it.each(['1:2:3:4::5:6:7:8', '::1:2:3:4:5:6:7:8', '1:2:3:4::5:6:7:8::9', '1::2::3', '1:2:3:4:5:6:7:8::'])(
    'refuses %s',
    (text) => {
      expect(parseIp(text)).toBeUndefined();
      expect(parseCidrList([text])).toEqual({ ok: false, index: 0, error: 'not an IPv4 or IPv6 address' });
      expect(isAddressAllowed(text, ['::/0'])).toBe(false);
    },
  );
});

describe('allow-lists', () => {
  it('accepts exactly 100 entries and refuses 101 with the reason', () => {
    const entries = Array.from({ length: 101 }, (_, i) => `10.${i}.0.0/16`);
    const hundred = parseCidrList(entries.slice(0, 100));
    expect(hundred.ok && hundred.cidrs).toHaveLength(100);
    expect(parseCidrList(entries)).toEqual({ ok: false, index: 100, error: 'at most 100 entries are allowed' });
  });

  it('says why a value that is not an array is refused', () => {
    expect(parseCidrList({ 0: '10.0.0.0/8', length: 1 })).toEqual({
      ok: false,
      index: -1,
      error: 'must be an array of CIDR strings',
    });
  });

  it('trims the entries it is given at request time as on save', () => {
    expect(isAddressAllowed('10.1.2.3', [' 10.0.0.0/8 '])).toBe(true);
    expect(isAddressAllowed('11.1.2.3', [' 10.0.0.0/8 '])).toBe(false);
  });
});
