import { connect, type Socket } from 'node:net';
import { gzipSync } from 'node:zlib';
import { waitUntil } from '@scenario-scoring/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forEachDatabase } from '../../test/support/test-databases.js';
import { testFeatures } from '../../test/support/test-features.js';
import { startTestServer, type TestServer } from '../../test/support/test-server.js';
import { BodyBudget, TENANT_BODIES } from './body-budget.js';

describe('BodyBudget', () => {
  it("holds a tenant to its share and every tenant together to the instance's budget", () => {
    const budget = new BodyBudget(300, 200);
    expect(budget.reserve('a', 150)).toBe(true);
    expect(budget.reserve('a', 60)).toBe(false); // a's share
    expect(budget.reserve('b', 140)).toBe(true);
    expect(budget.reserve('c', 20)).toBe(false); // the instance's
    budget.release('a', 150);
    expect(budget.reserve('c', 20)).toBe(true);
    expect(budget.held).toBe(160);
  });
});

const BODY_LIMIT = 10_000;
const SCORE = JSON.stringify({
  subject: 'applicant-1',
  context: {
    jurisdiction: 'DE',
    on_time_ratio: 0.9,
    utilization: 0.3,
    history_months: 60,
    debt_to_income: 0.3,
  },
});

forEachDatabase('bodies arriving at once', ({ storage }) => {
  let server: TestServer;
  const held: Socket[] = [];
  beforeAll(async () => {
    server = await startTestServer({ storage: storage(), config: { bodyLimitBytes: BODY_LIMIT } });
  });
  afterAll(async () => {
    for (const socket of held) socket.destroy();
    await server.close();
  });

  /** A connection to the server, kept in `held`, collecting what it is answered. */
  const open = async () => {
    const { port } = new URL(server.url);
    const socket = connect(Number(port), '127.0.0.1');
    held.push(socket);
    let answer = '';
    socket.on('data', (chunk) => (answer += chunk));
    socket.on('error', () => {});
    await new Promise((resolve) => socket.once('connect', resolve));
    return { socket, answer: () => answer };
  };
  const head = (key: string, length: number, extra = '') =>
    `POST /v1/scoring/score HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer ${key}\r\n` +
    `Content-Type: application/json\r\n${extra}Content-Length: ${length}\r\n\r\n`;

  /** Opens a connection that sends a scoring's head and all of a large body but its last byte, and waits. */
  const holdBody = async (key: string) => {
    const connection = await open();
    connection.socket.write(`${head(key, BODY_LIMIT)}${' '.repeat(BODY_LIMIT - 1)}`);
    return connection;
  };

  /** The same with a gzip body of the limit's size once inflated, which is a few dozen bytes on the wire. */
  const holdGzipBody = async (key: string) => {
    const gzip = gzipSync(`${SCORE}${' '.repeat(BODY_LIMIT - SCORE.length - 10)}`);
    const connection = await open();
    connection.socket.write(head(key, gzip.length, 'Content-Encoding: gzip\r\n'));
    connection.socket.write(gzip.subarray(0, -8));
    return connection;
  };

  /**
   * Holds TENANT_BODIES bodies of `key`'s tenant (made by `hold`), waits until they are read up to their
   * end, then sends one more scoring: the holders (an unanswered one was let in) and that scoring's answer.
   */
  const fillShare = async (key: string, hold = holdBody) => {
    const holders = [];
    for (let i = 0; i < TENANT_BODIES; i++) holders.push(await hold(key));
    await new Promise((resolve) => setTimeout(resolve, 200));
    const past = await server.request('/v1/scoring/score', { key, method: 'POST', body: SCORE });
    return { holders, past };
  };

  /** Whether `key`'s tenant may hold TENANT_BODIES bodies, and no more; the held bodies are let go after. */
  const shareIsWhole = async (key: string) => {
    const { holders, past } = await fillShare(key);
    const whole = holders.every((holder) => holder.answer() === '') && past.status === 429;
    for (const socket of held.splice(0)) socket.destroy();
    return whole;
  };

  it("answers 429 to a tenant's bodies past its share, while another tenant scores", async () => {
    const features = testFeatures(storage());
    const { key: greedy } = await features.keys.create('greedy');
    const { key: other } = await features.keys.create('other');
    // Each held body is read up to its last byte: the share is full once all of them are.
    const { holders, past } = await fillShare(greedy);
    expect(past.status).toBe(429);
    expect(past.headers.get('retry-after')).toBe('1');
    expect(await past.json()).toMatchObject({ code: 'rate_limited' });
    const scored = await server.request('/v1/scoring/score', { key: other, method: 'POST', body: SCORE });
    expect(scored.status).toBe(200);
    for (const holder of holders) expect(holder.answer()).toBe('');

    // The held bodies given up, the tenant's share is free again.
    for (const socket of held.splice(0)) socket.destroy();
    await waitUntil(async () => {
      const again = await server.request('/v1/scoring/score', { key: greedy, method: 'POST', body: SCORE });
      return again.status === 200;
    });
  });

  it('counts a compressed body at the limit, not at its size on the wire: the parser holds it inflated', async () => {
    const { key } = await testFeatures(storage()).keys.create('gzip');
    const { holders, past } = await fillShare(key, holdGzipBody);
    for (const holder of holders) expect(holder.answer()).toBe('');
    expect(past.status).toBe(429);
    for (const socket of held.splice(0)) socket.destroy();
  });

  it('gives back what a request reset at once had taken: the share is whole after many resets', async () => {
    const { key } = await testFeatures(storage()).keys.create('resets');
    for (let round = 0; round < 10; round++) {
      const connections = await Promise.all(Array.from({ length: 20 }, () => open()));
      for (const { socket } of connections) {
        socket.write(head(key, BODY_LIMIT));
        setImmediate(() => socket.resetAndDestroy());
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    held.splice(0);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await shareIsWhole(key)).toBe(true);
  });

  it('gives a body back once it has been read, so a tenant may send more than its share one after another', async () => {
    const { key } = await testFeatures(storage()).keys.create('sequential');
    for (let i = 0; i < TENANT_BODIES * 2; i++) {
      const scored = await server.request('/v1/scoring/score', {
        key,
        method: 'POST',
        body: `${SCORE}${' '.repeat(BODY_LIMIT - SCORE.length - 10)}`,
      });
      expect(scored.status).toBe(200);
    }
  });

  it('answers forty scorings pipelined on one connection with no leak warning, and gives every body back', async () => {
    const { key } = await testFeatures(storage()).keys.create('pipelined');
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(warning.name);
    process.on('warning', onWarning);
    try {
      const connection = await open();
      connection.socket.write(`${head(key, SCORE.length)}${SCORE}`.repeat(40));
      await waitUntil(() => connection.answer().match(/HTTP\/1\.1 200/g)?.length === 40);
      // A listener a request on the socket went past Node's 10 and warned of a leak.
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings).not.toContain('MaxListenersExceededWarning');
    } finally {
      process.off('warning', onWarning);
      for (const socket of held.splice(0)) socket.destroy();
    }
    expect(await shareIsWhole(key)).toBe(true);
  });
});
