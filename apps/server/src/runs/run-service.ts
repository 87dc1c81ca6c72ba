import type {
  Run,
  RunItemError,
  RunItemResult,
  RunResultList,
  ScoreRequest,
} from '@scenario-scoring/api-types';
import { sql } from 'kysely';
import { newId } from '../common/ids.js';
import { AppError } from '../errors/app-error.js';
import type { OutboxSignal } from '../events/event-outbox.js';
import { type IdempotentResult, idempotentCreate } from '../idempotency/idempotent-create.js';
import type { TenantKeyedHash } from '../keys/tenant-keyed-hash.js';
import { rowBytes, usageUpserts } from '../quota/tenant-usage.js';
import { toPage } from '../storage/paging.js';
import type { Storage } from '../storage/storage.js';
import { findRun, insertRun, listRunItems, type RunRecord } from './run-store.js';
import { encodeResultsCursor, runItemView, runView } from './run-view.js';

/** The page size of a run's results when `limit` is absent (the contract's default). */
export const DEFAULT_RESULTS_LIMIT = 100;

/** What the run use cases need: the storage, and the signal that wakes this instance's run workers. */
export interface RunServiceDeps {
  storage: Pick<Storage, 'db'>;
  /** Items a tenant may have waiting at once (RunConfig.maxPendingItems); no bound when absent. */
  maxPendingItems?: number;
  /** The lines of the tenant's NDJSON uploads in progress on this instance (run-upload.ts), counted as waiting. */
  uploadingLines?: (tenantId: string) => number;
  runQueue: Pick<OutboxSignal, 'notify'>;
  /** The tenant-keyed hash the idempotency records' request hashes are made with. */
  keyedHash: Pick<TenantKeyedHash, 'hash'>;
}

/**
 * The items `tenantId` has waiting in runs queued or running (not attempted yet); an upload in progress
 * is not counted here (run-upload.ts counts its lines).
 */
export async function pendingRunItems(db: Storage['db'], tenantId: string): Promise<number> {
  const row = await db
    .selectFrom('runs')
    .select(sql<string | number>`coalesce(sum(item_count - next_index), 0)`.as('pending'))
    .where('tenant_id', '=', tenantId)
    .where('status', 'in', ['queued', 'running'])
    .executeTakeFirst();
  return Number(row?.pending ?? 0);
}

/** The answer to a run that would take its tenant's waiting items past `maxPendingItems`. */
export function backlogFull(pending: number, adding: number, maxPendingItems: number): AppError {
  return new AppError('rate_limited', {
    detail: `This tenant has ${pending} items waiting in runs, and this run would add ${adding}: the limit is ${maxPendingItems} items waiting at once. Retry once earlier runs have progressed.`,
    headers: { 'Retry-After': String(BACKLOG_RETRY_AFTER_S) },
  });
}

/** The Retry-After of a run refused for its tenant's backlog. */
const BACKLOG_RETRY_AFTER_S = 60;

/** Who submits a run, with the Idempotency-Key it sent (if any). */
export interface RunCaller {
  tenantId: string;
  keyId: string;
  idempotencyKey: string | undefined;
}

/**
 * Stores a run `queued` with its Idempotency-Key record in one transaction, then wakes this instance's
 * run workers (not on a replay: that run was queued by the first request).
 */
export async function createRun(
  deps: RunServiceDeps,
  caller: RunCaller,
  body: { items: ScoreRequest[]; deadline_seconds?: number },
  now: Date,
): Promise<IdempotentResult<Run>> {
  const scope = {
    apiKeyId: caller.keyId,
    tenantId: caller.tenantId,
    keyedHash: deps.keyedHash,
    key: caller.idempotencyKey,
    operation: 'createRun',
    body,
  };
  const outcome = await idempotentCreate(deps.storage.db, scope, now, async (trx) => {
    const { items, deadline_seconds } = body;
    if (deps.maxPendingItems !== undefined) {
      const pending =
        (await pendingRunItems(trx, caller.tenantId)) + (deps.uploadingLines?.(caller.tenantId) ?? 0);
      if (pending + items.length > deps.maxPendingItems)
        throw backlogFull(pending, items.length, deps.maxPendingItems);
    }
    const deadlineAt =
      deadline_seconds === undefined ? null : new Date(now.getTime() + deadline_seconds * 1000);
    const run = await insertRun(trx, { id: newId('run'), tenantId: caller.tenantId, items, now, deadlineAt });
    for (const query of usageUpserts(trx, caller.tenantId, rowBytes(JSON.stringify(items)), now))
      await trx.executeQuery(query);
    return runView(run, now);
  });
  if (!outcome.replayed) deps.runQueue.notify();
  return outcome;
}

/** The tenant's run, its progress as of `now`; another tenant's run answers 404 like an unknown one. */
export async function getRun(
  deps: Pick<RunServiceDeps, 'storage'>,
  tenantId: string,
  runId: string,
  now: Date,
): Promise<Run> {
  return runView(await tenantRun(deps, tenantId, runId), now);
}

/** A page of the run's attempted items, in item order: `limit` items after the item index `after` (-1: from the first). */
export async function listRunResults(
  deps: Pick<RunServiceDeps, 'storage'>,
  tenantId: string,
  runId: string,
  { after, limit }: { after: number; limit: number },
): Promise<RunResultList> {
  const run = await tenantRun(deps, tenantId, runId);
  // One row more than the page tells whether another page exists, without counting.
  const rows = await listRunItems(deps.storage.db, run, after, limit + 1);
  const lines = run.input === 'ndjson';
  return toPage(
    rows,
    limit,
    (item) => runItemView(item, lines),
    (item) => encodeResultsCursor(item.item_index),
  );
}

/** Rows read per query while the results are streamed. */
const STREAM_PAGE = 1000;

/**
 * The run's attempted items from item index `from`, in item order, as they are read, a page of
 * STREAM_PAGE at a time (so memory holds one page, however many items the run has): up to the last item
 * attempted when each page is read. `run` is the tenant's (tenantRun).
 */
export async function* streamRunResults(
  deps: Pick<RunServiceDeps, 'storage'>,
  run: RunRecord,
  from: number,
): AsyncGenerator<RunItemResult | RunItemError> {
  const lines = run.input === 'ndjson';
  let after = from - 1;
  for (;;) {
    const rows = await listRunItems(deps.storage.db, run, after, STREAM_PAGE);
    for (const row of rows) yield runItemView(row, lines);
    if (rows.length < STREAM_PAGE) return;
    after = (rows.at(-1) as { item_index: number }).item_index;
  }
}

/** The tenant's run or 404 (run-routes.ts checks it before streaming the results). */
export async function tenantRun(
  deps: Pick<RunServiceDeps, 'storage'>,
  tenantId: string,
  runId: string,
): Promise<RunRecord> {
  const run = await findRun(deps.storage.db, tenantId, runId);
  if (!run) throw new AppError('not_found', { detail: `No run with id ${runId} exists for this API key.` });
  return run;
}
