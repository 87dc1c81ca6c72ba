import type { Erasure, ErasureLogCidList, SubjectRecordList } from '@scenario-scoring/api-types';
import { newId } from '../common/ids.js';
import { AppError } from '../errors/app-error.js';
import { validationDetail } from '../errors/validation-detail.js';
import type { OutboxSignal } from '../events/event-outbox.js';
import { type IdempotentResult, idempotentCreate } from '../idempotency/idempotent-create.js';
import type { TenantKeyedHash } from '../keys/tenant-keyed-hash.js';
import type { SubjectKey } from '../score-log/score-log-store.js';
import { encodeCursor } from '../storage/paging.js';
import type { Storage } from '../storage/storage.js';
import {
  erasedCids,
  findErasure,
  insertErasure,
  openErasures,
  readSubjectRecordsPage,
} from './erasure-store.js';
import { erasureView, subjectRecordView } from './erasure-views.js';

/** What the erasure and access use cases need. */
export interface ErasureServiceDeps {
  storage: Pick<Storage, 'db'>;
  subjectKey: SubjectKey;
  /** Keys the Idempotency-Key records' request hashes per tenant. */
  keyedHash: TenantKeyedHash;
  /** Notified after an erasure is accepted, so this instance's erasure worker takes it at once. */
  erasureQueue: Pick<OutboxSignal, 'notify'>;
  /**
   * Erasures by subject a tenant may have pending at once (ErasureConfig's `maxPendingPerTenant`); past it
   * a new one is refused 429 `rate_limited`. No bound when absent or 0.
   */
  maxPendingPerTenant?: number;
}

/** The Retry-After (seconds) of an erasure refused because its tenant has as many pending as it may. */
export const ERASURES_FULL_RETRY_AFTER_S = 30;

/** Who asks, with the Idempotency-Key it sent (if any). */
export interface ErasureCaller {
  tenantId: string;
  keyId: string;
  idempotencyKey: string | undefined;
}

/**
 * Accepts an erasure of the subject (`pending`, with its Idempotency-Key record, in one transaction); the
 * erasure worker completes it. The answer never holds the subject. A tenant with `maxPendingPerTenant`
 * erasures pending already is refused 429 `rate_limited` (a retry of an accepted one with its
 * Idempotency-Key is still answered by its replay): each erasure costs the worker, which all tenants share,
 * and stores an event and its deliveries, even over the tenant's storage quota.
 */
export async function createErasure(
  deps: ErasureServiceDeps,
  caller: ErasureCaller,
  body: { subject: string },
  now: Date,
): Promise<IdempotentResult<Erasure>> {
  const scope = {
    apiKeyId: caller.keyId,
    tenantId: caller.tenantId,
    keyedHash: deps.keyedHash,
    key: caller.idempotencyKey,
    operation: 'createErasure',
    body,
  };
  const outcome = await idempotentCreate(deps.storage.db, scope, now, async (trx): Promise<Erasure> => {
    const max = deps.maxPendingPerTenant ?? 0;
    if (max > 0 && (await openErasures(trx, caller.tenantId, max)) >= max) {
      throw new AppError('rate_limited', {
        detail: `This tenant has ${max} erasures pending, the most it may have at once; retry once some have completed.`,
        headers: { 'Retry-After': String(ERASURES_FULL_RETRY_AFTER_S) },
      });
    }
    const erasure = await insertErasure(trx, {
      id: newId('era'),
      tenantId: caller.tenantId,
      kind: 'subject',
      subject: body.subject,
      subjectKey: deps.subjectKey(caller.tenantId, body.subject),
      before: null,
      now,
    });
    return erasureView(erasure, []);
  });
  if (!outcome.replayed) deps.erasureQueue.notify();
  return outcome;
}

/** The tenant's erasure; another tenant's answers 404 like an unknown one. */
export async function getErasure(
  deps: Pick<ErasureServiceDeps, 'storage'>,
  tenantId: string,
  id: string,
): Promise<Erasure> {
  const row = await tenantErasure(deps, tenantId, id);
  const page =
    row.status === 'completed'
      ? await erasedCids(deps.storage.db, tenantId, id, '', ERASURE_LOG_CIDS_SHOWN)
      : { cids: [], more: false };
  return erasureView(row, page.cids, page.more);
}

/** How many CIDs an erasure's own resource lists (the contract's `maxItems`); the rest are paged. */
export const ERASURE_LOG_CIDS_SHOWN = 1000;

/**
 * A page of the CIDs an erasure erased, in CID order (none while it is pending); another tenant's erasure
 * answers 404 like an unknown one. The cursor is the last CID shown, base64url.
 */
export async function listErasureLogCids(
  deps: Pick<ErasureServiceDeps, 'storage'>,
  tenantId: string,
  id: string,
  query: { limit?: number; cursor?: string },
): Promise<ErasureLogCidList> {
  const after = query.cursor === undefined ? '' : cidCursor(query.cursor, '/query/cursor');
  const row = await tenantErasure(deps, tenantId, id);
  if (row.status !== 'completed') return { data: [], next_cursor: null };
  const { cids, more } = await erasedCids(
    deps.storage.db,
    tenantId,
    id,
    after,
    query.limit ?? ERASURE_LOG_CIDS_SHOWN,
  );
  const last = cids.at(-1);
  return { data: cids, next_cursor: more && last ? encodeCursor(last) : null };
}

/** The tenant's erasure `id`; another tenant's answers 404 like an unknown one. */
async function tenantErasure(deps: Pick<ErasureServiceDeps, 'storage'>, tenantId: string, id: string) {
  const row = await findErasure(deps.storage.db, tenantId, id);
  if (!row) throw new AppError('not_found', { detail: `No erasure with id ${id} exists for this API key.` });
  return row;
}

/** The CID a cursor of a CID-ordered list continues after; a 400 `validation_failed` at `path` otherwise. */
function cidCursor(cursor: string, path: string): string {
  const after = Buffer.from(cursor, 'base64url').toString('utf8');
  if (/^baf[a-z2-7]{10,}$/.test(after)) return after;
  const errors = [
    { path, message: 'is not a cursor of this list; pass the next_cursor of the previous page' },
  ];
  throw new AppError('validation_failed', { detail: validationDetail(errors), errors });
}

const DEFAULT_LIMIT = 100;

/** A page of the tenant's records of the subject, found by its keyed hash (never by the plain subject). */
export async function listSubjectRecords(
  deps: Pick<ErasureServiceDeps, 'storage' | 'subjectKey'>,
  tenantId: string,
  body: { subject: string; limit?: number; cursor?: string },
): Promise<SubjectRecordList> {
  const limit = body.limit ?? DEFAULT_LIMIT;
  const after = body.cursor === undefined ? '' : cidCursor(body.cursor, '/body/cursor');
  const { rows, more } = await readSubjectRecordsPage(
    deps.storage.db,
    tenantId,
    deps.subjectKey(tenantId, body.subject),
    after,
    limit,
  );
  const last = rows.at(-1);
  return {
    data: rows.map(subjectRecordView),
    next_cursor: more && last ? encodeCursor(last.cid) : null,
  };
}
