import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../test/support/test-databases.js';
import { testFeatures } from '../../test/support/test-features.js';
import { startTestServer, type TestServer } from '../../test/support/test-server.js';
import { openStorage, type Storage } from '../storage/storage.js';
import { generateWebhookSecret } from '../webhooks/outbound/webhook-signature.js';
import { createLogger, describeError, type Logger } from './logger.js';

/** A logger writing into an array of lines, as pino would write them to stdout. */
function capturingLogger(format: 'json' | 'pretty' = 'json'): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      lines.push(
        ...chunk
          .toString('utf8')
          .split('\n')
          .filter((line) => line !== ''),
      );
      callback();
    },
  });
  const logger = createLogger({ level: 'info', format }, destination);
  return { logger, lines };
}

const API_KEY = `sk_${'A1b2C3d4E5'.repeat(4)}`;
const WEBHOOK_SECRET = generateWebhookSecret();

describe('createLogger', () => {
  it('writes one JSON object per line with level, time, message and the fields', () => {
    const { logger, lines } = capturingLogger();
    logger.info('started', { port: 3000 });
    logger.error('failed', { requestId: 'req_1' });
    expect(lines.map((line) => JSON.parse(line))).toEqual([
      expect.objectContaining({ level: 'info', message: 'started', port: 3000, time: expect.any(String) }),
      expect.objectContaining({ level: 'error', message: 'failed', requestId: 'req_1' }),
    ]);
  });

  it('writes readable lines, not JSON, in the pretty format', () => {
    const { logger, lines } = capturingLogger('pretty');
    logger.info('started', { port: 3000 });
    expect(lines.join('\n')).toMatch(/INFO.*started/);
    expect(() => JSON.parse(lines[0] ?? '')).toThrow();
  });

  it('redacts authorization, secrets, keys, tokens and bodies by name, and masks keys and secrets in any string', () => {
    const { logger, lines } = capturingLogger();
    logger.info(`key ${API_KEY} and secret ${WEBHOOK_SECRET}`, {
      authorization: `Bearer ${API_KEY}`,
      headers: { authorization: `Bearer ${API_KEY}` },
      secret: WEBHOOK_SECRET,
      webhook: { id: 'wh_1', secret: WEBHOOK_SECRET },
      body: { description: WEBHOOK_SECRET },
      note: `the receiver echoed ${WEBHOOK_SECRET}`,
      list: [`Bearer ${API_KEY}`],
    });
    logger.error('unexpected error', {
      error: describeError(new Error(`refused ${API_KEY}`, { cause: new Error(WEBHOOK_SECRET) })),
    });
    const output = lines.join('\n');
    expect(output).not.toContain(API_KEY);
    expect(output).not.toContain(WEBHOOK_SECRET);
    expect(output).not.toContain(WEBHOOK_SECRET.slice('whsec_'.length));
    expect(JSON.parse(lines[0] ?? '')).toMatchObject({
      message: 'key sk_[redacted] and secret whsec_[redacted]',
      authorization: '[redacted]',
      webhook: { id: 'wh_1', secret: '[redacted]' },
      note: 'the receiver echoed whsec_[redacted]',
    });
  });

  it('masks a key or secret wherever it starts, also right after a letter, digit or underscore', () => {
    const { logger, lines } = capturingLogger();
    const id = `trace_${API_KEY}`;
    logger.info(`request ${id}`, {
      requestId: id,
      tenant: `x${WEBHOOK_SECRET}`,
      note: `a9${API_KEY},b${WEBHOOK_SECRET}`,
    });
    const output = lines.join('\n');
    expect(output).not.toContain(API_KEY.slice('sk_'.length));
    expect(output).not.toContain(WEBHOOK_SECRET.slice('whsec_'.length));
    expect(JSON.parse(lines[0] ?? '')).toMatchObject({
      message: 'request trace_sk_[redacted]',
      requestId: 'trace_sk_[redacted]',
      tenant: 'xwhsec_[redacted]',
      note: 'a9sk_[redacted],bwhsec_[redacted]',
    });
  });
});

describe('the request log', () => {
  let database: TestDatabase;
  let storage: Storage;
  let server: TestServer;
  const { logger, lines } = capturingLogger();
  let key: string;
  beforeAll(async () => {
    database = await createTestDatabase('sqlite');
    storage = await openStorage(database.options);
    ({ key } = await testFeatures(storage).keys.create('acme'));
    server = await startTestServer({ storage, logger });
  });
  afterAll(async () => {
    await server.close();
    await storage.close();
    await database.dispose();
  });

  /** The request lines logged so far, parsed. */
  const requestLines = () =>
    lines
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((line) => line.message === 'request');

  /** Waits until `count` request lines are logged: a line is written when the response has ended. */
  async function waitForRequestLines(count: number): Promise<Record<string, unknown>[]> {
    const deadline = Date.now() + 5000;
    while (requestLines().length < count && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 10));
    return requestLines();
  }

  it('writes ONE line per request with request id, tenant, operation, status and duration, and never a key or secret', async () => {
    const before = requestLines().length;
    const scored = await server.request('/v1/scoring/score', {
      key,
      headers: { 'x-request-id': 'client-req-1' },
      body: { subject: 'logged', context: { jurisdiction: 'DE' } },
    });
    expect(scored.status).toBe(200);
    const refused = await server.request('/v1/scoring/policies/DE', { key: API_KEY });
    expect(refused.status).toBe(401);
    const invalid = await server.request('/v1/webhooks/register', {
      key,
      body: { url: 'https://example.com/hook', events: ['run.completed'], description: WEBHOOK_SECRET, x: 1 },
    });
    expect(invalid.status).toBe(400);
    expect((await server.request('/healthz')).status).toBe(200);

    const logged = (await waitForRequestLines(before + 3)).slice(before);
    expect(logged).toEqual([
      expect.objectContaining({
        level: 'info',
        requestId: 'client-req-1',
        tenant: 'acme',
        operation: 'scoreSubject',
        method: 'POST',
        status: 200,
        durationMs: expect.any(Number),
      }),
      expect.objectContaining({
        operation: 'getPolicy',
        status: 401,
        requestId: expect.stringMatching(/^req_/),
      }),
      expect.objectContaining({ operation: 'registerWebhook', status: 400, tenant: 'acme' }),
    ]);
    // A successful probe is not logged.
    expect(logged.some((line) => line.operation === 'getHealth')).toBe(false);

    const output = lines.join('\n');
    expect(output).not.toContain(key);
    expect(output).not.toContain(API_KEY);
    expect(output).not.toContain(WEBHOOK_SECRET);
    expect(output).not.toContain('https://example.com/hook');
  });
});
