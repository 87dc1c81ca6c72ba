/**
 * Hostile webhook receivers against the built server, on SQLite and PostgreSQL: one tenant registers
 * receivers that answer with NUL and invalid UTF-8 bodies, statuses 600 and 101, 5 MB bodies, a body
 * dripping past the timeout, garbage and huge `Retry-After`s, 410 and connection resets, while another
 * tenant's canary webhook receives each of its events exactly once. Every delivery and attempt listed must
 * be valid against the contract, and the server must log no error.
 */
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { type AddressInfo, createServer, type Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectDocumentedResponse } from '../../../test/contract/src/harness/contract-validator.js';
import { BuiltServer, databaseEnv, requireBuiltServer, runBuiltCli } from './support/built-server.js';
import { createTestDatabase, DATABASE_KINDS, type TestDatabase } from './support/test-databases.js';

const TIMEOUT_MS = 1000;
const LEASE_MS = 2500;
const CANARY_EVENTS = 12;

/** A receiver that writes `answer` to each connection once the request's headers have arrived. */
function rawReceiver(answer: (socket: import('node:net').Socket) => void): Server {
  return createServer((socket) => {
    socket.on('error', () => {});
    socket.once('data', () => answer(socket));
  });
}

const head = (status: string, headers: string[] = [], length?: number) =>
  `HTTP/1.1 ${status}\r\n${headers.map((h) => `${h}\r\n`).join('')}${length === undefined ? '' : `content-length: ${length}\r\n`}\r\n`;

const RECEIVERS: Record<string, () => Server> = {
  nul: () => rawReceiver((s) => s.end(`${head('200 OK', [], 3)}ok\u0000`)),
  nul500: () =>
    rawReceiver((s) =>
      s.end(Buffer.concat([Buffer.from(head('500 X', [], 4)), Buffer.from([0x6f, 0x00, 0xc0, 0x80])])),
    ),
  invalidUtf8: () =>
    rawReceiver((s) =>
      s.end(Buffer.concat([Buffer.from(head('200 OK', [], 4)), Buffer.from([0xff, 0xfe, 0xc3, 0x28])])),
    ),
  status600: () => rawReceiver((s) => s.end(`${head('600 X', [], 2)}ok`)),
  status101: () =>
    rawReceiver((s) =>
      s.end(`${head('101 Switching Protocols', ['upgrade: websocket', 'connection: upgrade'])}`),
    ),
  body5mb: () =>
    rawReceiver((s) =>
      s.end(Buffer.concat([Buffer.from(head('200 OK', [], 5_000_000)), Buffer.alloc(5_000_000, 0x61)])),
    ),
  drip: () =>
    rawReceiver((s) => {
      s.write(head('200 OK', [], 100));
      const timer = setInterval(() => (s.destroyed ? clearInterval(timer) : s.write('a')), 200);
      s.on('close', () => clearInterval(timer));
    }),
  retryGarbage: () => rawReceiver((s) => s.end(`${head('503 X', ['retry-after: soon, maybe \u00ff'], 0)}`)),
  retryHuge: () => rawReceiver((s) => s.end(`${head('429 X', ['retry-after: 99999999999999999999'], 0)}`)),
  gone: () => rawReceiver((s) => s.end(`${head('410 Gone', [], 0)}`)),
  reset: () => rawReceiver((s) => s.resetAndDestroy()),
};

