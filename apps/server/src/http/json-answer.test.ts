import type { AddressInfo } from 'node:net';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sendJson } from './json-answer.js';

describe('the JSON answer', () => {
  const value = { id: 'req_1', note: 'é'.repeat(800), nested: { list: [1, 2, 3] } };
  let url: string;
  let close: () => void;
  const wrapped: unknown[] = [];
  beforeAll(async () => {
    const app = express();
    app.set('etag', false);
    app.get('/express', (_req, res) => {
      res.json(value);
    });
    app.get('/ours', (_req, res) => sendJson(res, value));
    app.get('/wrapped', (_req, res) => {
      const original = res.json.bind(res);
      res.json = (body: unknown) => {
        wrapped.push(body);
        return original(body);
      };
      sendJson(res, value);
    });
    const server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    close = () => server.close();
  });
  afterAll(() => close());

  it('when sent, then its bytes, type and length are those of Express’s res.json', async () => {
    const [theirs, ours] = await Promise.all([fetch(`${url}/express`), fetch(`${url}/ours`)]);
    expect(ours.headers.get('content-type')).toBe(theirs.headers.get('content-type'));
    expect(ours.headers.get('content-length')).toBe(theirs.headers.get('content-length'));
    expect(Buffer.from(await ours.arrayBuffer())).toEqual(Buffer.from(await theirs.arrayBuffer()));
  });

  it('when something wrapped res.json on the answer (response validation), then the wrapper sends it', async () => {
    const answer = await fetch(`${url}/wrapped`);
    expect(await answer.json()).toEqual(value);
    expect(wrapped).toEqual([value]);
  });
});
