import type { Request } from 'express';

/**
 * The address a request is counted under by the per-client limits: the socket's peer. The one place that
 * says what "the client" is, so a trusted-proxy setting can change it for every limit at once.
 */
export function clientAddress(req: Request): string {
  return req.socket.remoteAddress ?? '';
}
