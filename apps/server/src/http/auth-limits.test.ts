import type { AddressInfo } from 'node:net';
import express, { type ErrorRequestHandler } from 'express';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { AppError } from '../errors/app-error.js';
import { API_KEY_PATTERN, generateApiKey } from '../keys/api-key.js';
import type { ApiKeyOwner, ApiKeyStore } from '../keys/api-key-store.js';
import { authenticate } from './auth.js';
import { TRUSTED_PROXIES_SETTING, trustedProxies } from './client-address.js';

/** A key store that counts its lookups; it caches nothing found, so every valid key is looked up. */
function fakeStore() {
  const valid = new Map<string, ApiKeyOwner>();
  const unknown = new Set<string>();
  const store: Pick<ApiKeyStore, 'find' | 'findCached'> & { lookups: number; add(): string } = {
    lookups: 0,
    add() {
      const key = generateApiKey();
      valid.set(key, { tenantId: 'tenant', keyId: `key_${valid.size}`, scope: 'full' });
      return key;
    },
    findCached: (key) => (!API_KEY_PATTERN.test(key) || unknown.has(key) ? null : undefined),
    async find(key) {
      store.lookups++;
      const owner = valid.get(key);
      if (owner === undefined) unknown.add(key);
      return owner;
    },
  };
  return store;
}

/**
 * A fake store with one valid key whose lookups wait until `release()`, and how often the cache was asked:
 * each request asks it twice (the fast path, then the slow one) before it waits for a lookup.
 */
function gatedStore() {
  const store = fakeStore();
  const key = store.add();
  let release = () => {};
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  const find = store.find;
  store.find = async (k) => {
    await gate;
    return find(k);
  };
  let asked = 0;
  const findCached = store.findCached;
  store.findCached = (k) => {
    asked++;
    return findCached(k);
  };
  return { store, key, release: () => release(), asked: () => asked };
}

