import { createServer, type RequestListener, type Server, type ServerOptions } from 'node:http';
import { answerClientErrors } from './client-error.js';
import { refuseUnmetExpectations, withOriginFormTargets } from './request-target.js';

/**
 * The HTTP server in front of the app, as the runtime listens and the tests start it: request targets put
 * into origin form and requests without exactly one Host header marked before Express sees them
 * (`withOriginFormTargets`; Node's own Host check is off, since it answers a bare 400), an `Expect` other
 * than `100-continue` refused by the app (`refuseUnmetExpectations`) instead of Node's bare 417, and what
 * Node's parser refuses answered with a problem (`answerClientErrors`).
 */
export function createApiServer(app: RequestListener, options: ServerOptions = {}): Server {
  const listener = withOriginFormTargets(app);
  const server = createServer({ ...options, requireHostHeader: false }, listener);
  server.on('checkExpectation', refuseUnmetExpectations(listener));
  answerClientErrors(server);
  return server;
}
