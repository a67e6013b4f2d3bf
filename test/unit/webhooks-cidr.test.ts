import net from 'node:net';
import fc from 'fast-check';
import { formatIp, isAddressAllowed, parseCidrList, parseIp } from '../../src/net/cidr';

describe('parseCidrList', () => {
  it('normalises IPv4 and IPv6 entries', () => {
    expect(
      parseCidrList([
        '203.0.113.0/24',
        '10.1.2.3/8',
        '192.0.2.7',
        '0.0.0.0/0',
        '2001:DB8:0:0:0:0:0:1/32',
        '2001:db8::1',
        '::/0',
        '::ffff:10.0.0.1/104',
        ' 198.51.100.0/24 ',
      ]),
    ).toEqual({
      ok: true,
      cidrs: [
        '203.0.113.0/24',
        '10.0.0.0/8',
        '192.0.2.7/32',
        '0.0.0.0/0',
        '2001:db8::/32',
        '2001:db8::1/128',
        '::/0',
        '::ffff:10.0.0.0/104',
        '198.51.100.0/24',
      ],
    });
  });

  it('accepts an empty list and drops duplicates', () => {
    expect(parseCidrList([])).toEqual({ ok: true, cidrs: [] });
    expect(parseCidrList(['10.0.0.1/8', '10.0.0.0/8'])).toEqual({ ok: true, cidrs: ['10.0.0.0/8'] });
  });

  it.each([
    [['10.0.0.0/8', 'nonsense'], 1],
    [['10.0.0.0/33'], 0],
    [['10.0.0.0/-1'], 0],
    [['10.0.0.0/'], 0],
    [['10.0.0.0/08'], 0],
    [['10.0.0.0/8/8'], 0],
    [['256.0.0.0/8'], 0],
    [['10.0.0/8'], 0],
    [['010.0.0.0/8'], 0],
    [['1.2.3.4.5'], 0],
    [['::/129'], 0],
    [['1::2::3/64'], 0],
    [['fe80::1%eth0/64'], 0],
    [['2001:db8:::1/64'], 0],
    [['1:2:3:4:5:6:7:8:9/64'], 0],
    [['10.0.0.0/8', '192.168.0.0/16', 42], 2],
    [['10.0.0.0/8', null], 1],
    [[''], 0],
    [['example.com/24'], 0],
  ])('refuses %j at index %i', (list, index) => {
    const result = parseCidrList(list);
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.index).toBe(index);
      expect(result.error).not.toBe('');
    }
  });

  it('refuses a value that is not an array', () => {
    expect(parseCidrList('10.0.0.0/8')).toMatchObject({ ok: false, index: -1 });
    expect(parseCidrList(undefined)).toMatchObject({ ok: false, index: -1 });
  });

  it('refuses more than 100 entries', () => {
    expect(parseCidrList(Array.from({ length: 101 }, (_, i) => `10.0.${i}.0/24`))).toMatchObject({
      ok: false,
      index: 100,
    });
  });

  it('normalising twice changes nothing', () => {
    const v4 = fc.tuple(fc.ipV4(), fc.integer({ min: 0, max: 32 })).map(([a, p]) => `${a}/${p}`);
    const v6 = fc.tuple(fc.ipV6(), fc.integer({ min: 0, max: 128 })).map(([a, p]) => `${a}/${p}`);
    fc.assert(
      fc.property(fc.array(fc.oneof(v4, v6), { maxLength: 10 }), (list) => {
        const once = parseCidrList(list);
        expect(once.ok).toBe(true);
        if (once.ok) expect(parseCidrList(once.cidrs)).toEqual(once);
      }),
    );
  });
});

describe('parseIp / formatIp', () => {
  it.each([
    ['::', '::'],
    ['::1', '::1'],
    ['1:0:0:1:0:0:0:1', '1:0:0:1::1'],
    ['2001:0DB8:0000:0000:0000:ff00:0042:8329', '2001:db8::ff00:42:8329'],
    ['1:2:3:4:5:6:7::', '1:2:3:4:5:6:7:0'],
    ['::FFFF:192.0.2.1', '::ffff:192.0.2.1'],
    ['::ffff:c000:201', '::ffff:192.0.2.1'],
  ])('formats %s as %s', (input, output) => {
    const ip = parseIp(input);
    expect(ip && formatIp(ip)).toBe(output);
  });

  it('agrees with node:net on generated addresses', () => {
    fc.assert(
      fc.property(fc.oneof(fc.ipV4(), fc.ipV6(), fc.string({ maxLength: 45 })), (text) => {
        expect(parseIp(text) !== undefined).toBe(net.isIP(text) !== 0);
      }),
      { numRuns: 2000 },
    );
  });
});

