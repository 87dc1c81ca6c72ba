import type { IncomingHttpHeaders } from 'node:http';
import { isIP } from 'node:net';
import type { Request } from 'express';
import ipaddr from 'ipaddr.js';

/** Which header the trusted proxies put the client's address in. */
export type ForwardedHeader = 'x-forwarded-for' | 'forwarded';

/** The proxies whose forwarding header is believed, parsed once (see `trustedProxies`). */
export interface TrustedProxies {
  readonly ranges: readonly [ipaddr.IPv4 | ipaddr.IPv6, number][];
  readonly header: ForwardedHeader;
}

/** No proxy is trusted: the client address is the socket's peer. */
export const NO_TRUSTED_PROXIES: TrustedProxies = { ranges: [], header: 'x-forwarded-for' };

/** Where `clientAddress` finds the app's trusted proxies (set by createApp). */
export const TRUSTED_PROXIES_SETTING = 'trustedProxies';

/** Whether ipaddr.js parses `cidr` as a CIDR or a single address (which stands for /32 or /128). */
export function isProxyRange(cidr: string): boolean {
  try {
    parseRange(cidr);
    return true;
  } catch {
    return false;
  }
}

/** `cidrs` (`10.0.0.0/8`, or a single address) parsed; throws on one that does not parse. */
export function trustedProxies(
  cidrs: readonly string[],
  header: ForwardedHeader = 'x-forwarded-for',
): TrustedProxies {
  return { ranges: cidrs.map(parseRange), header };
}

function parseRange(cidr: string): [ipaddr.IPv4 | ipaddr.IPv6, number] {
  // Dotted quads and IPv6 in their usual forms only: ipaddr.js also reads `10.0.0/8` or `0x7f.1`.
  if (isIP(cidr.split('/')[0] ?? '') === 0 || !/^[^/]+(\/[0-9]{1,3})?$/.test(cidr)) {
    throw new Error(`not a CIDR: ${cidr}`);
  }
  if (cidr.includes('/')) return ipaddr.parseCIDR(cidr);
  const address = ipaddr.parse(cidr);
  return [address, address.kind() === 'ipv4' ? 32 : 128];
}

/**
 * The address of the client that sent `req`: the socket's peer, unless the peer is a trusted proxy
 * (`TRUSTED_PROXIES`); then the configured forwarding header is read right to left, past every hop that
 * is itself a trusted proxy, and the first address that is not one is the client. A client cannot choose
 * its address by sending the header itself: a peer that is not a trusted proxy is never asked, and what a
 * client wrote lies left of what the trusted proxies appended. An entry that is not an address (`unknown`,
 * an obfuscated `_node`, garbage) ends the walk at the last trusted hop.
 */
export function clientAddress(req: Request): string {
  const trusted = (req.app?.get(TRUSTED_PROXIES_SETTING) as TrustedProxies | undefined) ?? NO_TRUSTED_PROXIES;
  return clientAddressOf(req.socket.remoteAddress ?? '', req.headers, trusted);
}

/** `clientAddress` for a peer address and request headers (tested on its own). */
export function clientAddressOf(peer: string, headers: IncomingHttpHeaders, trusted: TrustedProxies): string {
  const peerAddress = normalised(peer);
  if (peerAddress === undefined) return peer;
  if (!isTrusted(peerAddress, trusted)) return peerAddress.toString();
  const hops = trusted.header === 'forwarded' ? forwardedFor(headers.forwarded) : xForwardedFor(headers);
  let client = peerAddress;
  for (let index = hops.length - 1; index >= 0; index--) {
    const hop = normalised(hops[index] ?? '');
    if (hop === undefined) break;
    client = hop;
    if (!isTrusted(hop, trusted)) break;
  }
  return client.toString();
}

/** An address as ipaddr.js parses it, an IPv4-mapped IPv6 address as its IPv4 one; undefined if none. */
function normalised(text: string): ipaddr.IPv4 | ipaddr.IPv6 | undefined {
  if (isIP(text) === 0) return undefined;
  const address = ipaddr.parse(text);
  return address.kind() === 'ipv6' && (address as ipaddr.IPv6).isIPv4MappedAddress()
    ? (address as ipaddr.IPv6).toIPv4Address()
    : address;
}

function isTrusted(address: ipaddr.IPv4 | ipaddr.IPv6, trusted: TrustedProxies): boolean {
  return trusted.ranges.some(
    ([network, bits]) => address.kind() === network.kind() && address.match(network, bits),
  );
}

/** The hops of every `X-Forwarded-For` header, in order (Node joins repeated ones with `, `). */
function xForwardedFor(headers: IncomingHttpHeaders): string[] {
  const value = headers['x-forwarded-for'];
  if (value === undefined) return [];
  return (Array.isArray(value) ? value.join(',') : value).split(',').map((hop) => hop.trim());
}

/**
 * The `for=` of each element of `Forwarded` (RFC 7239), in order: `for=192.0.2.1`, `for="[2001:db8::1]:4711"`,
 * `for="192.0.2.1:80"`. An element without `for=` counts as a hop that is not an address.
 */
function forwardedFor(value: string | undefined): string[] {
  if (value === undefined) return [];
  return value.split(',').map((element) => {
    for (const pair of element.split(';')) {
      const [name, ...rest] = pair.split('=');
      if (name?.trim().toLowerCase() !== 'for') continue;
      let node = rest.join('=').trim();
      if (node.startsWith('"') && node.endsWith('"') && node.length >= 2) node = node.slice(1, -1);
      if (node.startsWith('['))
        return node.slice(1, node.indexOf(']') === -1 ? undefined : node.indexOf(']'));
      // IPv4 with a port: one colon. A bare IPv6 address (not allowed unquoted, but seen) has several.
      const colons = node.split(':').length - 1;
      return colons === 1 ? node.slice(0, node.indexOf(':')) : node;
    }
    return '';
  });
}
