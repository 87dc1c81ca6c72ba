import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { buildConnector } from 'undici';
import { embeddedIpv4, GLOBAL_UNICAST, IPV4_RANGES, IPV6_RANGES } from './refused-address-ranges.js';

/**
 * The verdict on one address: allowed (and whether only because an allowlisted CIDR holds it, which also
 * permits plain http), or refused with the reason (which address, which range).
 */
export type AddressVerdict = { allowed: true; allowlisted: boolean } | { allowed: false; reason: string };

/** A CIDR as ipaddr.js parses it: the network and the prefix length. */
type ParsedCidr = [ipaddr.IPv4 | ipaddr.IPv6, number];

/** Allowlists already parsed, by identity: the configuration's list is parsed once, not per connection. */
const parsedAllowlists = new WeakMap<readonly string[], ParsedCidr[]>();

/** `allowedCidrs` parsed; readWebhookConfig refuses at start-up any that ipaddr.js cannot parse. */
function parsedAllowlist(allowedCidrs: readonly string[]): ParsedCidr[] {
  let parsed = parsedAllowlists.get(allowedCidrs);
  if (!parsed) {
    parsed = allowedCidrs.map((cidr) => ipaddr.parseCIDR(cidr));
    parsedAllowlists.set(allowedCidrs, parsed);
  }
  return parsed;
}

/** Whether `address` lies in one of the allowlisted CIDRs (of its own family). */
function isAllowlisted(address: ipaddr.IPv4 | ipaddr.IPv6, allowlist: readonly ParsedCidr[]): boolean {
  return allowlist.some(
    ([network, bits]) => network.kind() === address.kind() && address.match(network, bits),
  );
}

function checkIpv4(address: ipaddr.IPv4): string | undefined {
  return IPV4_RANGES.find(({ range }) => address.match(range))?.label;
}

/**
 * Parses an address as the system does. ipaddr.js reads `::127.0.0.1` (IPv4-compatible) as if it were
 * `::ffff:127.0.0.1`; WHATWG URL parsing writes an IPv6 address in hex groups first, which it reads right.
 */
function parseAddress(address: string): ipaddr.IPv4 | ipaddr.IPv6 {
  if (isIP(address) === 4) return ipaddr.IPv4.parse(address);
  const withoutZone = address.split('%')[0] ?? address;
  return ipaddr.IPv6.parse(new URL(`http://[${withoutZone}]/`).hostname.slice(1, -1));
}

/**
 * Whether a webhook may connect to `address` (an IP address as DNS returns it): it must be public
 * unicast, or lie in one of `allowedCidrs`. IPv6 forms that embed an IPv4 address (`::ffff:127.0.0.1`,
 * NAT64, 6to4, Teredo) are judged by the IPv4 address they embed. Pure: no DNS, no I/O.
 */
export function checkAddress(address: string, allowedCidrs: readonly string[]): AddressVerdict {
  if (isIP(address) === 0) return { allowed: false, reason: `${address} is not an IP address` };
  const allowlist = parsedAllowlist(allowedCidrs);
  const parsed = parseAddress(address);
  if (isAllowlisted(parsed, allowlist)) return { allowed: true, allowlisted: true };
  if (parsed.kind() === 'ipv4') {
    const label = checkIpv4(parsed as ipaddr.IPv4);
    return label
      ? { allowed: false, reason: `${address} is ${label}` }
      : { allowed: true, allowlisted: false };
  }
  const ipv6 = parsed as ipaddr.IPv6;
  const embedded = embeddedIpv4(ipv6);
  if (embedded) {
    let allowlisted = true;
    for (const ipv4 of embedded.ipv4) {
      if (isAllowlisted(ipv4, allowlist)) continue;
      allowlisted = false;
      const label = checkIpv4(ipv4);
      if (label) return { allowed: false, reason: `${address} is ${embedded.form} of ${ipv4}, ${label}` };
    }
    return { allowed: true, allowlisted };
  }
  const label = IPV6_RANGES.find(({ range }) => ipv6.match(range))?.label;
  if (label) return { allowed: false, reason: `${address} is ${label}` };
  if (!ipv6.match(GLOBAL_UNICAST))
    return { allowed: false, reason: `${address} is outside global unicast (2000::/3)` };
  return { allowed: true, allowlisted: false };
}

