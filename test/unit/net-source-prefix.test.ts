/** The key the token endpoint's per-source limit counts under (src/net/cidr.ts `sourcePrefix`). */
import { sourcePrefix } from '../../src/net/cidr';

describe('sourcePrefix', () => {
  it.each([
    ['203.0.113.9', '203.0.113.9'],
    ['::ffff:203.0.113.9', '203.0.113.9'],
    ['2001:db8:1:2::a', '2001:db8:1:2::/64'],
    ['2001:db8:1:2:ffff:ffff:ffff:ffff', '2001:db8:1:2::/64'],
    ['2001:DB8:1:2:0:0:0:1', '2001:db8:1:2::/64'],
    ['2001:db8:1:3::1', '2001:db8:1:3::/64'],
    ['fe80::1%eth0', 'fe80::/64'],
    ['::1', '::/64'],
    ['not an address', 'not an address'],
    ['', ''],
    // A zone id alone leaves no address: the text before it, empty.
    ['%eth0', ''],
    // Text that is no address is cut at 64 characters.
    ['x'.repeat(100), 'x'.repeat(64)],
  ])('%s → %s', (address, key) => {
    expect(sourcePrefix(address)).toBe(key);
  });
});
