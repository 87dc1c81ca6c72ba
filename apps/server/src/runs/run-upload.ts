import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import { createGunzip, type Gunzip } from 'node:zlib';
import type { Run } from '@scenario-scoring/api-types';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { CompiledQuery } from 'kysely';
import type { Clock } from '../common/clock.js';
import { newId } from '../common/ids.js';
import { AppError } from '../errors/app-error.js';
import { replyCreated } from '../http/created-reply.js';
import { idempotentCreate } from '../idempotency/idempotent-create.js';
import type { StorageQuota } from '../quota/storage-quota.js';
import { releasedInputsUsage, rowBytes, usageUpserts } from '../quota/tenant-usage.js';
import type { RunInputsTable } from '../storage/database.js';
import { rowInsertQuery } from '../storage/row-insert.js';
import type { Storage } from '../storage/storage.js';
import { exemptFromBodyDeadline } from '../transport/body-deadline.js';
import { requireDeclaredContentEncoding } from '../transport/content-encoding.js';
import { declaredLength, lingerClose } from '../transport/unread-body.js';
import type { BackgroundPacer } from '../workers/background-pacer.js';
import { DEFAULT_UPLOAD_LIMITS, type RunUploadLimits } from './run-config.js';
import type { RunLine } from './run-lines.js';
import { backlogFull, pendingRunItems, type RunServiceDeps } from './run-service.js';
import { findRun } from './run-store.js';
import { runView } from './run-view.js';

/** The NDJSON media type of a run's items (and of its results, run-results-stream.ts). */
export const NDJSON_MEDIA_TYPE = 'application/x-ndjson';

/** Lines written per transaction while the body arrives. */
const LINES_PER_BATCH = 2000;
/** Lines written per transaction while clients wait on requests (the pacer says so): shorter steps. */
const BUSY_LINES_PER_BATCH = 500;

/**
 * The most characters of items and problems one batch holds in memory and writes in one transaction (less
 * while clients wait): 2,000 lines near the 64 KiB line bound would be 128 MB of one upload's memory.
 */
const BATCH_BYTES = 4_000_000;
const BUSY_BATCH_BYTES = 500_000;

/** The most event-loop time reading lines takes in a row before other requests get a turn. */
const LINES_TURN_MS = 10;
/**
 * The most time reading the body (inflating it in the thread pool, hashing it, finding its lines, reading
 * them) takes, while clients wait on requests, before it pauses for its share (the pacer's `charge`): an
 * upload that inflates to a GiB with few lines or none writes almost no batch, which would pace it.
 */
const READ_STEP_MS = 10;
/**
 * The most of one wait for the next inflated chunk counted as inflating: a longer wait is the client's (a
 * few compressed bytes that inflate to nothing, then silence), not work. A chunk inflates in 0.1 ms or less.
 */
const MAX_INFLATE_WAIT_MS = 10;
/**
 * The inflated chunk: each costs the event loop a callback, a newline search (and a hash update), and is
 * a new buffer. Inflating a GiB of one line in a server-sized heap took 2.9 s of CPU in chunks of 32 KiB,
 * 3.8 s in zlib's default 16 KiB (twice the callbacks) and 4.3 s in 64 KiB (twice V8's full collections:
 * buffers that size, all garbage, pile up as external memory between them).
 */
const INFLATE_CHUNK_BYTES = 32 * 1024;
/** Rows per INSERT: 5 parameters a row, well below both dialects' bound-parameter limits. */
const ROWS_PER_STATEMENT = 1000;

const INPUT_INSERT = {
  table: 'run_inputs',
  columns: ['run_id', 'item_index', 'subject', 'item', 'error'],
} as const;

/** Whether a Content-Type is NDJSON (parameters aside). */
export function isNdjson(contentType: string | undefined): boolean {
  if (contentType === undefined) return false;
  const end = contentType.indexOf(';');
  return (end === -1 ? contentType : contentType.slice(0, end)).trim().toLowerCase() === NDJSON_MEDIA_TYPE;
}

