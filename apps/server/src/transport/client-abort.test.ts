import { request } from 'node:http';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { forEachDatabase } from '../../test/support/test-databases.js';
import { testFeatures } from '../../test/support/test-features.js';
import { startTestServer, type TestServer } from '../../test/support/test-server.js';
import { createMetrics } from '../metrics/metrics.js';
import type { Logger } from '../request-logging/logger.js';

// Defect #5: a client dropping mid-body was logged as a 500 "unexpected error" with a stack.
forEachDatabase('a client that aborts mid-body', ({ storage }) => {
  let server: TestServer;
  let key: string;
  const infos: [string, Record<string, unknown> | undefined][] = [];
  const errors: unknown[] = [];
  const logger: Logger = {
    info: (message: string, fields?: Record<string, unknown>) => infos.push([message, fields]),
    error: (...args: unknown[]) => errors.push(args),
  } as Logger;
  const metrics = createMetrics({ processMetrics: false });
  beforeAll(async () => {
    ({ key } = await testFeatures(storage()).keys.create('abort'));
    server = await startTestServer({ storage: storage(), logger, metrics });
  });
  afterAll(() => server.close());

  it('is logged at info as an abort, never as a 5xx, and counted under 499', async () => {
    const { port } = new URL(server.url);
    await new Promise<void>((resolve) => {
      const req = request({
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/v1/scoring/score',
        headers: {
          authorization: `Bearer ${key}`,
          'content-type': 'application/json',
          'content-length': 1000,
        },
      });
      req.on('error', () => resolve());
      req.write('{"subject": "half');
      setTimeout(() => {
        req.destroy();
        resolve();
      }, 100);
    });
    await expect.poll(() => infos.some(([message]) => message === 'client aborted the request')).toBe(true);
    await expect
      .poll(() => infos.some(([message, fields]) => message === 'request' && fields?.aborted))
      .toBe(true);
    expect(errors).toEqual([]);
    const line = infos.find(([message, fields]) => message === 'request' && fields?.aborted);
    expect(line?.[1]?.status).toBe(499);
    const exported = await metrics.registry.metrics();
    expect(exported).not.toMatch(/status="5\d\d"/);
  });
});
