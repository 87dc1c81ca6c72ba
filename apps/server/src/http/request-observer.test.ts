import type { AddressInfo } from 'node:net';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { observeRequests } from './request-observer.js';

describe('the request log', () => {
  const lines: { level: string; fields: Record<string, unknown> | undefined }[] = [];
  const logger = {
    info: (_: string, fields?: Record<string, unknown>) => lines.push({ level: 'info', fields }),
    error: (_: string, fields?: Record<string, unknown>) => lines.push({ level: 'error', fields }),
  };
  const observed: Record<string, string>[] = [];
  const metrics = {
    httpRequestDuration: { observe: (labels: Record<string, string>) => observed.push(labels) },
  };
  let base = '';
  let close = () => {};
  beforeAll(async () => {
    const app = express();
    app.use((_req, res, next) => {
      res.locals.startedAt = performance.now();
      next();
    });
    app.use(observeRequests(logger, metrics as never));
    app.get('/readyz', (_req, res) => {
      res.locals.operationId = 'getReadiness';
      res.status(503).json({ status: 'draining' });
    });
    app.get('/boom', (_req, res) => {
      res.locals.operationId = 'scoreSubject';
      res.status(500).end();
    });
    // Never answered: the client leaves first (or a shutdown's grace cuts it).
    app.get('/hang', (_req, res) => {
      res.locals.operationId = 'scoreSubject';
    });
    const server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    close = () => server.close();
  });
  afterAll(() => close());

  async function logOf(path: string) {
    lines.length = 0;
    await (await fetch(`${base}${path}`)).arrayBuffer();
    await new Promise((resolve) => setTimeout(resolve, 20));
    return lines;
  }

  it('logs a draining or starting probe (503) at info: the state it reports, not an error', async () => {
    expect(await logOf('/readyz')).toEqual([
      { level: 'info', fields: expect.objectContaining({ operation: 'getReadiness', status: 503 }) },
    ]);
  });

  it('logs any other 5xx at error', async () => {
    expect(await logOf('/boom')).toEqual([
      { level: 'error', fields: expect.objectContaining({ operation: 'scoreSubject', status: 500 }) },
    ]);
  });

  it('logs and counts a request whose connection closed before any answer as 499 aborted, not 200', async () => {
    lines.length = 0;
    observed.length = 0;
    const leaving = new AbortController();
    const request = fetch(`${base}/hang`, { signal: leaving.signal }).catch(() => undefined);
    await new Promise((resolve) => setTimeout(resolve, 50));
    leaving.abort();
    await request;
    await expect.poll(() => lines.length).toBe(1);
    expect(lines[0]).toEqual({
      level: 'info',
      fields: expect.objectContaining({ operation: 'scoreSubject', status: 499, aborted: true }),
    });
    expect(observed).toEqual([expect.objectContaining({ http_response_status_code: '499' })]);
  });

  it('samples the lines of requests refused before a key was found, saying how many it left out', async () => {
    const sampledLines: Record<string, unknown>[] = [];
    const sink = {
      info: (_: string, fields?: Record<string, unknown>) => sampledLines.push(fields ?? {}),
      error: (_: string, fields?: Record<string, unknown>) => sampledLines.push(fields ?? {}),
    };
    let time = 0;
    const app = express();
    app.use((_req, res, next) => {
      res.locals.startedAt = performance.now();
      next();
    });
    app.use(observeRequests(sink, metrics as never, { unauthenticatedLinesPerSecond: 3, now: () => time }));
    app.get('/anonymous', (_req, res) => res.status(401).end());
    app.get('/authenticated', (_req, res) => {
      res.locals.apiKey = { tenantId: 'tenant', keyId: 'key', scope: 'full' };
      res.status(429).end();
    });
    const server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const get = async (path: string) => {
      await (await fetch(`${url}${path}`)).arrayBuffer();
      await new Promise((resolve) => setTimeout(resolve, 5));
    };
    try {
      for (let n = 0; n < 10; n++) await get('/anonymous');
      // A tenant's own 429 is not sampled.
      for (let n = 0; n < 5; n++) await get('/authenticated');
      expect(sampledLines.filter((line) => line.tenant === undefined)).toHaveLength(3);
      expect(sampledLines.filter((line) => line.tenant === 'tenant')).toHaveLength(5);
      time += 1000;
      await get('/anonymous');
      expect(sampledLines.at(-1)).toMatchObject({ status: 401, suppressed: 7 });
      await get('/anonymous');
      expect(sampledLines.at(-1)).not.toHaveProperty('suppressed');
    } finally {
      server.close();
    }
  });
});
