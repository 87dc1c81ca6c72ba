import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { Witness } from './witness.js';

/** The largest add-checkpoint body read: 63 proof lines and a checkpoint with many signatures fit well. */
const MAX_BODY_BYTES = 64 * 1024;

/**
 * An HTTP server for `witness` under the URL prefix `prefix` (submission and monitoring prefix alike, no
 * trailing slash): `POST <prefix>/add-checkpoint` and `GET <prefix>/<origin hash>/checkpoint`; anything
 * else 404 (405 for another method on add-checkpoint). Keep-alive is Node's default.
 */
export function createWitnessServer(witness: Witness, prefix = ''): Server {
  return createServer(async (request, response) => {
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
        if (body === undefined) return reply(413, 'text/plain; charset=utf-8', 'body too large\n');
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
      reply(500, 'text/plain; charset=utf-8', 'internal error\n');
      process.emitWarning(error as Error);
    }
  });
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
