/**
 * IP addresses and CIDR ranges, IPv4 and IPv6, in plain bit math: save-time validation and
 * normalisation of a listener's `allowedCidrs`, and the source-address check (403) at request
 * time. IPv4-mapped IPv6 addresses (`::ffff:a.b.c.d`, as dual-stack sockets report IPv4 peers)
 * match IPv4 ranges.
 */

export interface IpAddress {
  family: 4 | 6;
  /** 4 or 16 bytes, network order. */
  bytes: Uint8Array;
}

export interface Cidr extends IpAddress {
  prefix: number;
}

/** Most entries accepted in one allow-list. */
export const MAX_CIDRS = 100;

const IPV4_OCTET = /^(0|[1-9][0-9]{0,2})$/;
const IPV6_GROUP = /^[0-9a-f]{1,4}$/i;
const PREFIX = /^(0|[1-9][0-9]{0,2})$/;

/** Parses a dotted-quad IPv4 or an RFC 4291 IPv6 address (no zone id); undefined if invalid. */
export function parseIp(text: string): IpAddress | undefined {
  if (text.includes(':')) {
    const bytes = parseIpv6(text);
    return bytes && { family: 6, bytes };
  }
  const bytes = parseIpv4(text);
  return bytes && { family: 4, bytes };
}

function parseIpv4(text: string): Uint8Array | undefined {
  const parts = text.split('.');
  if (parts.length !== 4) return undefined;
  const bytes = new Uint8Array(4);
  for (let i = 0; i < 4; i++) {
    const part = parts[i] ?? '';
    if (!IPV4_OCTET.test(part)) return undefined;
    const value = Number(part);
    if (value > 255) return undefined;
    bytes[i] = value;
  }
  return bytes;
}

function parseIpv6(text: string): Uint8Array | undefined {
  if (text.length > 45) return undefined;
  let hexText = text;
  if (text.includes('.')) {
    // A dotted IPv4 tail ("::ffff:1.2.3.4") stands for the last two groups.
    const cut = text.lastIndexOf(':');
    const tail = parseIpv4(text.slice(cut + 1));
    if (!tail) return undefined;
    const hi = (((tail[0] ?? 0) << 8) | (tail[1] ?? 0)).toString(16);
    const lo = (((tail[2] ?? 0) << 8) | (tail[3] ?? 0)).toString(16);
    hexText = `${text.slice(0, cut + 1)}${hi}:${lo}`;
  }
  const halves = hexText.split('::');
  if (halves.length > 2) return undefined;
  const head = groupsOf(halves[0]);
  const rest = groupsOf(halves[1]);
  if (!head || !rest) return undefined;
  const known = head.length + rest.length;
  // "::" stands for at least one zero group.
  if (halves.length === 2 ? known > 7 : known !== 8) return undefined;
  const all = [...head, ...new Array<number>(8 - known).fill(0), ...rest];
  const bytes = new Uint8Array(16);
  all.forEach((group, i) => {
    bytes[2 * i] = group >> 8;
    bytes[2 * i + 1] = group & 0xff;
  });
  return bytes;
}

function groupsOf(part: string | undefined): number[] | undefined {
  if (part === undefined || part === '') return [];
  const out: number[] = [];
  for (const group of part.split(':')) {
    if (!IPV6_GROUP.test(group)) return undefined;
    out.push(parseInt(group, 16));
  }
  return out;
}

/** Canonical text: dotted quad, or RFC 5952 IPv6 (mapped IPv4 as `::ffff:a.b.c.d`). */
export function formatIp(ip: IpAddress): string {
  const b = ip.bytes;
  if (ip.family === 4) return Array.from(b).join('.');
  if (isMapped(b)) return `::ffff:${Array.from(b.subarray(12)).join('.')}`;
  const groups: number[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(((b[i] ?? 0) << 8) | (b[i + 1] ?? 0));
  let bestStart = -1;
  let bestLength = 1;
  for (let i = 0; i < 8;) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLength) {
      bestStart = i;
      bestLength = j - i;
    }
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (bestStart < 0) return hex.join(':');
  return `${hex.slice(0, bestStart).join(':')}::${hex.slice(bestStart + bestLength).join(':')}`;
}

/** Parses `address/prefix` (a bare address is a single host) and clears the host bits. */
export function parseCidr(text: string): Cidr | { error: string } {
  const slash = text.indexOf('/');
  const addressText = slash < 0 ? text : text.slice(0, slash);
  const ip = parseIp(addressText);
  if (!ip) return { error: 'not an IPv4 or IPv6 address' };
  const max = ip.family === 4 ? 32 : 128;
  let prefix = max;
  if (slash >= 0) {
    const prefixText = text.slice(slash + 1);
    if (!PREFIX.test(prefixText) || Number(prefixText) > max) {
      return { error: `prefix length must be an integer from 0 to ${max}` };
    }
    prefix = Number(prefixText);
  }
  return { family: ip.family, bytes: mask(ip.bytes, prefix), prefix };
}