/** What an upload needs besides the run service's dependencies. */
export interface RunUploadOptions {
  storage: Pick<Storage, 'db' | 'transact'>;
  clock: Clock;
  limits: RunUploadLimits;
  /** Reads a line into its `run_inputs` row (run-lines.ts `lineReader`). */
  readLine: (bytes: Buffer, line: number, overlong?: number) => RunLine;
  /**
   * Each batch of lines is written through it, and the reading of the body is charged to it, giving way to
   * requests clients wait on (none: at once).
   */
  pacer?: Pick<BackgroundPacer, 'run' | 'charge' | 'foregroundBusy'>;
  /** The uploads in progress on this instance, shared with the JSON run route (a new one when absent). */
  uploads?: UploadsInProgress;
  /**
   * The tenant's storage quota: the lines count in its usage as they are written (and stop counting as
   * they are scored or dropped), and an upload that takes the tenant to its quota is refused 403
   * `quota_exceeded` (checked before each batch; none: no bound).
   */
  quota?: Pick<StorageQuota, 'check'>;
  /**
   * The checks of the request's headers and query that a JSON body gets (the text policy and the contract
   * validator, app.ts), run before a byte of the body is read, with the body taken as the contract's
   * `string` for this media type: a bad `Idempotency-Key` or an unknown query parameter is refused with the
   * same problem as on the JSON form (none: no such checks, in unit tests).
   */
  checkRequest?: RequestHandler;
}

/**
 * The NDJSON uploads in progress on this instance, per tenant: how many, and the lines they hold so far.
 * The upload route and the JSON run route share one, so that both count the lines still arriving among
 * the tenant's items waiting (RUN_MAX_PENDING_ITEMS).
 */
export class UploadsInProgress {
  readonly #byTenant = new Map<string, { uploads: number; lines: number }>();

  /** The tenant's entry (created when absent; dropped by `leave` once its last upload ended). */
  enter(tenantId: string): { uploads: number; lines: number } {
    const entry = this.#byTenant.get(tenantId) ?? { uploads: 0, lines: 0 };
    this.#byTenant.set(tenantId, entry);
    return entry;
  }

  leave(tenantId: string): void {
    const entry = this.#byTenant.get(tenantId);
    if (entry && entry.uploads === 0) this.#byTenant.delete(tenantId);
  }

  /** How many uploads the tenant has in progress here. */
  uploads(tenantId: string): number {
    return this.#byTenant.get(tenantId)?.uploads ?? 0;
  }

  /** The lines the tenant's uploads in progress here hold so far. */
  lines(tenantId: string): number {
    return this.#byTenant.get(tenantId)?.lines ?? 0;
  }
}

/**
 * `POST /v1/scoring/runs` with an `application/x-ndjson` body (any other body is passed on to the JSON
 * route): mounted after authentication, scopes and quota, before the JSON parser and the contract
 * validator, which never see this body. The body (identity or gzip) is split into lines as it arrives, each
 * line read by `readLine` (a line that is not a valid item is stored as an item that fails, naming its
 * line), and written `LINES_PER_BATCH` lines per transaction under a run that is `uploading`: invisible
 * and never claimed, its lease renewed while the body arrives. Only when the whole body has come does one
 * transaction make it `queued` with its item count (and its Idempotency-Key record, the body's SHA-256 as
 * the request; the lines are not counted in the tenant's storage usage: they are deleted as their items'
 * results, which are counted, commit), so a cut-off upload never makes a run: its rows are deleted at once, or, if the server
 * died, by the run workers once its lease passed (run-upload-sweep.ts). Past `maxBytes` or
 * `maxLines` it is refused 413 `payload_too_large`; with no line at all 400 `validation_failed`.
 */
export function ndjsonRunUpload(deps: RunServiceDeps, options: RunUploadOptions): RequestHandler {
  const inProgress = options.uploads ?? new UploadsInProgress();
  return (req, res, next) => {
    if (!isNdjson(req.headers['content-type'])) return next();
    upload(req, res, deps, options, inProgress).catch(next);
  };
}