describe('isAddressAllowed', () => {
  it('allows everything with an empty list', () => {
    expect(isAddressAllowed('198.51.100.1', [])).toBe(true);
    expect(isAddressAllowed('not an address', [])).toBe(true);
  });

  it('matches IPv4 ranges', () => {
    const list = ['203.0.113.0/24', '10.0.0.0/8'];
    expect(isAddressAllowed('203.0.113.0', list)).toBe(true);
    expect(isAddressAllowed('203.0.113.255', list)).toBe(true);
    expect(isAddressAllowed('203.0.114.0', list)).toBe(false);
    expect(isAddressAllowed('10.255.255.255', list)).toBe(true);
    expect(isAddressAllowed('11.0.0.0', list)).toBe(false);
  });

  it('handles prefixes that do not end on a byte', () => {
    expect(isAddressAllowed('172.31.255.255', ['172.16.0.0/12'])).toBe(true);
    expect(isAddressAllowed('172.32.0.0', ['172.16.0.0/12'])).toBe(false);
    expect(isAddressAllowed('172.15.255.255', ['172.16.0.0/12'])).toBe(false);
  });

  it('matches single hosts and /0', () => {
    expect(isAddressAllowed('192.0.2.7', ['192.0.2.7/32'])).toBe(true);
    expect(isAddressAllowed('192.0.2.8', ['192.0.2.7/32'])).toBe(false);
    expect(isAddressAllowed('8.8.8.8', ['0.0.0.0/0'])).toBe(true);
    expect(isAddressAllowed('2001:db8::1', ['0.0.0.0/0'])).toBe(false);
    expect(isAddressAllowed('2001:db8::1', ['::/0'])).toBe(true);
  });

  it('matches IPv6 ranges', () => {
    const list = ['2001:db8::/32'];
    expect(isAddressAllowed('2001:db8::1', list)).toBe(true);
    expect(isAddressAllowed('2001:DB8:ffff::1', list)).toBe(true);
    expect(isAddressAllowed('2001:db9::1', list)).toBe(false);
    expect(isAddressAllowed('fe80::1%eth0', ['fe80::/10'])).toBe(true);
  });

  it('matches IPv4-mapped IPv6 peers against IPv4 ranges and the reverse', () => {
    expect(isAddressAllowed('::ffff:127.0.0.1', ['127.0.0.0/8'])).toBe(true);
    expect(isAddressAllowed('::ffff:7f00:1', ['127.0.0.0/8'])).toBe(true);
    expect(isAddressAllowed('::ffff:128.0.0.1', ['127.0.0.0/8'])).toBe(false);
    expect(isAddressAllowed('127.0.0.1', ['::ffff:127.0.0.0/104'])).toBe(true);
    expect(isAddressAllowed('::1', ['127.0.0.0/8'])).toBe(false);
  });

  it('refuses unparseable addresses when a list is set', () => {
    expect(isAddressAllowed('', ['0.0.0.0/0'])).toBe(false);
    expect(isAddressAllowed('localhost', ['0.0.0.0/0'])).toBe(false);
  });

  it('agrees with node:net BlockList', () => {
    fc.assert(
      fc.property(fc.ipV4(), fc.integer({ min: 0, max: 32 }), fc.ipV4(), (network, prefix, address) => {
        const blocks = new net.BlockList();
        blocks.addSubnet(network, prefix, 'ipv4');
        expect(isAddressAllowed(address, [`${network}/${prefix}`])).toBe(blocks.check(address, 'ipv4'));
      }),
      { numRuns: 2000 },
    );
    fc.assert(
      fc.property(fc.ipV6(), fc.integer({ min: 0, max: 128 }), fc.ipV6(), (network, prefix, address) => {
        const blocks = new net.BlockList();
        blocks.addSubnet(network, prefix, 'ipv6');
        expect(isAddressAllowed(address, [`${network}/${prefix}`])).toBe(blocks.check(address, 'ipv6'));
      }),
      { numRuns: 2000 },
    );
  });
});
