import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { RequestHandler } from 'express';
import { AppError } from '../errors/app-error.js';

/** What is wrong with a request that the server still routes, to refuse it with a problem. */
interface RequestProblem {
  code: 'malformed_request' | 'expectation_failed';
  detail: string;
}
const requestProblems = new WeakMap<IncomingMessage, RequestProblem>();

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
 * What is wrong with a request's Host header: HTTP/1.1 requires exactly one (RFC 9112 §3.2: a server
 * answers 400 to a request without one, or with more than one). Node's own check answers a bare 400 with
 * no body, and Node keeps the first of several.
 */
function hostProblem(req: IncomingMessage): string | undefined {
  if (req.headers.host === undefined)
    return req.httpVersionMajor === 1 && req.httpVersionMinor === 0
      ? undefined
      : 'The request has no Host header, which HTTP/1.1 requires.';
  let hosts = 0;
  const raw = req.rawHeaders;
  for (let n = 0; n < raw.length; n += 2) {
    const name = raw[n] as string;
    if (name.length === 4 && name.toLowerCase() === 'host') hosts++;
  }
  return hosts > 1 ? 'The request has more than one Host header; send exactly one.' : undefined;
}

/**
 * Wraps the server's request listener: a target that is not a plain path (see originFormTarget) is put
 * into origin form before Express sees it, and a request that cannot be served (such a target, or a
 * missing or repeated Host header) is marked for `refuseMalformedRequests`, which answers it with a problem
 * like any other error (request id, log line). The server must be made with `requireHostHeader: false`
 * (see createApiServer), or Node answers a missing Host itself.
 */
export function withOriginFormTargets(listener: RequestListener): RequestListener {
  return (req: IncomingMessage, res: ServerResponse) => {
    const url = req.url ?? '/';
    if (url.charCodeAt(0) !== 0x2f || url.includes('#')) {
      const { target, problem } = originFormTarget(url);
      req.url = target;
      if (problem !== undefined) requestProblems.set(req, { code: 'malformed_request', detail: problem });
    }
    const host = hostProblem(req);
    if (host !== undefined) requestProblems.set(req, { code: 'malformed_request', detail: host });
    listener(req, res);
  };
}

/**
 * The server's `checkExpectation` listener: a request whose `Expect` is not `100-continue` (the only
 * expectation HTTP defines) is served by `listener` marked to be refused with 417 `expectation_failed`,
 * where Node would answer a bare 417 with no body. As after any answer that leaves a body unread, the body
 * is read off and discarded, up to a bound (unread-body.ts), and the connection carries the next request.
 */
export function refuseUnmetExpectations(listener: RequestListener): RequestListener {
  return (req, res) => {
    const expect = String(req.headers.expect).slice(0, 100);
    requestProblems.set(req, {
      code: 'expectation_failed',
      detail: `The server meets no expectation but 100-continue; it cannot meet "Expect: ${expect}".`,
    });
    listener(req, res);
  };
}

/** Refuses a request that `withOriginFormTargets` or `refuseUnmetExpectations` marked. */
export const refuseMalformedRequests: RequestHandler = (req, _res, next) => {
  const problem = requestProblems.get(req);
  if (problem !== undefined) throw new AppError(problem.code, { detail: problem.detail });
  next();
};