/** What the outbound policy reads from the configuration. */
/** What the address policy needs of the webhook settings (webhook-config.ts). */
export interface OutboundPolicyConfig {
  /** CIDRs that are allowed although not public (e.g. `127.0.0.1/32`); their targets may also use http. */
  allowedCidrs: string[];
  /** Whether any target may use http (development mode). */
  allowHttp: boolean;
}

/** Resolves a host name to every address it has (`dns.promises.lookup(host, {all: true})` by default). */
export type ResolveHost = (hostname: string) => Promise<readonly LookupAddress[]>;

/** The system resolver, as connections use it: getaddrinfo, so /etc/hosts counts. */
export const systemResolve: ResolveHost = (hostname) =>
  new Promise((resolve, reject) =>
    dnsLookup(hostname, { all: true }, (error, addresses) => (error ? reject(error) : resolve(addresses))),
  );

/**
 * The verdict on a webhook URL: allowed with its canonical form (what is stored, shown and delivered to)
 * and the addresses it resolved to, or refused saying why.
 */
export type UrlVerdict =
  | { allowed: true; url: string; addresses: string[] }
  | { allowed: false; reason: string };

/** The longest canonical webhook URL (the contract's WebhookUrl `maxLength`). */
const MAX_URL_LENGTH = 2048;

/**
 * Unicode bidirectional controls (embeddings, overrides, isolates, marks): a URL holding one reads
 * differently from what it is (U+202E shows `/kcah` for `/hack`) wherever it is shown.
 */
const BIDI_CONTROLS = /[\u202A-\u202E\u2066-\u2069\u200E\u200F\u061C]/u;

/**
 * A URL's host name as an address or a name, without the brackets of an IPv6 literal (`[::1]`): WHATWG
 * parsing already turned `0x7f.1` into `127.0.0.1`.
 */
function unbracketed(hostname: string): string {
  return hostname.startsWith('[') ? hostname.slice(1, -1) : hostname;
}

/** Every address `host` resolves to (itself when it is an address), or why it has none. */
async function resolveAll(host: string, resolve: ResolveHost): Promise<string[] | string> {
  if (isIP(host) !== 0) return [host];
  try {
    const addresses = (await resolve(host)).map((entry) => entry.address);
    return addresses.length > 0 ? addresses : `${host} does not resolve to any address`;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    return `${host} does not resolve (${code})`;
  }
}

/**
 * Checks a webhook URL at registration: no bidirectional control characters, http(s) only, `https` unless
 * in development mode or every address is allowlisted, and every address its host resolves to allowed by
 * {@link checkAddress}. The URL is judged, and returned, in its canonical WHATWG form (`new URL(url).href`:
 * `..` and `.` segments removed, `\` read as `/`, the host lower-cased and its IP forms normalised), which
 * is what a delivery connects to: stored and shown as it is, it names the host and path deliveries really
 * go to. The delivery checks the address again at connection time with {@link checkedLookup}, since DNS
 * answers can change.
 */
export async function checkWebhookUrl(
  url: string,
  config: OutboundPolicyConfig,
  resolve: ResolveHost = systemResolve,
): Promise<UrlVerdict> {
  if (BIDI_CONTROLS.test(url)) {
    return {
      allowed: false,
      reason:
        'the URL holds a Unicode bidirectional control character (U+202A–U+202E, U+2066–U+2069, U+200E, U+200F or U+061C), which makes it read as another URL',
    };
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return { allowed: false, reason: `${url} is not a valid URL` };
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') {
    return { allowed: false, reason: `${parsed.protocol} URLs are refused; webhook URLs must use https` };
  }
  // What a receiver could never be sent, or what would be shown wherever the URL is (lists, logs):
  // refused, not silently dropped at each delivery.
  if (parsed.username !== '' || parsed.password !== '') {
    return {
      allowed: false,
      reason:
        'the URL holds credentials (user:password@), which would be shown wherever the URL is; receivers authenticate deliveries by their signature',
    };
  }
  if (parsed.port === '0') return { allowed: false, reason: 'port 0 is not a port a receiver can listen on' };
  // A bare trailing `#` leaves `hash` empty.
  if (url.includes('#')) {
    return { allowed: false, reason: 'the URL has a fragment (#…), which is never sent to the receiver' };
  }
  if (parsed.href.length > MAX_URL_LENGTH) {
    return {
      allowed: false,
      reason: `the URL is ${parsed.href.length} characters long once canonical (percent-encoded); at most ${MAX_URL_LENGTH}`,
    };
  }
  const host = unbracketed(parsed.hostname);
  const addresses = await resolveAll(host, resolve);
  if (typeof addresses === 'string') return { allowed: false, reason: addresses };
  let allAllowlisted = true;
  for (const address of addresses) {
    const verdict = checkAddress(address, config.allowedCidrs);
    if (!verdict.allowed) {
      const via = address === host ? '' : `${host} resolves to ${address}: `;
      return {
        allowed: false,
        reason: `${via}${verdict.reason}; webhook URLs must resolve to public addresses`,
      };
    }
    allAllowlisted &&= verdict.allowlisted;
  }
  if (parsed.protocol === 'http:' && !config.allowHttp && !allAllowlisted) {
    return {
      allowed: false,
      reason: `${parsed.origin} uses http; webhook URLs must use https (http is accepted only in development mode or for allowlisted addresses)`,
    };
  }
  return { allowed: true, url: parsed.href, addresses };
}

