import type { RequestHandler, Response } from 'express';
import { newId } from '../common/ids.js';

/** A client's request id is echoed only when it is this safe to put in logs and headers. */
export const CLIENT_REQUEST_ID_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;

/** Gives every request an id (the client's valid `X-Request-Id`, else a new `req_` id) and echoes it. */
export const requestId: RequestHandler = (req, res, next) => {
  const incoming = req.headers['x-request-id'];
  const valid = typeof incoming === 'string' && CLIENT_REQUEST_ID_PATTERN.test(incoming);
  const id = valid ? incoming : newId('req');
  res.locals.requestId = id;
  res.locals.requestIdGenerated = !valid;
  res.setHeader('X-Request-Id', id);
  next();
};

/** The request's `req_` id, for a response body: the header's when made here, else a new one. */
export function ownRequestId(res: Response): string {
  return res.locals.requestIdGenerated ? res.locals.requestId : newId('req');
}
