import type { AddressInfo } from 'node:net';
import express from 'express';
import { describe, expect, it } from 'vitest';
import {
  clientAddress,
  clientAddressOf,
  isProxyRange,
  NO_TRUSTED_PROXIES,
  TRUSTED_PROXIES_SETTING,
  trustedProxies,
} from './client-address.js';

describe('the client address', () => {
  const proxies = trustedProxies(['10.0.0.0/8', '192.0.2.7', 'fd00::/8']);

  it('is the socket peer when no proxy is trusted, whatever the headers say', () => {
    const spoofed = { 'x-forwarded-for': '203.0.113.9', forwarded: 'for=203.0.113.9' };
    expect(clientAddressOf('198.51.100.1', spoofed, NO_TRUSTED_PROXIES)).toBe('198.51.100.1');
    expect(clientAddressOf('::ffff:198.51.100.1', {}, NO_TRUSTED_PROXIES)).toBe('198.51.100.1');
  });

  it('ignores X-Forwarded-For from a peer that is not a trusted proxy', () => {
    expect(clientAddressOf('198.51.100.1', { 'x-forwarded-for': '203.0.113.9' }, proxies)).toBe(
      '198.51.100.1',
    );
  });

  it('takes the address left of the trusted hops, right to left', () => {
    expect(clientAddressOf('10.1.2.3', { 'x-forwarded-for': '203.0.113.9' }, proxies)).toBe('203.0.113.9');
    // A client that sends its own X-Forwarded-For only adds entries left of what the proxies appended.
    expect(
      clientAddressOf('10.1.2.3', { 'x-forwarded-for': '1.1.1.1, 203.0.113.9, 192.0.2.7' }, proxies),
    ).toBe('203.0.113.9');
    expect(clientAddressOf('::ffff:10.1.2.3', { 'x-forwarded-for': ' 2001:db8::5 ' }, proxies)).toBe(
      '2001:db8::5',
    );
    // Every hop trusted: the leftmost one.
    expect(clientAddressOf('10.1.2.3', { 'x-forwarded-for': '10.9.9.9, 10.8.8.8' }, proxies)).toBe(
      '10.9.9.9',
    );
    // No header: the proxy itself.
    expect(clientAddressOf('10.1.2.3', {}, proxies)).toBe('10.1.2.3');
  });

  it('stops at an entry that is not an address, at the last trusted hop', () => {
    expect(clientAddressOf('10.1.2.3', { 'x-forwarded-for': '203.0.113.9, garbage' }, proxies)).toBe(
      '10.1.2.3',
    );
    expect(clientAddressOf('10.1.2.3', { 'x-forwarded-for': 'unknown, 10.4.4.4' }, proxies)).toBe('10.4.4.4');
  });

  it('reads Forwarded (RFC 7239) when configured so, and then not X-Forwarded-For', () => {
    const viaForwarded = trustedProxies(['10.0.0.0/8'], 'forwarded');
    const headers = {
      forwarded: 'for=1.1.1.1, for="[2001:db8::7]:4711";proto=https, For="203.0.113.9:80";by=10.0.0.1',
      'x-forwarded-for': '198.18.0.1',
    };
    expect(clientAddressOf('10.1.2.3', headers, viaForwarded)).toBe('203.0.113.9');
    expect(clientAddressOf('10.1.2.3', { forwarded: 'for="[2001:db8::7]:4711"' }, viaForwarded)).toBe(
      '2001:db8::7',
    );
    expect(clientAddressOf('10.1.2.3', { forwarded: 'for=_hidden' }, viaForwarded)).toBe('10.1.2.3');
    expect(clientAddressOf('10.1.2.3', { 'x-forwarded-for': '198.18.0.1' }, viaForwarded)).toBe('10.1.2.3');
    expect(clientAddressOf('198.51.100.1', headers, viaForwarded)).toBe('198.51.100.1');
  });

  it('accepts CIDRs and single addresses as proxy ranges, and nothing else', () => {
    for (const good of ['10.0.0.0/8', '192.0.2.7', '::1', 'fd00::/8']) expect(isProxyRange(good)).toBe(true);
    for (const bad of ['10.0.0.0/33', 'example.com', '', '10.0.0/8']) expect(isProxyRange(bad)).toBe(false);
  });

  it('is read from the app setting on a real request', async () => {
    const seen: string[] = [];
    for (const setting of [undefined, trustedProxies(['127.0.0.1/32'])]) {
      const app = express();
      if (setting) app.set(TRUSTED_PROXIES_SETTING, setting);
      app.get('/', (req, res) => {
        seen.push(clientAddress(req));
        res.end();
      });
      const server = app.listen(0, '127.0.0.1');
      await new Promise((resolve) => server.once('listening', resolve));
      const { port } = server.address() as AddressInfo;
      await (
        await fetch(`http://127.0.0.1:${port}/`, { headers: { 'x-forwarded-for': '203.0.113.9' } })
      ).text();
      server.close();
    }
    expect(seen).toEqual(['127.0.0.1', '203.0.113.9']);
  });
});
