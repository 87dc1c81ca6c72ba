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
  const metrics = { httpRequestDuration: { observe: () => {} } };
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
});
