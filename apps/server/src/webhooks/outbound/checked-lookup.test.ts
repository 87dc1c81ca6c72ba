import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkedConnector, checkedLookup, type ResolveHost } from './outbound-address-policy.js';

/** A real receiver on 127.0.0.1 that counts what reaches it. */
let receiver: Server;
let port = 0;
let received = 0;
beforeAll(async () => {
  receiver = createServer((_req, res) => {
    received += 1;
    res.end('ok');
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  port = (receiver.address() as AddressInfo).port;
});
afterAll(() => new Promise<void>((resolve) => receiver.close(() => resolve())));

/** A resolver answering from a script, one answer per call, counting the calls. */
function scriptedDns(...answers: string[][]): ResolveHost & { calls: number } {
  const resolve = async () => {
    const answer = answers[Math.min(resolve.calls, answers.length - 1)] ?? [];
    resolve.calls += 1;
    return answer.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
  resolve.calls = 0;
  return resolve;
}

/** POSTs through an undici Agent whose connections resolve with `checkedLookup`, as deliveries do. */
async function postThrough(allowedCidrs: string[], resolve: ResolveHost, url: string) {
  const agent = new Agent({
    connect: { lookup: checkedLookup({ allowedCidrs, allowHttp: false }, resolve) },
  });
  try {
    const response = await request(url, { method: 'POST', body: '{}', dispatcher: agent });
    return { status: response.statusCode, body: await response.body.text() };
  } finally {
    await agent.close();
  }
}

describe('checkedLookup in an undici Agent', () => {
  it('connects to an allowlisted receiver on 127.0.0.1', async () => {
    const before = received;
    const dns = scriptedDns(['127.0.0.1']);
    const answer = await postThrough(['127.0.0.1/32'], dns, `http://receiver.test:${port}/hook`);
    expect(answer).toEqual({ status: 200, body: 'ok' });
    expect(received).toBe(before + 1);
    expect(dns.calls).toBe(1);
  });

  it('refuses to connect when the name resolves to 127.0.0.1 and nothing is allowlisted', async () => {
    const before = received;
    await expect(
      postThrough([], scriptedDns(['127.0.0.1']), `http://receiver.test:${port}/`),
    ).rejects.toThrow(/refused to connect to receiver\.test: 127\.0\.0\.1 is a loopback address/);
    expect(received).toBe(before);
  });

  it('refuses a name when any one of its addresses is refused, even if another is public', async () => {
    const dns = scriptedDns(['93.184.215.14', '127.0.0.1']);
    await expect(postThrough([], dns, `http://receiver.test:${port}/`)).rejects.toMatchObject({
      code: 'ERR_WEBHOOK_ADDRESS_REFUSED',
    });
  });

  it('refuses at connection time a name that rebinds to 127.0.0.1 after resolving to a public address', async () => {
    const before = received;
    // The registration check saw the public address; the connection's own lookup gets the rebound one.
    const dns = scriptedDns(['93.184.215.14'], ['127.0.0.1']);
    const first = await dns('rebind.test');
    expect(first.map((a) => a.address)).toEqual(['93.184.215.14']);
    await expect(postThrough([], dns, `http://rebind.test:${port}/`)).rejects.toThrow(
      /refused to connect to rebind\.test: 127\.0\.0\.1 is a loopback address/,
    );
    expect(dns.calls).toBe(2);
    expect(received).toBe(before);
  });

  it('connects to the very address it checked, whatever the name resolves to afterwards', async () => {
    const dns = scriptedDns(['127.0.0.1'], ['10.0.0.1']);
    const answer = await postThrough(['127.0.0.1/32'], dns, `http://pinned.test:${port}/`);
    expect(answer.status).toBe(200);
    expect(dns.calls).toBe(1);
  });

  it('fails the connection, instead of crashing the process, when a check throws', async () => {
    // readWebhookConfig refuses such a CIDR at start-up; the lookup still must not throw from a promise.
    await expect(
      postThrough(['10.0.0.0/33'], scriptedDns(['127.0.0.1']), `http://receiver.test:${port}/`),
    ).rejects.toThrow(/CIDR/);
  });
});

describe('checkedConnector in an undici Agent', () => {
  const postTo = async (allowedCidrs: string[], url: string) => {
    const config = { allowedCidrs, allowHttp: false };
    const agent = new Agent({ connect: checkedConnector(config, scriptedDns(['127.0.0.1'])) });
    try {
      const response = await request(url, { method: 'POST', body: '{}', dispatcher: agent });
      return { status: response.statusCode, body: await response.body.text() };
    } finally {
      await agent.close();
    }
  };

  it('checks a host that is an IP address, which never reaches a lookup', async () => {
    const before = received;
    await expect(postTo([], `http://127.0.0.1:${port}/`)).rejects.toThrow(
      /refused to connect to 127\.0\.0\.1: 127\.0\.0\.1 is a loopback address/,
    );
    expect(received).toBe(before);
    expect(await postTo(['127.0.0.1/32'], `http://127.0.0.1:${port}/`)).toEqual({ status: 200, body: 'ok' });
  });

  it('checks names through the lookup, like checkedLookup', async () => {
    await expect(postTo([], `http://receiver.test:${port}/`)).rejects.toThrow(/loopback/);
    expect((await postTo(['127.0.0.1/32'], `http://receiver.test:${port}/`)).status).toBe(200);
  });
});
