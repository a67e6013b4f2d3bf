/**
 * The outbound policy: where the service may call out to (JWKS documents of webhook senders,
 * callWebhook steps). Checked on the URL when it is saved and again on every address a host
 * resolves to, at connect time, so that a name cannot lead to loopback, private, link-local or
 * metadata addresses.
 */
import dns from 'node:dns';
import type { LookupFunction } from 'node:net';
import { addressForms, cidrContains, parseCidr, parseIp, type Cidr, type IpAddress } from '../net/cidr';

export const MAX_URL_LENGTH = 2048;

const FORBIDDEN_RANGES: Cidr[] = [
  '0.0.0.0/8', // "this network", unspecified
  '10.0.0.0/8',
  '100.64.0.0/10', // carrier-grade NAT
  '127.0.0.0/8',
  '169.254.0.0/16', // link-local, cloud metadata (169.254.169.254)
  '172.16.0.0/12',
  '192.0.0.0/24',
  '192.168.0.0/16',
  '198.18.0.0/15',
  '224.0.0.0/4', // multicast
  '240.0.0.0/4', // reserved, broadcast
  '::/96', // unspecified, loopback, IPv4-compatible
  '100::/64', // discard
  'fc00::/7', // unique local (also fd00:ec2::254, a metadata address)
  'fe80::/10', // link-local
  'fec0::/10', // site-local
  'ff00::/8', // multicast
].map((text) => {
  const cidr = parseCidr(text);
  if ('error' in cidr) throw new Error(`bad built-in range ${text}`);
  return cidr;
});

/** Non-public ranges an outbound call may reach when private targets are allowed (ALLOW_PRIVATE_OUTBOUND). */
const PRIVATE_RANGES: Cidr[] = [
  '10.0.0.0/8',
  '100.64.0.0/10',
  '127.0.0.0/8',
  '172.16.0.0/12',
  '192.168.0.0/16',
  '::1/128',
  'fc00::/7',
].map((text) => parseCidr(text) as Cidr);

/** Cloud metadata endpoints outside the link-local ranges: refused even when private targets are allowed. */
const METADATA_RANGES: Cidr[] = ['fd00:ec2::254/128', '100.100.100.200/32'].map((text) => parseCidr(text) as Cidr);

/**
 * Where an outbound call may go. `public`: https, public addresses only. `private`: http or
 * https, loopback and private addresses too, never link-local, metadata, multicast or reserved
 * ones. `any`: no scheme or address rule at all (ALLOW_INSECURE_JWKS, JWKS URLs only).
 */
export type OutboundPolicy = 'public' | 'private' | 'any';

const NAT64 = parseCidr('64:ff9b::/96') as Cidr;
/** RFC 8215 local-use NAT64 prefix; a network may use any RFC 6052 prefix length within it. */
const NAT64_LOCAL = parseCidr('64:ff9b:1::/48') as Cidr;
/**
 * Where RFC 6052 puts the IPv4 address for prefix lengths /48, /56 and /64 (byte 8, bits 64-71,
 * is skipped); /96 is the last four bytes. The prefix length a network uses is unknown here, so
 * every position is decoded and any forbidden one forbids the address. A /48-/64 decoding that
 * starts with a zero byte is not taken as 0.0.0.0/8: it is what the zero bytes of the common
 * 64:ff9b:1::/96 layout read as, and no NAT64 gateway routes to "this network" anyway.
 */
const RFC6052_SHORT_PREFIX_IPV4_BYTES = [
  [6, 7, 9, 10],
  [7, 9, 10, 11],
  [9, 10, 11, 12],
];
const SIX_TO_FOUR = parseCidr('2002::/16') as Cidr;

/**
 * True for addresses a JWKS fetch must never reach: loopback, private, link-local (metadata),
 * unspecified, multicast and reserved ranges, also when wrapped in IPv4-mapped, NAT64 (the
 * well-known 64:ff9b::/96 and the local-use 64:ff9b:1::/48 of RFC 8215) or 6to4 IPv6 forms.
 * Unparseable text counts as forbidden. With the `private` policy, loopback and private ranges
 * are allowed, except metadata addresses.
 */