/** Canonical `network/prefix` text of a CIDR. */
export function formatCidr(cidr: Cidr): string {
  return `${formatIp(cidr)}/${cidr.prefix}`;
}

/**
 * Save-time validation of an allow-list: an array (at most MAX_CIDRS) of IPv4/IPv6 CIDR strings or
 * bare addresses. On success, every entry normalised to `network/prefix`, duplicates dropped; on
 * failure, the index of the first bad entry (-1 when the list itself is not an array).
 */
export function parseCidrList(
  list: unknown,
): { ok: true; cidrs: string[] } | { ok: false; index: number; error: string } {
  if (!Array.isArray(list)) return { ok: false, index: -1, error: 'must be an array of CIDR strings' };
  if (list.length > MAX_CIDRS)
    return { ok: false, index: MAX_CIDRS, error: `at most ${MAX_CIDRS} entries are allowed` };
  const cidrs: string[] = [];
  for (let index = 0; index < list.length; index++) {
    const entry: unknown = list[index];
    if (typeof entry !== 'string') return { ok: false, index, error: 'must be a string' };
    const parsed = parseCidr(entry.trim());
    if ('error' in parsed) return { ok: false, index, error: parsed.error };
    const text = formatCidr(parsed);
    if (!cidrs.includes(text)) cidrs.push(text);
  }
  return { ok: true, cidrs };
}

/** True when `cidr` contains `ip` (same family only; see `addressForms` for mapped addresses). */
export function cidrContains(cidr: Cidr, ip: IpAddress): boolean {
  if (cidr.family !== ip.family) return false;
  const full = cidr.prefix >> 3;
  for (let i = 0; i < full; i++) {
    if (cidr.bytes[i] !== ip.bytes[i]) return false;
  }
  const bits = cidr.prefix & 7;
  if (bits === 0) return true;
  const m = (0xff << (8 - bits)) & 0xff;
  return ((cidr.bytes[full] ?? 0) & m) === ((ip.bytes[full] ?? 0) & m);
}

/**
 * The forms under which an address is matched: an IPv4 address also as `::ffff:a.b.c.d`, and an
 * IPv4-mapped IPv6 address also as plain IPv4.
 */
export function addressForms(ip: IpAddress): IpAddress[] {
  if (ip.family === 4) {
    const mapped = new Uint8Array(16);
    mapped[10] = 0xff;
    mapped[11] = 0xff;
    mapped.set(ip.bytes, 12);
    return [ip, { family: 6, bytes: mapped }];
  }
  if (isMapped(ip.bytes)) return [{ family: 4, bytes: ip.bytes.slice(12) }, ip];
  return [ip];
}

const parsedCache = new Map<string, Cidr | undefined>();

/**
 * Source-address check: true when `cidrs` is empty or one of them contains `address` (a socket
 * peer address; a zone id such as `%eth0` is ignored). An unparseable address is not allowed.
 */
export function isAddressAllowed(address: string, cidrs: string[]): boolean {
  if (cidrs.length === 0) return true;
  const zone = address.indexOf('%');
  const ip = parseIp(zone < 0 ? address : address.slice(0, zone));
  if (!ip) return false;
  const forms = addressForms(ip);
  for (const text of cidrs) {
    const cidr = cachedCidr(text);
    if (cidr && forms.some((form) => cidrContains(cidr, form))) return true;
  }
  return false;
}

function cachedCidr(text: string): Cidr | undefined {
  if (parsedCache.has(text)) return parsedCache.get(text);
  const parsed = parseCidr(text.trim());
  const cidr = 'error' in parsed ? undefined : parsed;
  if (parsedCache.size >= 10_000) parsedCache.clear();
  parsedCache.set(text, cidr);
  return cidr;
}

function mask(bytes: Uint8Array, prefix: number): Uint8Array {
  const out = new Uint8Array(bytes.length);
  for (let i = 0; i < bytes.length; i++) {
    const bits = Math.max(0, Math.min(8, prefix - 8 * i));
    out[i] = (bytes[i] ?? 0) & ((0xff << (8 - bits)) & 0xff);
  }
  return out;
}

function isMapped(b: Uint8Array): boolean {
  for (let i = 0; i < 10; i++) if (b[i] !== 0) return false;
  return b[10] === 0xff && b[11] === 0xff;
}

/**
 * The key a per-source limit counts under: an IPv4 address (also when IPv4-mapped) as itself, an
 * IPv6 address as its /64 (`2001:db8:1:2::/64`), since one host or site commonly holds a whole /64
 * and could otherwise take a fresh address for every request. Text that is no address (a zone id
 * `%eth0` is dropped first) is its own key.
 */
export function sourcePrefix(address: string): string {
  const zone = address.indexOf('%');
  const bare = zone >= 0 ? address.slice(0, zone) : address;
  const ip = parseIp(bare);
  if (!ip) return bare.slice(0, 64);
  const plain = addressForms(ip)[0] ?? ip;
  if (plain.family === 4) return formatIp(plain);
  const network = new Uint8Array(16);
  network.set(plain.bytes.subarray(0, 8));
  return formatCidr({ family: 6, bytes: network, prefix: 64 });
}
