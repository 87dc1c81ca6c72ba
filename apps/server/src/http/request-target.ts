import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { RequestHandler } from 'express';
import { AppError } from '../errors/app-error.js';

/** What is wrong with a request target that the server still routes (to refuse it with a problem). */
const targetProblems = new WeakMap<IncomingMessage, string>();

const ABSOLUTE_FORM = /^https?:\/\/[^/?#]*/i;

/**
 * The origin form (`/path?query`) of a request target, and what is wrong with it if anything:
 * - an absolute-form target (`http://host/path?query`, which RFC 9112 has servers accept) is its path and
 *   query;
 * - a fragment (`/healthz#x`) is never part of a request target (clients do not send it): the target is
 *   refused, as is anything else that is not a path (`*`).
 * Express's router would otherwise hand such a target to `url.parse` (a deprecation warning, once per
 * process) and answer 404 naming a path that exists.
 */
export function originFormTarget(url: string): { target: string; problem?: string } {
  let target = url;
  const absolute = ABSOLUTE_FORM.exec(target);
  if (absolute) {
    target = target.slice(absolute[0].length);
    if (!target.startsWith('/')) target = `/${target}`;
  }
  const hash = target.indexOf('#');
  if (hash >= 0)
    return {
      target: target.slice(0, hash) || '/',
      problem:
        'The request target holds a fragment ("#…"), which is not part of an HTTP request: percent-encode a "#" that belongs to a value as %23.',
    };
  if (!target.startsWith('/'))
    return { target: '/', problem: 'The request target must be a path such as /v1/scoring/score.' };
  return { target };
}

/**
 * Wraps the server's request listener: a target that is not a plain path (see originFormTarget) is put
 * into origin form before Express sees it, and one that cannot be served is marked for
 * `refuseMalformedTargets`, which answers it with a problem like any other error (request id, log line).
 */
export function withOriginFormTargets(listener: RequestListener): RequestListener {
  return (req: IncomingMessage, res: ServerResponse) => {
    const url = req.url ?? '/';
    if (url.charCodeAt(0) !== 0x2f || url.includes('#')) {
      const { target, problem } = originFormTarget(url);
      req.url = target;
      if (problem !== undefined) targetProblems.set(req, problem);
    }
    listener(req, res);
  };
}

/** Refuses with 400 `malformed_request` a target that `withOriginFormTargets` marked. */
export const refuseMalformedTargets: RequestHandler = (req, _res, next) => {
  const problem = targetProblems.get(req);
  if (problem !== undefined) throw new AppError('malformed_request', { detail: problem });
  next();
};
