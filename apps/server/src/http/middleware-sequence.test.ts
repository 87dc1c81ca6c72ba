import express, { type ErrorRequestHandler, type RequestHandler } from 'express';
import { describe, expect, it } from 'vitest';
import { inSequence } from './middleware-sequence.js';

/** Serves `handler` then a final route and an error handler; returns what `GET /` answers. */
async function answer(handler: RequestHandler): Promise<string> {
  const app = express();
  app.use(handler);
  app.get('/', (_req, res) => {
    res.send(`reached ${String(res.locals.trail ?? '')}`);
  });
  const onError: ErrorRequestHandler = (error, _req, res, _next) => {
    res.status(500).send(`error ${(error as Error).message} ${String(res.locals.trail ?? '')}`);
  };
  app.use(onError);
  const server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const { port } = server.address() as { port: number };
  try {
    return await (await fetch(`http://127.0.0.1:${port}/`)).text();
  } finally {
    server.close();
  }
}

const mark =
  (name: string): RequestHandler =>
  (_req, res, next) => {
    res.locals.trail = `${String(res.locals.trail ?? '')}${name}`;
    next();
  };

describe('inSequence', () => {
  it('runs the handlers in order, then passes on', async () => {
    expect(await answer(inSequence([mark('a'), mark('b'), mark('c')]))).toBe('reached abc');
    expect(await answer(inSequence([]))).toBe('reached ');
  });

  it('passes on from handlers that call next later, as async ones do', async () => {
    const later: RequestHandler = async (_req, res, next) => {
      await new Promise((resolve) => setTimeout(resolve, 5));
      res.locals.trail = `${String(res.locals.trail ?? '')}L`;
      next();
    };
    expect(await answer(inSequence([mark('a'), later, mark('b')]))).toBe('reached aLb');
  });

  it('stops at next(error), a throw and a rejected promise, and hands the error to Express', async () => {
    const fail: RequestHandler = (_req, _res, next) => next(new Error('passed'));
    const thrower: RequestHandler = () => {
      throw new Error('thrown');
    };
    const rejecter: RequestHandler = async () => {
      throw new Error('rejected');
    };
    expect(await answer(inSequence([mark('a'), fail, mark('b')]))).toBe('error passed a');
    expect(await answer(inSequence([mark('a'), thrower, mark('b')]))).toBe('error thrown a');
    expect(await answer(inSequence([mark('a'), rejecter, mark('b')]))).toBe('error rejected a');
  });

  it('lets a handler answer without passing on', async () => {
    const answers: RequestHandler = (_req, res) => {
      res.send('answered');
    };
    expect(await answer(inSequence([mark('a'), answers, mark('b')]))).toBe('answered');
  });
});
