import type { Request, RequestHandler, Response } from 'express';

/**
 * Answers HEAD wherever GET is answered (RFC 9110 §9.3.2: a server must support HEAD where it supports
 * GET): a HEAD request goes on as its GET, through the same operation lookup, authentication, validation
 * and handler, so it gets the same status and headers. It never carries a body: Node decided that when the
 * request arrived as HEAD, whatever the method says later. The request log still says HEAD.
 * A handler whose answer is costly to make and has no length known beforehand checks `res.locals.head`
 * and answers the headers alone (a run's NDJSON results, runs/run-routes.ts); the other GETs answer one
 * bounded page or record, built for its Content-Length.
 */
export const headAsGet: RequestHandler = (req, res, next) => {
  if (req.method === 'HEAD') {
    req.method = 'GET';
    res.locals.head = true;
  }
  next();
};

/** The method the request came with, for logs: HEAD for a HEAD served as its GET. */
export function requestMethod(req: Request, res: Response): string {
  return res.locals.head ? 'HEAD' : req.method;
}