for (const kind of DATABASE_KINDS) {
  describe(`hostile webhook receivers against the built server (${kind})`, () => {
    let database: TestDatabase;
    let server: BuiltServer;
    let baseUrl = '';
    let hostileKey = '';
    let canaryKey = '';
    const servers: (Server | HttpServer)[] = [];
    const canaryIds: string[] = [];

    const listen = async (receiver: Server | HttpServer) => {
      servers.push(receiver);
      receiver.listen(0, '127.0.0.1');
      await new Promise((resolve) => receiver.once('listening', resolve));
      return `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    };
    const api = async (key: string, method: string, path: string, body?: unknown) => {
      const response = await fetch(`${baseUrl}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${key}`,
          ...(body !== undefined && { 'content-type': 'application/json' }),
        },
        ...(body !== undefined && { body: JSON.stringify(body) }),
      });
      const text = await response.text();
      // Every call here answers JSON (no 204).
      return { response, body: JSON.parse(text) as Record<string, unknown> };
    };

    beforeAll(async () => {
      requireBuiltServer();
      database = await createTestDatabase(kind);
      const env = {
        ...databaseEnv(database),
        WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32',
        WEBHOOK_TIMEOUT: `${TIMEOUT_MS}ms`,
        WEBHOOK_LEASE: `${LEASE_MS}ms`,
        WEBHOOK_RETRY_SCHEDULE: '100ms,100ms',
        WEBHOOK_THROTTLED_MIN_DELAY: '100ms',
        WEBHOOK_POLL_INTERVAL: '50ms',
        // What hostile answers are recorded as, each endpoint's deliveries settled in 30 s: no endpoint
        // throttle, which would put a failing endpoint's attempts off (tenant-fairness.test.ts tests it).
        WEBHOOK_BREAKER_THRESHOLD: '0',
      };
      server = new BuiltServer(env);
      baseUrl = await server.baseUrl();
      await server.waitUntilReady();
      hostileKey = server.firstKey() ?? '';
      const created = await runBuiltCli(['create-key', '--tenant', 'canary'], env);
      canaryKey = created.stdout.trim();
      expect(canaryKey).toMatch(/^sk_/);
    }, 60_000);

    afterAll(async () => {
      const errors = server.logLines().filter((line) => line.level === 'error' || line.level === 50);
      await server.stop();
      for (const receiver of servers) {
        (receiver as HttpServer).closeAllConnections?.();
        receiver.close();
      }
      await database.dispose();
      expect(errors, JSON.stringify(errors.slice(0, 3))).toEqual([]);
    }, 60_000);

    it("never stalls, repeats or breaks another tenant's deliveries, and lists every attempt within the contract", async () => {
      const canaryRequests: string[] = [];
      const canaryUrl = await listen(
        createHttpServer((req, res) => {
          canaryRequests.push(String(req.headers['webhook-id']));
          req.resume();
          req.on('end', () => res.end('ok'));
        }),
      );
      const canary = (
        await api(canaryKey, 'POST', '/v1/webhooks/register', { url: canaryUrl, events: ['*'] })
      ).body;
      const hostile: Record<string, string> = {};
      for (const [name, start] of Object.entries(RECEIVERS)) {
        const url = await listen(start());
        const registered = await api(hostileKey, 'POST', '/v1/webhooks/register', {
          url,
          events: ['*'],
          description: name,
        });
        expect(registered.response.status).toBe(201);
        hostile[name] = registered.body.id as string;
      }
      // Interleaved: the canary's events share batches with the hostile ones.
      for (let i = 0; i < CANARY_EVENTS; i++) {
        for (const id of Object.values(hostile)) await api(hostileKey, 'POST', `/v1/webhooks/${id}/test`);
        const test = await api(canaryKey, 'POST', `/v1/webhooks/${canary.id}/test`);
        expect(test.response.status).toBe(202);
        canaryIds.push((test.body as { event_id?: string }).event_id ?? '');
      }
      // Every hostile delivery settles (no pending left) and the canary's all succeed.
      const deadline = Date.now() + 30_000;
      const pending = async () => {
        let left = 0;
        for (const [key, id] of [
          [canaryKey, canary.id as string],
          ...Object.values(hostile).map((h) => [hostileKey, h]),
        ] as [string, string][]) {
          const list = await api(key, 'GET', `/v1/webhooks/${id}/deliveries?limit=100`);
          expectDocumentedResponse(
            { method: 'get', path: '/v1/webhooks/{id}/deliveries' },
            list.response,
            list.body,
          );
          // A delivery parked by a huge Retry-After waits its capped day: settled for this test.
          left += (list.body.data as { status: string; next_attempt_at: string | null }[]).filter(
            (d) => d.status === 'pending' && Date.parse(d.next_attempt_at ?? '') < Date.now() + 60_000,
          ).length;
        }
        return left;
      };
      while ((await pending()) > 0) {
        expect(Date.now(), 'deliveries still pending after 30 s').toBeLessThan(deadline);
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
      // Longer than a lease: nothing is sent again.
      await new Promise((resolve) => setTimeout(resolve, LEASE_MS + 500));
      expect(canaryRequests).toHaveLength(CANARY_EVENTS);
      expect(new Set(canaryRequests).size).toBe(CANARY_EVENTS);
      const canaryDeliveries = (await api(canaryKey, 'GET', `/v1/webhooks/${canary.id}/deliveries?limit=100`))
        .body.data as {
        status: string;
        attempt_count: number;
      }[];
      expect(canaryDeliveries.map((d) => [d.status, d.attempt_count])).toEqual(
        Array(CANARY_EVENTS).fill(['succeeded', 1]),
      );

      // Every hostile attempt is listed within the contract, with at most the schedule's attempts.
      const seen = new Map<string, { status_code: number; error: string | null }[]>();
      for (const [name, id] of Object.entries(hostile)) {
        const deliveries = (await api(hostileKey, 'GET', `/v1/webhooks/${id}/deliveries?limit=100`)).body
          .data as {
          id: string;
          attempt_count: number;
        }[];
        for (const delivery of deliveries) {
          expect(delivery.attempt_count, name).toBeLessThanOrEqual(3);
          const attempts = await api(
            hostileKey,
            'GET',
            `/v1/webhooks/${id}/deliveries/${delivery.id}/attempts`,
          );
          expectDocumentedResponse(
            { method: 'get', path: '/v1/webhooks/{id}/deliveries/{delivery_id}/attempts' },
            attempts.response,
            attempts.body,
          );
          seen.set(name, [
            ...(seen.get(name) ?? []),
            ...(attempts.body.data as { status_code: number; error: string | null }[]),
          ]);
        }
      }
      expect(seen.get('nul')?.[0]).toMatchObject({ status_code: 200, error: null });
      expect(seen.get('status600')?.[0]?.error).toMatch(/^invalid_response/);
      expect(seen.get('status101')?.[0]?.error).toMatch(/^invalid_response/);
      expect(seen.get('drip')?.[0]?.error).toBe('timeout');
      expect(seen.get('body5mb')?.[0]).toMatchObject({ status_code: 200, error: null });
      // A huge Retry-After is honoured up to one day, never more.
      const parked = (await api(hostileKey, 'GET', `/v1/webhooks/${hostile.retryHuge}/deliveries?limit=100`))
        .body.data as {
        next_attempt_at: string | null;
      }[];
      for (const delivery of parked) {
        const at = Date.parse(delivery.next_attempt_at ?? '');
        if (!Number.isNaN(at)) expect(at).toBeLessThanOrEqual(Date.now() + 86_400_000);
      }
      // 410 disabled the webhook after its first delivery: the rest were cancelled, not sent.
      expect(
        ((await api(hostileKey, 'GET', `/v1/webhooks/${hostile.gone}`)).body as { status: string }).status,
      ).toBe('disabled');
    }, 120_000);
  });
}