async function upload(
  req: Request,
  res: Response,
  deps: RunServiceDeps,
  options: RunUploadOptions,
  inProgress: UploadsInProgress,
) {
  const { limits, storage } = options;
  const leaseMs = limits.leaseMs ?? 120_000;
  checkCharset(req.headers['content-type'] as string);
  requireDeclaredContentEncoding(req, res, (() => {}) as NextFunction);
  if (options.checkRequest) await checkHeadersAndQuery(req, res, options.checkRequest);
  const gzip = (req.headers['content-encoding'] ?? 'identity').trim().toLowerCase() === 'gzip';
  const declared = declaredLength(req);
  if (!gzip && declared !== undefined && declared > limits.maxBytes) throw tooLarge(limits, 'bytes');
  const { tenantId, keyId } = res.locals.apiKey;
  // Bounds on what one tenant may have waiting, before a byte of the body is read.
  const maxUploads = limits.maxUploadsPerTenant ?? 2;
  if (inProgress.uploads(tenantId) >= maxUploads) {
    throw new AppError('rate_limited', {
      detail: `This tenant already has ${inProgress.uploads(tenantId)} NDJSON uploads in progress on this instance, the most at once; retry when one has finished.`,
      headers: { 'Retry-After': String(UPLOAD_RETRY_AFTER_S) },
    });
  }
  const mine = inProgress.enter(tenantId);
  mine.uploads += 1;
  try {
    const waiting = deps.maxPendingItems === undefined ? 0 : await pendingRunItems(storage.db, tenantId);
    if (deps.maxPendingItems !== undefined && waiting + mine.lines >= deps.maxPendingItems)
      throw backlogFull(waiting + mine.lines, 1, deps.maxPendingItems);
    await uploadRun(req, res, deps, options, { tenantId, keyId, gzip, leaseMs, waiting, mine });
  } finally {
    mine.uploads -= 1;
    inProgress.leave(tenantId);
  }
}

/**
 * Runs `check` on the request with its body stood for by an empty string (the contract's schema of an
 * NDJSON body is `string`): the body itself is not read, it is streamed to storage after. Rejects with
 * the check's error, for the error handler to answer as it answers a JSON request's.
 */
async function checkHeadersAndQuery(req: Request, res: Response, check: RequestHandler): Promise<void> {
  req.body = '';
  try {
    await new Promise<void>((resolve, reject) => {
      const returned: unknown = check(req, res, (error?: unknown) => (error ? reject(error) : resolve()));
      if (returned instanceof Promise) returned.catch(reject);
    });
  } finally {
    req.body = undefined;
  }
}

/** The UTF-8 encoding of U+FEFF, the byte order mark. */
const UTF8_BOM = Buffer.from([0xef, 0xbb, 0xbf]);

/** Retry-After of an upload refused because its tenant has as many in progress as it may. */
const UPLOAD_RETRY_AFTER_S = 5;

async function uploadRun(
  req: Request,
  res: Response,
  deps: RunServiceDeps,
  options: RunUploadOptions,
  upload: {
    tenantId: string;
    keyId: string;
    gzip: boolean;
    leaseMs: number;
    /** The tenant's items waiting in runs when the upload began. */
    waiting: number;
    /** The tenant's uploads in progress here: their lines so far (this one's included as they come). */
    mine: { lines: number };
  },
) {
  const { storage, clock } = options;
  const { tenantId, keyId, gzip, leaseMs } = upload;
  exemptFromBodyDeadline(req);
  const runId = newId('run');
  const now = clock.now();
  await storage.db
    .insertInto('runs')
    .values({
      id: runId,
      tenant_id: tenantId,
      status: 'uploading',
      input: 'ndjson',
      item_count: 0,
      items: '[]',
      created_at: now.toISOString(),
      deadline_at: null,
      locked_until: new Date(now.getTime() + leaseMs).toISOString(),
    })
    .execute();
  let finished = false;
  const lease = setInterval(() => {
    storage.db
      .updateTable('runs')
      .set({ locked_until: new Date(clock.now().getTime() + leaseMs).toISOString() })
      .where('id', '=', runId)
      .where('status', '=', 'uploading')
      .execute()
      .catch(() => {});
  }, leaseMs / 4);
  lease.unref();
  let added = 0;
  try {
    const key = req.get('Idempotency-Key');
    const { lines, sha256 } = await storeLines(req, gzip, runId, options, {
      tenantId,
      hashed: key !== undefined,
      // Before each batch is written: the tenant's runs created (or finished) since, on any instance.
      async beforeBatch() {
        if (deps.maxPendingItems !== undefined) upload.waiting = await pendingRunItems(storage.db, tenantId);
      },
      line() {
        added += 1;
        upload.mine.lines += 1;
        if (deps.maxPendingItems !== undefined && upload.waiting + upload.mine.lines > deps.maxPendingItems)
          throw backlogFull(upload.waiting + upload.mine.lines - 1, 1, deps.maxPendingItems);
      },
    });
    if (lines === 0) {
      const errors = [{ path: '/body', message: 'must hold at least one line' }];
      throw new AppError('validation_failed', {
        detail: 'The body has no lines; send one item per line.',
        errors,
      });
    }
    const created = await queueRun(deps, { tenantId, keyId, key }, runId, {
      lines,
      sha256,
      now: clock.now(),
    });
    finished = !created.replayed;
    if (!created.replayed) deps.runQueue.notify();
    replyCreated(res, 202, `/v1/scoring/runs/${created.value.id}`, created);
  } catch (error) {
    if (error instanceof AppError && !req.readableEnded) {
      // The rest of the body is not read: the answer goes out, then the connection closes.
      res.setHeader('Connection', 'close');
      res.once('finish', () => lingerClose(req.socket));
    }
    throw error;
  } finally {
    clearInterval(lease);
    upload.mine.lines -= added;
    if (!finished) await deleteUpload(storage, runId, clock.now()).catch(() => {});
  }
}

