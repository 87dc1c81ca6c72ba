import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { Witness } from './witness.js';

/** The largest add-checkpoint body read: 63 proof lines and a checkpoint with many signatures fit well. */
const MAX_BODY_BYTES = 64 * 1024;

/** How long a client may take, and how many it may be, before the witness lets it go. */
export interface WitnessServerLimits {
  /** The whole request, headers and body: past it the connection is closed (408). 10 s. */
  requestTimeoutMs?: number;
  /** The headers alone. 5 s. */
  headersTimeoutMs?: number;
  /** Connections open at once; more are refused at once. 512. */
  maxConnections?: number;
  /**
   * Connections open at once from one address; more from it are closed at once, so one client cannot take
   * every connection from the logs it serves. 16.
   */
  maxConnectionsPerAddress?: number;
}

/**
 * An HTTP server for `witness` under the URL prefix `prefix` (submission and monitoring prefix alike, no
 * trailing slash): `POST <prefix>/add-checkpoint` and `GET <prefix>/<origin hash>/checkpoint`; anything
 * else 404 (405 for another method on add-checkpoint). A witness faces the internet: a client that sends
 * its request slowly is cut off after `limits` (a log's add-checkpoint is a few kilobytes, sent at once),
 * a body over 64 KiB is answered 413 and its connection closed.
 */
export function createWitnessServer(witness: Witness, prefix = '', limits: WitnessServerLimits = {}): Server {
  const requestTimeout = limits.requestTimeoutMs ?? 10_000;
  const options = {
    requestTimeout,
    headersTimeout: Math.min(limits.headersTimeoutMs ?? 5_000, requestTimeout),
    // Node checks those timeouts this often (30 s by default, which would let a slow client stay that long).
    connectionsCheckingInterval: Math.min(1_000, Math.max(50, requestTimeout / 4)),
  };
  const server = createServer(options, async (request, response) => {
    const reply = (status: number, contentType: string, body: string) => {
      response.writeHead(status, { 'content-type': contentType, 'cache-control': 'no-store' });
      response.end(body);
    };
    try {
      const path = new URL(request.url ?? '/', 'http://witness').pathname;
      if (path === `${prefix}/add-checkpoint`) {
        if (request.method !== 'POST') {
          response.setHeader('allow', 'POST');
          return reply(405, 'text/plain; charset=utf-8', 'POST only\n');
        }
        const body = await readBody(request);
        if (body === undefined) {
          // The rest of the body is not read: the connection closes after the answer.
          response.setHeader('connection', 'close');
          return reply(413, 'text/plain; charset=utf-8', 'body too large\n');
        }
        const answer = await witness.addCheckpoint(body);
        return reply(answer.status, answer.contentType, answer.body);
      }
      const monitor = new RegExp(`^${escapeRegExp(prefix)}/([0-9a-f]{64})/checkpoint$`).exec(path);
      if (monitor && (request.method === 'GET' || request.method === 'HEAD')) {
        const answer = await witness.latestCheckpoint(monitor[1] as string);
        return reply(answer.status, answer.contentType, answer.body);
      }
      reply(404, 'text/plain; charset=utf-8', 'not found\n');
    } catch (error) {
      // A client cut off (timed out, or gone) mid-body: nothing to answer, nothing wrong with the witness.
      if (request.destroyed || response.destroyed) return;
      reply(500, 'text/plain; charset=utf-8', 'internal error\n');
      process.emitWarning(error as Error);
    }
  });
  server.maxConnections = limits.maxConnections ?? 512;
  const perAddress = limits.maxConnectionsPerAddress ?? 16;
  const open = new Map<string, number>();
  server.on('connection', (socket) => {
    const address = socket.remoteAddress ?? '';
    const count = (open.get(address) ?? 0) + 1;
    if (count > perAddress) {
      socket.destroy();
      return;
    }
    open.set(address, count);
    socket.once('close', () => {
      const left = (open.get(address) ?? 1) - 1;
      if (left > 0) open.set(address, left);
      else open.delete(address);
    });
  });
  return server;
}

async function readBody(request: IncomingMessage): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) return undefined;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
