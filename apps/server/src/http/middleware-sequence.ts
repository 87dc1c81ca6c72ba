import type { NextFunction, Request, RequestHandler, Response } from 'express';

/**
 * Runs `handlers` one after another as one Express middleware, with Express's own rules: a handler passes
 * on by calling `next()`, fails by calling `next(error)`, throwing, or returning a promise that rejects
 * (each goes to the app's error handler, as Express 5 does); `next('route')` and `next('router')` are
 * handed to Express as they are.
 *
 * Why: every `app.use` is a layer that Express's router matches, wraps and dispatches on every request.
 * The server's dozen app-wide middlewares in one layer cost one dispatch instead of twelve (the
 * profile is in docs/benchmarks.md).
 */
export function inSequence(handlers: readonly RequestHandler[]): RequestHandler {
  const chain = [...handlers];
  return (req: Request, res: Response, done: NextFunction) => {
    let index = 0;
    const next: NextFunction = (outcome?: unknown) => {
      if (outcome !== undefined && outcome !== null) return done(outcome);
      const handler = chain[index++];
      if (handler === undefined) return done();
      try {
        const returned: unknown = handler(req, res, next);
        if (returned instanceof Promise)
          returned.then(undefined, (error: unknown) => done(error ?? new Error('Rejected promise')));
      } catch (error) {
        done(error);
      }
    };
    next();
  };
}
