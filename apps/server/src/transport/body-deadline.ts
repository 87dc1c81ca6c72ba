import type { IncomingMessage, Server } from 'node:http';

const exempt = new WeakSet<IncomingMessage>();

/**
 * Node's request timeout (`server.requestTimeout`) as a timer per request instead, so one route can opt
 * out (see `exemptFromBodyDeadline`): a request whose body has not all come `ms` after its headers is
 * ended as Node ends it, through the server's `clientError` (answered 408 `request_timeout` by
 * answerClientErrors). Node's own request timeout is turned off; its headers timeout stays.
 */
export function enforceBodyDeadline(server: Server, ms: number): void {
  server.requestTimeout = 0;
  server.on('request', (req: IncomingMessage) => {
    if (req.complete) return;
    const timer = setTimeout(() => {
      if (req.complete || exempt.has(req) || req.socket.destroyed) return;
      const error = Object.assign(new Error('Request timeout'), { code: 'ERR_HTTP_REQUEST_TIMEOUT' });
      server.emit('clientError', error, req.socket);
    }, ms);
    timer.unref();
    const clear = () => clearTimeout(timer);
    req.once('end', clear).once('close', clear);
  });
}

/**
 * Exempts a request from enforceBodyDeadline: a route streaming a large body (an NDJSON run) bounds it
 * by its size and an idle timeout of its own instead.
 */
export function exemptFromBodyDeadline(req: IncomingMessage): void {
  exempt.add(req);
}