describe('the limits on unknown keys and requests without a key', () => {
  // The allowances are rate-limiter-flexible's one-second windows, timed by Date.now() and ended by a
  // timer: both are faked, so the requests below happen at the instants the tests say, however slow the
  // machine.
  const T0 = Date.UTC(2026, 10, 22, 10);
  let time = 0;
  const advance = (ms: number) => {
    time += ms;
    vi.setSystemTime(T0 + time);
  };
  let close = () => {};
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['Date', 'setTimeout', 'clearTimeout'] });
    time = 0;
    vi.setSystemTime(T0);
  });
  afterEach(() => {
    close();
    vi.useRealTimers();
  });

  async function serve(store: ReturnType<typeof fakeStore>, proxies?: string[]) {
    const app = express();
    if (proxies) app.set(TRUSTED_PROXIES_SETTING, trustedProxies(proxies));
    app.use(authenticate(store));
    app.get('/', (_req, res) => res.json(res.locals.apiKey));
    const handler: ErrorRequestHandler = (error: AppError, _req, res, _next) => {
      res
        .status(error.status)
        .set(error.headers ?? {})
        .json({ code: error.code, detail: error.detail });
    };
    app.use(handler);
    const server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    close = () => server.close();
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    return async (key: string | undefined, from?: string) => {
      const headers: Record<string, string> = {};
      if (key !== undefined) headers.authorization = `Bearer ${key}`;
      if (from !== undefined) headers['x-forwarded-for'] = from;
      const response = await fetch(base, { headers });
      await response.arrayBuffer();
      return response.status;
    };
  }

  it('lets a fresh valid key through while its address floods random keys at 75 a second', async () => {
    const store = fakeStore();
    const request = await serve(store);
    const fresh: number[] = [];
    for (let n = 0; n < 750; n++) {
      advance(1000 / 75);
      expect([401, 429]).toContain(await request(generateApiKey()));
      if (n % 50 === 49) fresh.push(await request(store.add()));
    }
    expect(fresh).toEqual(Array(15).fill(200));
  });

  it('never counts a key that exists against the allowance of its address', async () => {
    const store = fakeStore();
    const request = await serve(store);
    // Valid keys, each looked up (the fake store caches none), all at one instant.
    for (let n = 0; n < 300; n++) expect(await request(store.add())).toBe(200);
    expect(store.lookups).toBe(300);
  });

  it('looks a key up once for a burst of its requests, and charges its address nothing (a restart, then a client at full rate)', async () => {
    const { store, key, release, asked } = gatedStore();
    const request = await serve(store);
    // 100 requests of one valid key, none cached, all waiting for one lookup: past the address's 20.
    const burst = Array.from({ length: 100 }, () => request(key));
    await vi.waitFor(() => expect(asked()).toBe(200), { timeout: 10_000 });
    release();
    expect(await Promise.all(burst)).toEqual(Array(100).fill(200));
    expect(store.lookups).toBe(1);
    // The address's allowance is whole: 20 unknown keys are still looked up.
    const unknown = await Promise.all(Array.from({ length: 20 }, () => request(generateApiKey())));
    expect(unknown).toEqual(Array(20).fill(401));
  });

  it("shares a key's lookup only between requests of one address, so one address's refusal is never another's", async () => {
    const { store, key, release, asked } = gatedStore();
    const request = await serve(store, ['127.0.0.1']);
    const burst = [
      ...Array.from({ length: 5 }, () => request(key, '203.0.113.1')),
      ...Array.from({ length: 5 }, () => request(key, '203.0.113.2')),
    ];
    await vi.waitFor(() => expect(asked()).toBe(20), { timeout: 10_000 });
    release();
    expect(await Promise.all(burst)).toEqual(Array(10).fill(200));
    expect(store.lookups).toBe(2);
  });

  it('bounds the lookups of unknown keys from many addresses together', async () => {
    const store = fakeStore();
    const request = await serve(store, ['127.0.0.1/32']);
    const statuses = new Map<number, number>();
    for (let address = 0; address < 100; address++) {
      for (let n = 0; n < 20; n++) {
        const status = await request(generateApiKey(), `198.51.100.${address}`);
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
      }
    }
    // 2,000 unknown keys from 100 addresses within each one's allowance: the instance looked up 200.
    expect(store.lookups).toBe(200);
    expect(statuses.get(429)).toBe(1800);
    // After a second the instance's allowance is back.
    advance(1000);
    expect(await request(store.add(), '198.51.100.200')).toBe(200);
  });

  it('counts a key known to be unknown against its address without a lookup', async () => {
    const store = fakeStore();
    const request = await serve(store);
    const revoked = generateApiKey();
    const statuses: number[] = [];
    for (let n = 0; n < 25; n++) statuses.push(await request(revoked));
    expect(store.lookups).toBe(1);
    expect(statuses.slice(0, 20)).toEqual(Array(20).fill(401));
    expect(statuses.slice(20)).toEqual(Array(5).fill(429));
  });

  it('limits requests without a key, or with a malformed one, per client address', async () => {
    const store = fakeStore();
    const request = await serve(store, ['127.0.0.1/32']);
    const statuses: number[] = [];
    for (let n = 0; n < 15; n++) statuses.push(await request(undefined, '203.0.113.1'));
    for (let n = 0; n < 10; n++) statuses.push(await request('not-a-key', '203.0.113.1'));
    expect(statuses.slice(0, 20)).toEqual(Array(20).fill(401));
    expect(statuses.slice(20)).toEqual(Array(5).fill(429));
    expect(await request(undefined, '203.0.113.2')).toBe(401);
    expect(store.lookups).toBe(0);
    advance(1000);
    expect(await request(undefined, '203.0.113.1')).toBe(401);
  });

  it('counts each allowance in a fixed one-second window: nothing comes back before it ends', async () => {
    const store = fakeStore();
    const request = await serve(store);
    for (let n = 0; n < 20; n++) expect(await request(undefined)).toBe(401);
    advance(500);
    expect(await request(undefined)).toBe(429);
    advance(499);
    expect(await request(undefined)).toBe(429);
    advance(1);
    expect(await request(undefined)).toBe(401);
  });

  it('ignores X-Forwarded-For from a peer that is not a trusted proxy', async () => {
    const store = fakeStore();
    const request = await serve(store);
    const statuses: number[] = [];
    for (let n = 0; n < 25; n++) statuses.push(await request(undefined, `203.0.113.${n}`));
    expect(statuses.slice(20)).toEqual(Array(5).fill(429));
  });
});

describe('authenticate with a cached key', () => {
  it('passes the request on at once, without a promise, and takes the slow path for anything else', async () => {
    const owner: ApiKeyOwner = { tenantId: 'tenant', keyId: 'key_cached', scope: 'full' };
    const cachedKey = generateApiKey();
    const store: Pick<ApiKeyStore, 'find' | 'findCached'> = {
      findCached: (key) => (key === cachedKey ? owner : undefined),
      find: async () => undefined,
    };
    const handler = authenticate(store);
    const call = (authorization: string | undefined) => {
      const res = { locals: {} as Record<string, unknown> };
      const next = vi.fn();
      const req = {
        headers: authorization === undefined ? {} : { authorization },
        socket: {},
        app: { get() {} },
      };
      const returned = (handler as (...args: unknown[]) => unknown)(req, res, next);
      return { res, next, returned };
    };
    for (const scheme of ['Bearer', 'bearer', 'BEARER']) {
      const { res, next, returned } = call(`${scheme} ${cachedKey}`);
      expect(returned).toBeUndefined();
      expect(next).toHaveBeenCalledWith();
      expect(res.locals.apiKey).toBe(owner);
    }
    // Another scheme with the same key is not accepted: the slow path refuses it (a promise).
    const basic = call(`Basic ${cachedKey}`);
    expect(basic.returned).toBeInstanceOf(Promise);
    await expect(basic.returned).rejects.toMatchObject({ code: 'missing_api_key' });
    expect(basic.res.locals.apiKey).toBeUndefined();
  });
});