function checkCharset(contentType: string): void {
  const charset = /;\s*charset\s*=\s*"?([^";\s]+)"?/i.exec(contentType)?.[1]?.toLowerCase();
  if (charset !== undefined && charset !== 'utf-8') {
    throw new AppError('unsupported_media_type', {
      detail: `The body's charset is "${charset.slice(0, 100)}"; send NDJSON as UTF-8 (charset=utf-8, or none).`,
    });
  }
}

function tooLarge(limits: RunUploadLimits, what: 'bytes' | 'lines'): AppError {
  return new AppError('payload_too_large', {
    detail:
      what === 'bytes'
        ? `The NDJSON body is larger than the limit of ${limits.maxBytes} bytes; no run was created.`
        : `The NDJSON body has more than the limit of ${limits.maxLines} lines; no run was created.`,
  });
}

/**
 * Splits the body into lines as it comes and writes them in batches: each batch is one transaction, and
 * the next chunk is read only once it committed (so memory holds one batch and one line, whatever the
 * body's size). Resolves with the count of lines, the body's bytes (decompressed) and, when `hashed` (the
 * request has an Idempotency-Key, whose record is of the body), their SHA-256.
 *
 * Reading is background work like the writes: while clients wait on requests, every `READ_STEP_MS` of it
 * (the thread pool's inflating included) is charged to the pacer, which pauses it for its share, and it
 * does not go on during other background work's pauses. An inflated chunk is read only once the one
 * before it was (backpressure), so a paused upload inflates nothing: a gzip body inflating to a GiB of one
 * overlong line costs the event loop and the thread pool their share, not all of both.
 */