/** Thrown (passed to the connection's callback) when a host resolves to a refused address. */
export class OutboundAddressRefusedError extends Error {
  override readonly name = 'OutboundAddressRefusedError';
  /** Like a system error's code, so attempt records show it plainly. */
  readonly code = 'ERR_WEBHOOK_ADDRESS_REFUSED';
}

type LookupCallback = (
  error: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

/**
 * A `lookup` for `net.connect` / undici's `connect` option that resolves the host, checks every address
 * it resolves to, refuses the connection when any is refused, and otherwise answers a single checked
 * address: the socket connects to exactly the address that was checked, so a DNS answer that changes
 * between the check and the connection (rebinding) cannot slip through. Use it as
 * `new undici.Agent({ connect: { lookup: checkedLookup(config) } })`. Node does not call `lookup` for a
 * URL whose host is already an IP address: {@link checkedConnector} covers those too.
 */
export function checkedLookup(config: OutboundPolicyConfig, resolve: ResolveHost = systemResolve) {
  return (hostname: string, options: LookupOptions, callback: LookupCallback): void => {
    resolve(hostname).then(
      (entries) => {
        let chosen: LookupAddress | Error;
        try {
          chosen = checkedAddress(hostname, entries, options.family, config);
        } catch (error) {
          // Whatever throws fails this connection: escaping `.then`, it would be an unhandled rejection.
          chosen = error as Error;
        }
        if (chosen instanceof Error) return callback(chosen, '');
        if (options.all) return callback(null, [chosen]);
        return callback(null, chosen.address, chosen.family);
      },
      (error: NodeJS.ErrnoException) => callback(error, ''),
    );
  };
}

/** The address to connect to: the first of the requested family, once every address was allowed. */
function checkedAddress(
  hostname: string,
  entries: readonly LookupAddress[],
  requestedFamily: LookupOptions['family'],
  config: OutboundPolicyConfig,
): LookupAddress | Error {
  for (const entry of entries) {
    const verdict = checkAddress(entry.address, config.allowedCidrs);
    if (!verdict.allowed) {
      return new OutboundAddressRefusedError(`refused to connect to ${hostname}: ${verdict.reason}`);
    }
  }
  const family = requestedFamily === 'IPv4' ? 4 : requestedFamily === 'IPv6' ? 6 : requestedFamily;
  const chosen = entries.find((entry) => !family || entry.family === family);
  if (!chosen) {
    const error: NodeJS.ErrnoException = new Error(`${hostname} has no address to connect to`);
    error.code = 'ENOTFOUND';
    return error;
  }
  return { address: chosen.address, family: chosen.family };
}

/**
 * An undici connector that checks every address it connects to: names through {@link checkedLookup},
 * and hosts that are IP addresses (which never reach a `lookup`) directly. Use it as
 * `new undici.Agent({ connect: checkedConnector(config) })`.
 */
export function checkedConnector(
  config: OutboundPolicyConfig,
  resolve: ResolveHost = systemResolve,
  options: Omit<buildConnector.BuildOptions, 'lookup'> = {},
): buildConnector.connector {
  const connect = buildConnector({ ...options, lookup: checkedLookup(config, resolve) });
  return (options, callback) => {
    const host = unbracketed(options.hostname);
    if (isIP(host) !== 0) {
      const verdict = checkAddress(host, config.allowedCidrs);
      if (!verdict.allowed) {
        return callback(
          new OutboundAddressRefusedError(`refused to connect to ${host}: ${verdict.reason}`),
          null,
        );
      }
    }
    return connect(options, callback);
  };
}
