import type { Client } from 'openapi-fetch';
import type { paths, Run } from './api-types.js';
import { type CallResult, resultOf } from './call-result.js';
import type { Problem } from './problem-guard.js';
import type { RunItem } from './run-polling.js';

/** How far an NDJSON upload is: bytes and lines sent so far (lines ending in a newline). */
export interface UploadProgress {
  bytes: number;
  lines: number;
}

/**
 * Where an NDJSON run's items come from: a file's path (Node only; a string is always a path, never the
 * NDJSON itself), a web stream, or any async iterable of bytes or strings. NDJSON text you hold in memory
 * goes as `new Blob([text]).stream()`.
 */
export type NdjsonSource = string | ReadableStream<Uint8Array> | AsyncIterable<Uint8Array | string>;

/**
 * Starts a run from NDJSON (`POST /v1/scoring/runs` as `application/x-ndjson`, one `{subject, context}`
 * per line; see the contract for the rule on bad lines and the limits), streaming `source` without
 * holding it in memory, and calling `onProgress` as chunks are handed to the connection. A path is read
 * with `node:fs` (loaded only then), and opened before the request: a file that cannot be read rejects at
 * once with an error naming it (its `code`, such as `ENOENT`, and the system error as `cause`), without
 * sending anything. Answers the queued run, or the problem (413 `payload_too_large` past the limits). The
 * upload is never retried (its body is a stream): with an `idempotencyKey`, calling this again after a
 * network error is safe.
 */
export async function uploadRunNdjson(
  client: Client<paths>,
  source: NdjsonSource,
  options: {
    idempotencyKey?: string;
    onProgress?: (progress: UploadProgress) => void;
    signal?: AbortSignal;
  } = {},
): Promise<CallResult<Run>> {
  const progress: UploadProgress = { bytes: 0, lines: 0 };
  const encoder = new TextEncoder();
  const chunks = await chunksOf(source);
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const next = await chunks.next();
      if (next.done) {
        controller.close();
        return;
      }
      const bytes = typeof next.value === 'string' ? encoder.encode(next.value) : next.value;
      progress.bytes += bytes.length;
      for (const byte of bytes) if (byte === 0x0a) progress.lines += 1;
      controller.enqueue(bytes);
      options.onProgress?.({ ...progress });
    },
    async cancel() {
      await chunks.return?.(undefined);
    },
  });
  const headers: Record<string, string> = { 'Content-Type': 'application/x-ndjson' };
  if (options.idempotencyKey !== undefined) headers['Idempotency-Key'] = options.idempotencyKey;
  const { data, error, response } = await client
    .POST('/v1/scoring/runs', {
      body: body as never,
      bodySerializer: (stream: unknown) => stream as never,
      headers,
      // fetch sends a stream only half-duplex.
      duplex: 'half',
      ...(options.signal && { signal: options.signal }),
    } as never)
    .catch(async (failure: unknown) => {
      // Close the file this opened, which a failed request may have left unread (a caller's stream is theirs).
      if (typeof source === 'string') await chunks.return?.(undefined).catch(() => {});
      throw failure;
    });
  return resultOf(data as Run | undefined, error as Problem | undefined, response);
}

async function chunksOf(source: NdjsonSource): Promise<AsyncIterator<Uint8Array | string>> {
  if (typeof source === 'string') {
    // A file path exists only in Node: the module name is a value, not a literal, so that a web app's
    // bundler (esbuild, Vite, webpack) leaves the import alone instead of failing to resolve `node:fs`.
    const fsModule: string = 'node:fs/promises';
    const { open } = (await import(
      /* @vite-ignore */ /* webpackIgnore: true */ fsModule
    )) as typeof import('node:fs/promises');
    // Opened now, so that a missing file fails here, naming it, rather than as fetch's "fetch failed".
    const file = await open(source, 'r').catch((failure: unknown) => {
      throw unreadableFile(source, failure);
    });
    if (!(await file.stat()).isFile()) {
      await file.close();
      const notFile = Object.assign(new Error(`EISDIR: illegal operation on a directory, read '${source}'`), {
        code: 'EISDIR',
        path: source,
      });
      throw unreadableFile(source, notFile);
    }
    return (file.createReadStream() as AsyncIterable<Uint8Array>)[Symbol.asyncIterator]();
  }
  if (source instanceof ReadableStream)
    return (source as unknown as AsyncIterable<Uint8Array>)[Symbol.asyncIterator]();
  return source[Symbol.asyncIterator]();
}

/** The error for an NDJSON file that cannot be read: names the file, keeps the system error's `code` and `path`. */
function unreadableFile(path: string, cause: unknown): Error {
  const { code, message } = (cause ?? {}) as { code?: unknown; message?: unknown };
  // A string is a path: NDJSON passed as a string by mistake is told how to send it.
  const hint = /[\n{]/.test(path)
    ? ' A string source is a file path; send NDJSON text as new Blob([text]).stream().'
    : '';
  const error = new Error(
    `uploadRunNdjson cannot read the NDJSON file ${JSON.stringify(path)}: ${typeof message === 'string' ? message : String(cause)}.${hint}`,
    { cause },
  );
  return Object.assign(error, { path, ...(typeof code === 'string' && { code }) });
}

/**
 * A run's results as NDJSON (`Accept: application/x-ndjson`), item by item in item order from item
 * `from` (0 by default), up to the last item attempted when asked; gzip-compressed on the wire when the
 * runtime's fetch asks for it. A connection that breaks mid-way is resumed from the next item (`?from=`),
 * up to `resumes` times (3). Throws the problem's detail when the run cannot be read (404, 401…).
 */
export async function* readRunResults(
  client: Client<paths>,
  runId: string,
  options: { from?: number; resumes?: number; signal?: AbortSignal } = {},
): AsyncGenerator<RunItem> {
  let from = options.from ?? 0;
  let resumes = options.resumes ?? 3;
  const decoder = new TextDecoder();
  for (;;) {
    const { response, error } = await client.GET('/v1/scoring/runs/{id}/results', {
      params: { path: { id: runId }, query: { from } },
      headers: { Accept: 'application/x-ndjson' },
      parseAs: 'stream',
      ...(options.signal && { signal: options.signal }),
    });
    if (!response.ok || !response.body) {
      const problem = error as { detail?: string } | undefined;
      throw new Error(problem?.detail ?? `the results of ${runId} answered ${response.status}`);
    }
    let pending = '';
    try {
      for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
        pending += decoder.decode(chunk, { stream: true });
        let start = 0;
        for (let end = pending.indexOf('\n'); end !== -1; end = pending.indexOf('\n', start)) {
          const item = JSON.parse(pending.slice(start, end)) as RunItem;
          start = end + 1;
          from = item.index + 1;
          yield item;
        }
        pending = pending.slice(start);
      }
      return;
    } catch (caught) {
      if (!(caught instanceof TypeError) || resumes-- <= 0 || options.signal?.aborted) throw caught;
    }
  }
}