async function storeLines(
  req: Request,
  gzip: boolean,
  runId: string,
  options: RunUploadOptions,
  hooks: { tenantId: string; hashed: boolean; line(): void; beforeBatch(): Promise<void> },
): Promise<{ lines: number; bytes: number; sha256: string | undefined }> {
  const { limits, readLine, pacer } = options;
  const inflater: Gunzip | undefined = gzip ? createGunzip({ chunkSize: INFLATE_CHUNK_BYTES }) : undefined;
  const source: Readable = inflater ? req.pipe(inflater) : req;
  const hash = hooks.hashed ? createHash('sha256') : undefined;
  let rows: RunInputsTable[] = [];
  // The characters of their items and problems: a batch of long lines is written sooner.
  let rowsBytes = 0;
  let lines = 0;
  let bytes = 0;
  // The time spent reading the body (inflating, hashing, finding and reading lines) not charged to the
  // pacer yet: charged every READ_STEP_MS, or to the next batch's step by the pacer.
  let spent = 0;
  // The event loop's time spent reading lines since other requests last had a turn of the event loop.
  let sinceTurn = 0;
  const work = (ms: number) => {
    spent += ms;
    sinceTurn += ms;
  };
  const takeSpent = () => {
    const taken = spent;
    spent = 0;
    return taken;
  };
  // Gives way to other requests and background work: while the foreground is busy, charges the reading
  // once it took READ_STEP_MS (and waits for other background work's pauses at each chunk, `chunkEnd`);
  // otherwise lets other requests in every LINES_TURN_MS.
  const pace = async (chunkEnd: boolean) => {
    if (pacer?.foregroundBusy) {
      if (spent >= READ_STEP_MS || chunkEnd) {
        await pacer.charge(spent >= READ_STEP_MS ? takeSpent() : 0);
      }
    } else spent = 0;
    if (sinceTurn > LINES_TURN_MS) {
      // The lines of one chunk are read in a row, and an `await` alone lets in no other request.
      sinceTurn = 0;
      await new Promise((resolve) => setImmediate(resolve));
    }
  };
  // The line being read: its chunks, their length, and whether it is longer than allowed.
  let parts: Buffer[] = [];
  let partLength = 0;
  let overlong = false;
  const endLine = async () => {
    lines += 1;
    if (lines > limits.maxLines) throw tooLarge(limits, 'lines');
    hooks.line();
    // A line may hold one byte more than the bound when that byte is the `\r` of a CRLF ending.
    if (!overlong && partLength > limits.maxLineBytes) {
      const last = parts.at(-1) as Buffer;
      if (last[last.length - 1] !== 0x0d) overlong = true;
    }
    const parseStarted = performance.now();
    const text = parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts, partLength);
    const line = readLine(text, lines, overlong ? limits.maxLineBytes : undefined);
    work(performance.now() - parseStarted);
    rows.push({ run_id: runId, item_index: lines - 1, ...line });
    rowsBytes += (line.item?.length ?? 0) + (line.error?.length ?? 0);
    parts = [];
    partLength = 0;
    overlong = false;
    const busy = pacer?.foregroundBusy === true;
    if (
      rows.length >= (busy ? BUSY_LINES_PER_BATCH : LINES_PER_BATCH) ||
      rowsBytes >= (busy ? BUSY_BATCH_BYTES : BATCH_BYTES)
    ) {
      await hooks.beforeBatch();
      await writeLines(options, hooks.tenantId, rows, takeSpent());
      rows = [];
      rowsBytes = 0;
      sinceTurn = 0;
    } else await pace(false);
  };
  // The bytes of a line past its bound are neither kept nor copied: only their newline is looked for.
  const take = (piece: Buffer) => {
    if (overlong || piece.length === 0) return;
    if (partLength + piece.length > limits.maxLineBytes + 1) {
      overlong = true;
      parts = [];
      partLength = 0;
      return;
    }
    parts.push(piece);
    partLength += piece.length;
  };
  // The next chunk, or 408 once the client has sent nothing for `idleTimeoutMs` (only the wait for the
  // client counts, not this server's writes): the answer goes out, then the connection closes (upload()).
  const chunks = source.iterator({ destroyOnReturn: false }) as AsyncIterator<Buffer>;
  let idle: NodeJS.Timeout | undefined;
  // The whole body must have come within `maxDurationMs` too: a client trickling a byte now and then would
  // otherwise hold an upload slot, a run row and its lease for ever.
  const maxDurationMs = limits.maxDurationMs ?? DEFAULT_UPLOAD_LIMITS.maxDurationMs ?? 3_600_000;
  const deadline = performance.now() + maxDurationMs;
  const nextChunk = () =>
    Promise.race([
      chunks.next(),
      new Promise<never>((_, reject) => {
        const left = deadline - performance.now();
        const idleFirst = limits.idleTimeoutMs <= left;
        idle = setTimeout(
          () =>
            reject(
              new AppError('request_timeout', {
                detail: idleFirst
                  ? `The upload sent nothing for ${limits.idleTimeoutMs / 1000} s; no run was created.`
                  : `The upload did not finish within ${maxDurationMs / 1000} s (RUN_NDJSON_UPLOAD_TIMEOUT); no run was created.`,
              }),
            ),
          Math.max(0, idleFirst ? limits.idleTimeoutMs : left),
        );
      }),
    ]).finally(() => clearTimeout(idle));
  // A UTF-8 byte order mark at the very start of the body is skipped, as the JSON form's parser skips it
  // (RFC 8259 §8.1 lets a parser ignore it): the first bytes are held until they show whether one is there.
  let head: Buffer | undefined = Buffer.alloc(0);
  try {
    for (;;) {
      // A wait while the inflater holds compressed bytes is the thread pool inflating them: work, charged
      // as reading (it ends when the chunk is out: zlib inflates the next only once this one is read).
      const inflating = inflater !== undefined && inflater.writableLength > 0;
      const waitStarted = performance.now();
      const next = await nextChunk();
      if (inflating) work(Math.min(performance.now() - waitStarted, MAX_INFLATE_WAIT_MS));
      if (next.done) break;
      let started = performance.now();
      let chunk = next.value;
      bytes += chunk.length;
      if (bytes > limits.maxBytes) throw tooLarge(limits, 'bytes');
      // The hash is of the bytes sent, the mark included: a repeat with the same Idempotency-Key must match
      // them (an overlong line's bytes too: two bodies differing only there are different requests).
      hash?.update(chunk);
      if (head !== undefined) {
        chunk = Buffer.concat([head, chunk]);
        if (chunk.length < UTF8_BOM.length && UTF8_BOM.subarray(0, chunk.length).equals(chunk)) {
          head = chunk;
          work(performance.now() - started);
          continue;
        }
        head = undefined;
        if (chunk.subarray(0, UTF8_BOM.length).equals(UTF8_BOM)) chunk = chunk.subarray(UTF8_BOM.length);
      }
      let start = 0;
      for (let end = chunk.indexOf(0x0a); end !== -1; end = chunk.indexOf(0x0a, start)) {
        take(chunk.subarray(start, end));
        start = end + 1;
        work(performance.now() - started);
        await endLine();
        started = performance.now();
      }
      take(chunk.subarray(start));
      work(performance.now() - started);
      await pace(true);
    }
  } finally {
    clearTimeout(idle);
  }
  // A body of only the first byte or two of a mark: they are the line's (not JSON).
  if (head !== undefined) take(head);
  if (partLength > 0 || overlong) await endLine();
  if (rows.length > 0) {
    await hooks.beforeBatch();
    await writeLines(options, hooks.tenantId, rows, takeSpent());
  }
  return { lines, bytes, sha256: hash?.digest('hex') };
}

