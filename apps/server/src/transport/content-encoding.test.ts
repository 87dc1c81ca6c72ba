import { gzipSync } from 'node:zlib';
import type { Problem } from '@scenario-scoring/api-types';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { forEachDatabase } from '../../test/support/test-databases.js';
import { testFeatures } from '../../test/support/test-features.js';
import { startTestServer, type TestServer } from '../../test/support/test-server.js';
import type { Logger } from '../request-logging/logger.js';

const BODY = JSON.stringify({ subject: 's-1', context: { jurisdiction: 'DE', utilization: 0.35 } });

// Defect #4: a corrupt gzip body, or a plain body labelled br, answered 500 with a stack in the log.
forEachDatabase('request Content-Encoding', ({ storage }) => {
  let server: TestServer;
  let key: string;
  const errors: unknown[] = [];
  const logger: Logger = { info() {}, error: (...args) => errors.push(args) };
  beforeAll(async () => {
    ({ key } = await testFeatures(storage()).keys.create('encoding'));
    server = await startTestServer({ storage: storage(), logger });
  });
  afterAll(() => server.close());

  const post = (body: Buffer | string, encoding: string) =>
    fetch(`${server.url}/v1/scoring/score`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${key}`,
        'content-type': 'application/json',
        'content-encoding': encoding,
      },
      body,
    });

  it('accepts identity and gzip', async () => {
    expect((await post(BODY, 'identity')).status).toBe(200);
    expect((await post(gzipSync(BODY), 'gzip')).status).toBe(200);
    expect((await post(gzipSync(BODY), 'GZIP')).status).toBe(200);
  });

  it('refuses an undeclared encoding with 415 naming it', async () => {
    for (const encoding of ['br', 'deflate', 'zstd', 'gzip, gzip', 'x-bogus']) {
      const response = await post(BODY, encoding);
      expect(response.status, encoding).toBe(415);
      const problem = (await response.json()) as Problem;
      expect(problem.code).toBe('unsupported_media_type');
      expect(problem.detail).toContain(encoding);
    }
  });

  it('answers a corrupt or truncated gzip body with 400, logging no error', async () => {
    const truncated = gzipSync(BODY).subarray(0, 20);
    for (const body of [Buffer.from(BODY), truncated, Buffer.from([0x1f, 0x8b, 8, 0, 1, 2, 3, 4, 5, 6])]) {
      const response = await post(body, 'gzip');
      expect(response.status).toBe(400);
      expect(((await response.json()) as Problem).code).toBe('malformed_json');
    }
    expect(errors).toEqual([]);
  });
});
