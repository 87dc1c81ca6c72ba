/**
 * GETs one after the other over one kept-alive connection (node:http, no pool, no fetch): the client a
 * proof benchmark times. `fetch` (undici) adds its own tail here: on this 2-core machine its p99 for the
 * server's /healthz was 2.6-8.3 ms against node:http's 1.6-2.0 ms, which would hide a proof's.
 */
import http from 'node:http';

export interface SequentialTimes {
  /** Requests per second over the whole sequence. */
  rate: number;
  /** Client-side latency percentiles, in fractional milliseconds. */
  p50: number;
  p99: number;
}

/**
 * `count` GETs of `path(i)` on `baseUrl` with `headers`, one at a time; throws on any answer but 200, with
 * its body.
 */
export async function sequentialGets(
  baseUrl: string,
  headers: Record<string, string>,
  count: number,
  path: (i: number) => string,
): Promise<SequentialTimes> {
  const url = new URL(baseUrl);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const get = (target: string) =>
    new Promise<void>((resolve, reject) => {
      const request = http.request(
        { host: url.hostname, port: url.port, path: target, agent, headers },
        (response) => {
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.on('end', () =>
            response.statusCode === 200
              ? resolve()
              : reject(
                  new Error(`GET ${target}: ${response.statusCode} ${Buffer.concat(chunks).toString()}`),
                ),
          );
          response.on('error', reject);
        },
      );
      request.on('error', reject);
      request.end();
    });
  const times: number[] = [];
  const started = performance.now();
  try {
    for (let i = 0; i < count; i++) {
      const t = performance.now();
      await get(path(i));
      times.push(performance.now() - t);
    }
  } finally {
    agent.destroy();
  }
  const elapsed = (performance.now() - started) / 1000;
  times.sort((a, b) => a - b);
  const at = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))] as number;
  return { rate: count / elapsed, p50: at(0.5), p99: at(0.99) };
}