/**
 * Writes a batch of lines in one transaction with what they add to the tenant's storage usage (once the
 * quota allows it), through the pacer when there is one.
 */
async function writeLines(
  options: RunUploadOptions,
  tenantId: string,
  rows: readonly RunInputsTable[],
  parseMs: number,
) {
  const { storage, pacer, quota, clock } = options;
  await quota?.check(tenantId);
  const steps: CompiledQuery[] = [];
  for (let from = 0; from < rows.length; from += ROWS_PER_STATEMENT)
    steps.push(
      rowInsertQuery(storage.db, INPUT_INSERT, rows.slice(from, from + ROWS_PER_STATEMENT), ['run_id']),
    );
  let bytes = 0;
  for (const row of rows) bytes += rowBytes(row.subject, row.item, row.error);
  steps.push(...usageUpserts(storage.db, tenantId, bytes, clock.now()));
  await (pacer ? pacer.run(() => storage.transact(steps), parseMs) : storage.transact(steps));
}

/**
 * Makes the uploaded run `queued` with its item count, in one transaction with its Idempotency-Key record
 * (the request being the body's SHA-256). A repeat of an earlier
 * request replays its answer (and this upload is deleted by the caller).
 */
async function queueRun(
  deps: RunServiceDeps,
  caller: { tenantId: string; keyId: string; key: string | undefined },
  runId: string,
  upload: { lines: number; sha256: string | undefined; now: Date },
) {
  const scope = {
    apiKeyId: caller.keyId,
    tenantId: caller.tenantId,
    keyedHash: deps.keyedHash,
    key: caller.key,
    operation: 'createRun',
    body: { ndjson_sha256: upload.sha256 },
  };
  return idempotentCreate<Run>(deps.storage.db, scope, upload.now, async (trx) => {
    const queued = await trx
      .updateTable('runs')
      .set({ status: 'queued', item_count: upload.lines, locked_until: null })
      .where('id', '=', runId)
      .where('status', '=', 'uploading')
      .executeTakeFirst();
    if (Number(queued.numUpdatedRows) !== 1) throw new Error(`the upload of ${runId} was swept away`);
    const run = await findRun(trx, caller.tenantId, runId);
    if (!run) throw new Error(`the run ${runId} vanished`);
    return runView(run, upload.now);
  });
}

/** Deletes an upload that did not finish (or was a replay) with its lines, which stop counting in its tenant's usage. */
async function deleteUpload(storage: RunUploadOptions['storage'], runId: string, now: Date): Promise<void> {
  await storage.db.transaction().execute(async (trx) => {
    await trx.executeQuery(releasedInputsUsage(trx, runId, now));
    await trx.deleteFrom('run_inputs').where('run_id', '=', runId).execute();
    await trx.deleteFrom('runs').where('id', '=', runId).where('status', '=', 'uploading').execute();
  });
}