export function isForbiddenAddress(address: string, policy: Exclude<OutboundPolicy, 'any'> = 'public'): boolean {
  const zone = address.indexOf('%');
  const ip = parseIp(zone < 0 ? address : address.slice(0, zone));
  if (!ip) return true;
  const forms: IpAddress[] = [...addressForms(ip)];
  if (ip.family === 6 && cidrContains(NAT64, ip)) forms.push({ family: 4, bytes: ip.bytes.slice(12) });
  if (ip.family === 6 && cidrContains(NAT64_LOCAL, ip)) {
    forms.push({ family: 4, bytes: ip.bytes.slice(12) });
    for (const positions of RFC6052_SHORT_PREFIX_IPV4_BYTES) {
      const bytes = Uint8Array.from(positions, (i) => ip.bytes[i]!);
      if (bytes[0] !== 0) forms.push({ family: 4, bytes });
    }
  }
  if (ip.family === 6 && cidrContains(SIX_TO_FOUR, ip)) forms.push({ family: 4, bytes: ip.bytes.slice(2, 6) });
  const within = (ranges: Cidr[]) => (form: IpAddress) => ranges.some((range) => cidrContains(range, form));
  if (policy === 'public') return forms.some(within(FORBIDDEN_RANGES));
  if (forms.some(within(METADATA_RANGES))) return true;
  return forms.some((form) => within(FORBIDDEN_RANGES)(form) && !within(PRIVATE_RANGES)(form));
}

/**
 * The policy for every URL the service calls out to (JWKS documents, callWebhook steps): an
 * error message naming `label`, or undefined. Always: an absolute URL of bounded length, no
 * credentials. `public`: https only, no `localhost` or literal non-public IP host (names are
 * checked again when they resolve); `private`: http too, loopback and private hosts too, but no
 * literal link-local, metadata or reserved IP host; `any`: nothing more. A boolean is `any`
 * (true) or `public` (false).
 */
export function checkOutboundUrl(
  url: string,
  policy: OutboundPolicy | boolean,
  label: string,
  invalidMessage = `${label} is not a valid absolute URL`,
): string | undefined {
  const rule: OutboundPolicy = policy === true ? 'any' : policy === false ? 'public' : policy;
  if (url.length > MAX_URL_LENGTH) return `${label} must be at most ${MAX_URL_LENGTH} characters`;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return invalidMessage;
  }
  if (parsed.protocol !== 'https:' && !(rule !== 'public' && parsed.protocol === 'http:')) {
    return rule !== 'public' ? `${label} must use http or https` : `${label} must use https`;
  }
  if (parsed.username !== '' || parsed.password !== '') return `${label} must not contain credentials`;
  if (parsed.hostname === '') return `${label} must name a host`;
  if (rule === 'any') return undefined;
  const host = parsed.hostname.toLowerCase().replace(/\.$/, '');
  if (rule === 'public' && (host === 'localhost' || host.endsWith('.localhost')))
    return `${label} must not point to localhost`;
  const literal = host.startsWith('[') ? host.slice(1, -1) : host;
  if (parseIp(literal) && isForbiddenAddress(literal, rule)) {
    return rule === 'public'
      ? `${label} must not point to a loopback, private, link-local or other non-public address`
      : `${label} must not point to a link-local, metadata or other reserved address`;
  }
  return undefined;
}

/** Error code carried by the error `guardedLookup` reports for a refused host. */
export const ADDRESS_REFUSED = 'ERR_JWKS_ADDRESS_REFUSED';

/**
 * A `lookup` for sockets that resolves like `dns.lookup` but fails when any resolved address is
 * forbidden by `policy`, so the connection can only go to an address that was checked.
 */
export function guardedLookupFor(policy: Exclude<OutboundPolicy, 'any'>): LookupFunction {
  return (hostname, options, callback) => {
    dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) {
        callback(err, '', 0);
        return;
      }
      const first = addresses[0];
      if (first === undefined || addresses.some((entry) => isForbiddenAddress(entry.address, policy))) {
        const refused: NodeJS.ErrnoException = new Error(
          policy === 'public'
            ? 'JWKS host resolves to a non-public address'
            : 'host resolves to a link-local, metadata or other reserved address',
        );
        refused.code = ADDRESS_REFUSED;
        callback(refused, '', 0);
        return;
      }
      if (options.all) callback(null, addresses);
      else callback(null, first.address, first.family);
    });
  };
}

/** `guardedLookupFor('public')`: only public addresses. */
export const guardedLookup: LookupFunction = guardedLookupFor('public');

/**
 * Checks an outbound URL against the policy; returns an error message, or undefined when it may be
 * called. Without `allowPrivate`: https only, no `localhost`, no literal non-public IP; with it:
 * http too, loopback and private IPs too, never link-local, metadata or reserved ones (names are
 * checked again when they resolve).
 */
export function validateOutboundUrl(url: string, allowPrivate: boolean): string | undefined {
  const shown = JSON.stringify(url.length > 100 ? `${url.slice(0, 100)}…` : url);
  return checkOutboundUrl(url, allowPrivate ? 'private' : 'public', 'URL', `${shown} is not a valid absolute URL`);
}
