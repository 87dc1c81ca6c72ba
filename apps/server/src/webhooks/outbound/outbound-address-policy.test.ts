import { describe, expect, it } from 'vitest';
import { checkAddress, checkWebhookUrl, type ResolveHost } from './outbound-address-policy.js';

const NO_ALLOWLIST: string[] = [];
const PRODUCTION = { allowedCidrs: NO_ALLOWLIST, allowHttp: false };
/** A resolver with fixed answers, so no test depends on the machine's DNS. */
const fakeDns =
  (answers: Record<string, string[]>): ResolveHost =>
  async (hostname) => {
    const addresses = answers[hostname];
    if (!addresses)
      throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };

describe('checkAddress', () => {
  it.each([
    ['127.0.0.1', 'loopback address (127.0.0.0/8)'],
    ['127.255.0.9', 'loopback'],
    ['10.1.2.3', 'private address (10.0.0.0/8)'],
    ['172.16.0.1', 'private address (172.16.0.0/12)'],
    ['172.31.255.254', 'private address (172.16.0.0/12)'],
    ['192.168.1.1', 'private address (192.168.0.0/16)'],
    ['169.254.169.254', 'cloud metadata address'],
    ['169.254.1.1', 'link-local address (169.254.0.0/16)'],
    ['100.64.0.1', 'carrier-grade NAT'],
    ['100.127.255.255', 'carrier-grade NAT'],
    ['0.0.0.0', '"this network"'],
    ['0.1.2.3', '"this network"'],
    ['240.0.0.1', 'reserved address (240.0.0.0/4)'],
    ['255.255.255.255', 'broadcast'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['192.0.2.10', 'documentation'],
    ['198.18.0.1', 'benchmarking'],
    ['::1', 'loopback address (::1)'],
    ['::', 'unspecified'],
    ['fc00::1', 'unique local'],
    ['fd12:3456::1', 'unique local'],
    ['fe80::1', 'link-local address (fe80::/10)'],
    ['ff02::1', 'multicast'],
    ['::ffff:127.0.0.1', 'IPv4-mapped address of 127.0.0.1, a loopback'],
    ['::ffff:7f00:1', 'IPv4-mapped address of 127.0.0.1, a loopback'],
    ['::ffff:a9fe:a9fe', 'IPv4-mapped address of 169.254.169.254, the cloud metadata'],
    ['::ffff:10.0.0.1', 'IPv4-mapped address of 10.0.0.1, a private'],
    ['::ffff:0:127.0.0.1', 'IPv4-translated address of 127.0.0.1'],
    ['::127.0.0.1', 'IPv4-compatible'],
    ['::8.8.8.8', 'IPv4-compatible'],
    ['64:ff9b::7f00:1', 'NAT64 address (64:ff9b::/96) of 127.0.0.1'],
    ['64:ff9b::a00:1', 'NAT64 address (64:ff9b::/96) of 10.0.0.1'],
    ['2002:7f00:1::1', '6to4 address (2002::/16) of 127.0.0.1'],
    ['2002:a9fe:a9fe::', '6to4 address (2002::/16) of 169.254.169.254'],
    // Teredo: client 127.0.0.1 is stored inverted in the last 32 bits.
    ['2001:0:4136:e378:8000:63bf:80ff:fffe', 'Teredo address (2001::/32) of 127.0.0.1'],
    ['2001:db8::1', 'documentation'],
    ['4000::1', 'outside global unicast (2000::/3)'],
  ])('refuses %s (%s)', (address, reason) => {
    const verdict = checkAddress(address, NO_ALLOWLIST);
    expect(verdict.allowed).toBe(false);
    expect(verdict.allowed === false && verdict.reason).toContain(reason);
  });

  it.each([
    '93.184.215.14',
    '8.8.8.8',
    '1.1.1.1',
    '172.32.0.1',
    '100.128.0.1',
    '2606:4700:4700::1111',
    '::ffff:8.8.8.8',
    '64:ff9b::808:808',
    '2002:808:808::1',
  ])('allows the public address %s', (address) => {
    expect(checkAddress(address, NO_ALLOWLIST)).toEqual({ allowed: true, allowlisted: false });
  });

  it('lets an allowlisted CIDR override the refusal, and only for the addresses it holds', () => {
    expect(checkAddress('127.0.0.1', ['127.0.0.1/32'])).toEqual({ allowed: true, allowlisted: true });
    expect(checkAddress('::ffff:127.0.0.1', ['127.0.0.1/32'])).toEqual({ allowed: true, allowlisted: true });
    expect(checkAddress('127.0.0.2', ['127.0.0.1/32']).allowed).toBe(false);
    expect(checkAddress('10.9.8.7', ['10.0.0.0/8'])).toEqual({ allowed: true, allowlisted: true });
    expect(checkAddress('::1', ['127.0.0.1/32']).allowed).toBe(false);
    expect(checkAddress('::1', ['::1/128'])).toEqual({ allowed: true, allowlisted: true });
  });

  it('refuses what is not an IP address at all', () => {
    expect(checkAddress('0x7f.1', NO_ALLOWLIST)).toEqual({
      allowed: false,
      reason: '0x7f.1 is not an IP address',
    });
  });
});

describe('checkWebhookUrl', () => {
  it.each([
    ['https://127.0.0.1/hook', '127.0.0.1 is a loopback'],
    ['https://2130706433/', '127.0.0.1 is a loopback'],
    ['https://0x7f.1/', '127.0.0.1 is a loopback'],
    ['https://0x7f000001/', '127.0.0.1 is a loopback'],
    ['https://017700000001/', '127.0.0.1 is a loopback'],
    ['https://127.1/', '127.0.0.1 is a loopback'],
    // A user name that looks like the host is refused as credentials, before the address is looked at.
    ['https://good@127.0.0.1/', 'the URL holds credentials'],
    ['https://good.example.com:x@10.0.0.1/', 'the URL holds credentials'],
    ['https://[::1]/', '::1 is the loopback'],
    ['https://[::ffff:127.0.0.1]/', 'IPv4-mapped address of 127.0.0.1'],
    ['https://[::ffff:7f00:1]:8443/', 'IPv4-mapped address of 127.0.0.1'],
    ['https://169.254.169.254/latest/meta-data/', 'cloud metadata address'],
    ['https://[fe80::1]/', 'link-local'],
  ])('refuses %s (%s)', async (url, reason) => {
    const verdict = await checkWebhookUrl(url, PRODUCTION, fakeDns({}));
    expect(verdict.allowed).toBe(false);
    expect(verdict.allowed === false && verdict.reason).toContain(reason);
  });

  it('refuses a name when any of its addresses is refused, naming the name and the address', async () => {
    const dns = fakeDns({ 'hooks.internal.example': ['93.184.215.14', '10.0.0.7'] });
    expect(await checkWebhookUrl('https://hooks.internal.example/x', PRODUCTION, dns)).toEqual({
      allowed: false,
      reason:
        'hooks.internal.example resolves to 10.0.0.7: 10.0.0.7 is a private address (10.0.0.0/8); webhook URLs must resolve to public addresses',
    });
  });

  it('refuses a name that does not resolve, saying so', async () => {
    expect(await checkWebhookUrl('https://nowhere.invalid/', PRODUCTION, fakeDns({}))).toEqual({
      allowed: false,
      reason: 'nowhere.invalid does not resolve (ENOTFOUND)',
    });
  });

  it('accepts an https URL whose every address is public, and returns them', async () => {
    const dns = fakeDns({ 'hooks.example.com': ['93.184.215.14', '2606:2800:21f:cb07:6820:80da:af6b:8b2c'] });
    expect(await checkWebhookUrl('https://hooks.example.com/x', PRODUCTION, dns)).toEqual({
      allowed: true,
      url: 'https://hooks.example.com/x',
      addresses: ['93.184.215.14', '2606:2800:21f:cb07:6820:80da:af6b:8b2c'],
    });
  });

  it('refuses http outside development mode unless the target is allowlisted', async () => {
    const refused = await checkWebhookUrl('http://93.184.215.14/x', PRODUCTION);
    expect(refused.allowed === false && refused.reason).toContain('must use https');
    const allowlisted = { allowedCidrs: ['127.0.0.1/32'], allowHttp: false };
    expect(await checkWebhookUrl('http://127.0.0.1:8080/x', allowlisted)).toEqual({
      allowed: true,
      url: 'http://127.0.0.1:8080/x',
      addresses: ['127.0.0.1'],
    });
    const development = { allowedCidrs: NO_ALLOWLIST, allowHttp: true };
    expect((await checkWebhookUrl('http://93.184.215.14/x', development)).allowed).toBe(true);
    // Development mode allows http, not private addresses.
    expect((await checkWebhookUrl('http://127.0.0.1/x', development)).allowed).toBe(false);
  });

  it.each([
    // What is delivered to: dot segments (also percent-encoded) removed, a backslash read as a slash.
    ['http://127.0.0.1:8080/v/x/../../admin', 'http://127.0.0.1:8080/admin'],
    ['http://127.0.0.1:8080/v/%2e%2E/admin/./', 'http://127.0.0.1:8080/admin/'],
    ['http://127.0.0.2:8080\\@127.0.0.1:9/', 'http://127.0.0.2:8080/@127.0.0.1:9/'],
    ['HTTP://0x7F.2:8080/Hook?q=a b', 'http://127.0.0.2:8080/Hook?q=a%20b'],
  ])('judges and returns %s in its canonical form, %s', async (url, canonical) => {
    const allowlisted = { allowedCidrs: ['127.0.0.0/8'], allowHttp: false };
    expect(await checkWebhookUrl(url, allowlisted)).toEqual({
      allowed: true,
      url: canonical,
      addresses: [new URL(canonical).hostname],
    });
  });

  it('checks the address of the canonical host: a backslash form goes to the host before it', async () => {
    const allowlisted = { allowedCidrs: ['127.0.0.1/32'], allowHttp: false };
    const verdict = await checkWebhookUrl('http://127.0.0.2:8080\\@127.0.0.1:9/', allowlisted);
    expect(verdict.allowed === false && verdict.reason).toContain('127.0.0.2 is a loopback address');
  });

  it.each([
    '\u202A',
    '\u202B',
    '\u202C',
    '\u202D',
    '\u202E',
    '\u2066',
    '\u2067',
    '\u2068',
    '\u2069',
    '\u200E',
    '\u200F',
    '\u061C',
  ])('refuses a URL holding the bidirectional control %j', async (control) => {
    for (const url of [
      `https://hooks.example.com/x${control}kcah`,
      `https://hooks.example.com/?a=${control}`,
    ]) {
      const verdict = await checkWebhookUrl(
        url,
        PRODUCTION,
        fakeDns({ 'hooks.example.com': ['93.184.215.14'] }),
      );
      expect(verdict.allowed === false && verdict.reason).toContain('bidirectional control');
    }
  });

  it('refuses a URL longer than 2048 characters once percent-encoded', async () => {
    const url = `https://93.184.215.14/${'é'.repeat(400)}`;
    expect(url.length).toBeLessThan(2048);
    const verdict = await checkWebhookUrl(url, PRODUCTION);
    expect(verdict.allowed === false && verdict.reason).toContain('characters long once canonical');
  });

  it('accepts http only when every address of the name is allowlisted', async () => {
    const allowlisted = { allowedCidrs: ['127.0.0.1/32'], allowHttp: false };
    const dns = fakeDns({ 'local.test': ['127.0.0.1'], 'mixed.test': ['127.0.0.1', '93.184.215.14'] });
    expect((await checkWebhookUrl('http://local.test/x', allowlisted, dns)).allowed).toBe(true);
    const mixed = await checkWebhookUrl('http://mixed.test/x', allowlisted, dns);
    expect(mixed.allowed === false && mixed.reason).toContain('must use https');
  });

  it('refuses schemes other than http and https', async () => {
    const verdict = await checkWebhookUrl('ftp://93.184.215.14/x', PRODUCTION);
    expect(verdict.allowed === false && verdict.reason).toContain('ftp: URLs are refused');
  });
});
