import ipaddr from 'ipaddr.js';

type Range = readonly [cidr: string, label: string];

/**
 * IPv4 ranges a webhook may never reach unless allowlisted: everything that is not public unicast.
 * Order matters: the first match names the range, so narrower ranges come before the ones holding them.
 */
const IPV4_REFUSED: readonly Range[] = [
  ['169.254.169.254/32', 'the cloud metadata address (link-local 169.254.0.0/16)'],
  ['255.255.255.255/32', 'the broadcast address'],
  ['0.0.0.0/8', 'a "this network" address (0.0.0.0/8)'],
  ['10.0.0.0/8', 'a private address (10.0.0.0/8)'],
  ['100.64.0.0/10', 'a carrier-grade NAT address (100.64.0.0/10)'],
  ['127.0.0.0/8', 'a loopback address (127.0.0.0/8)'],
  ['169.254.0.0/16', 'a link-local address (169.254.0.0/16)'],
  ['172.16.0.0/12', 'a private address (172.16.0.0/12)'],
  ['192.0.0.0/24', 'an IETF protocol assignment address (192.0.0.0/24)'],
  ['192.0.2.0/24', 'a documentation address (192.0.2.0/24)'],
  ['192.88.99.0/24', 'a 6to4 relay anycast address (192.88.99.0/24)'],
  ['192.168.0.0/16', 'a private address (192.168.0.0/16)'],
  ['198.18.0.0/15', 'a benchmarking address (198.18.0.0/15)'],
  ['198.51.100.0/24', 'a documentation address (198.51.100.0/24)'],
  ['203.0.113.0/24', 'a documentation address (203.0.113.0/24)'],
  ['224.0.0.0/4', 'a multicast address (224.0.0.0/4)'],
  ['240.0.0.0/4', 'a reserved address (240.0.0.0/4)'],
];

/** IPv6 ranges refused outright; those embedding an IPv4 address are judged by that address instead. */
const IPV6_REFUSED: readonly Range[] = [
  ['::/128', 'the unspecified address (::)'],
  ['::1/128', 'the loopback address (::1)'],
  ['::/96', 'an IPv4-compatible address (::/96, deprecated)'],
  ['64:ff9b:1::/48', 'a local-use NAT64 address (64:ff9b:1::/48)'],
  ['100::/64', 'a discard-only address (100::/64)'],
  ['2001:db8::/32', 'a documentation address (2001:db8::/32)'],
  ['fc00::/7', 'a unique local address (fc00::/7)'],
  ['fe80::/10', 'a link-local address (fe80::/10)'],
  ['fec0::/10', 'a site-local address (fec0::/10, deprecated)'],
  ['ff00::/8', 'a multicast address (ff00::/8)'],
];

const parsedRanges = <T extends ipaddr.IPv4 | ipaddr.IPv6>(ranges: readonly Range[]) =>
  ranges.map(([cidr, label]) => ({ range: ipaddr.parseCIDR(cidr) as [T, number], label }));
/** The refused IPv4 ranges, parsed, each with how a refusal names it. */
export const IPV4_RANGES = parsedRanges<ipaddr.IPv4>(IPV4_REFUSED);
/** The refused IPv6 ranges, parsed. */
export const IPV6_RANGES = parsedRanges<ipaddr.IPv6>(IPV6_REFUSED);
/** Where every public IPv6 unicast address lies. */
export const GLOBAL_UNICAST = ipaddr.IPv6.parseCIDR('2000::/3');

/** IPv6 forms that carry an IPv4 address (mapped, translated, NAT64, 6to4, Teredo), and where it sits. */
export function embeddedIpv4(address: ipaddr.IPv6): { ipv4: ipaddr.IPv4[]; form: string } | undefined {
  const [a = 0, b = 0, c = 0, d = 0, e = 0, f = 0, g = 0, h = 0] = address.parts;
  const v4 = (high: number, low: number) => new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff]);
  const prefix96Zero = a === 0 && b === 0 && c === 0 && d === 0;
  if (prefix96Zero && e === 0 && f === 0xffff) return { ipv4: [v4(g, h)], form: 'an IPv4-mapped address' };
  if (prefix96Zero && e === 0xffff && f === 0)
    return { ipv4: [v4(g, h)], form: 'an IPv4-translated address' };
  if (a === 0x64 && b === 0xff9b && c === 0 && d === 0 && e === 0 && f === 0)
    return { ipv4: [v4(g, h)], form: 'a NAT64 address (64:ff9b::/96)' };
  if (a === 0x2002) return { ipv4: [v4(b, c)], form: 'a 6to4 address (2002::/16)' };
  // Teredo: the server's IPv4 in bits 32-63, the client's (inverted) in the last 32 bits.
  if (a === 0x2001 && b === 0)
    return { ipv4: [v4(c, d), v4(~g & 0xffff, ~h & 0xffff)], form: 'a Teredo address (2001::/32)' };
  return undefined;
}
