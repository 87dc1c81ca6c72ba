import type { RunCounts, ScoreRequest } from '@scenario-scoring/api-types';
import { scoreAndLog } from '@scenario-scoring/engine';
import type { Insertable } from 'kysely';
import { problem } from '../errors/problem.js';
import type { OutboxEvent } from '../events/event-outbox.js';
import { escalationEvent } from '../policies/policy-escalation.js';
import { recordStamp } from '../score-log/record-stamp.js';
import type { LogRow } from '../score-log/score-log-store.js';
import type { RunItemsTable } from '../storage/database.js';
import { packRecord, recordLeafHash } from '../storage/record-codec.js';

/** A batch of a run's items, scored: the rows and events its transaction writes, and its own counts. */
export interface ScoredBatch {
  items: Insertable<RunItemsTable>[];
  /** Packed, with their leaf hashes (made where the batch was scored: see ScoredItems). */
  logRecords: LogRow[];
  events: OutboxEvent[];
  /** This batch's items only: batches are scored in parallel, so the run's totals are summed at commit. */
  counts: RunCounts;
}

/** What a batch is scored for: the run, and the batch's items. */
export interface BatchSource {
  runId: string;
  tenantId: string;
  /** Only the batch's items (so that only they cross to a scoring thread), the first being item `from`. */
  items: readonly ScoreRequest[];
  /**
   * For a run submitted as NDJSON, per item: why its line is not a valid item (it fails with that problem,
   * unscored; its item in `items` is a placeholder), or null.
   */
  rejected?: readonly (RejectedItem | null)[];
}

/** An NDJSON line that is not a valid item: its subject ('' when it had none) and its problem as JSON. */
export interface RejectedItem {
  subject: string;
  error: string;
}

/**
 * A batch's items as scored, in the compact form that crosses back from a scoring thread: a few arrays
 * instead of two row objects per item, whose property names and repeated values (run id, tenant, time)
 * the structured clone would copy for every item. `batchRows` makes the rows from it on the event loop.
 */
export interface ScoredItems {
  /** Per item, in order: its log record's CID, or null when the item could not be scored. */
  cids: (string | null)[];
  /**
   * The log records' stored forms (packed: storage/record-codec.ts), one per item whose CID is not null,
   * in item order: packed where they were scored, so a run's compression is spread over its scoring
   * threads, not done on the event loop.
   */
  records: Uint8Array[];
  /** The leaf hash of each record of `records` (of its own bytes), for PostgreSQL's insert to queue. */
  leafHashes: Uint8Array[];
  /** Per item, in order: 1 when it was escalated, else 0. */
  escalated: (0 | 1)[];
  /** The `policy.escalated` events of the escalated items. */
  events: OutboxEvent[];
  counts: RunCounts;
}

/**
 * Scores a batch of a run's items (the first being the run's item `from`) exactly like a synchronous
 * scoring: the same engine pipeline, a score-log/2 record per item (kind `run_item`, the run id and the
 * item's index, `now` as its time, a fresh salt) under the run's tenant, and a `policy.escalated` event per
 * escalated item. An item that cannot be scored, or whose NDJSON line was rejected, gets a null CID and
 * is counted as failed; it does not stop the run.
 */
export function scoreItems(source: BatchSource, from: number, now: Date): ScoredItems {
  const counts: RunCounts = { succeeded: 0, failed: 0, escalated: 0 };
  const scored: ScoredItems = { cids: [], records: [], leafHashes: [], escalated: [], events: [], counts };
  for (const [offset, { subject, context }] of source.items.entries()) {
    if (source.rejected?.[offset]) {
      scored.cids.push(null);
      scored.escalated.push(0);
      counts.failed += 1;
      continue;
    }
    try {
      const identity = { kind: 'run_item', run_id: source.runId, item: from + offset } as const;
      const scoring = scoreAndLog(subject, context, recordStamp(identity, now));
      const event = escalationEvent(source.tenantId, subject, scoring, { runId: source.runId }, now);
      scored.cids.push(scoring.logCid);
      scored.records.push(packRecord(scoring.logBytes));
      scored.leafHashes.push(recordLeafHash(scoring.logBytes));
      scored.escalated.push(event ? 1 : 0);
      counts.succeeded += 1;
      if (event) {
        scored.events.push(event);
        counts.escalated += 1;
      }
    } catch {
      // Items were validated against the contract at creation; reaching this is a bug, kept to this item.
      scored.cids.push(null);
      scored.escalated.push(0);
      counts.failed += 1;
    }
  }
  return scored;
}

/**
 * The rows of a batch scored by `scoreItems` (on a thread or not): a `run_items` row per item (an item
 * whose NDJSON line was rejected gets that line's problem, one that could not be scored its own
 * `internal_error` problem), and a log record per scored item under
 * the run's tenant, whose `request_id` column holds the run id.
 */
export function batchRows(source: BatchSource, from: number, now: Date, scored: ScoredItems): ScoredBatch {
  const createdAt = now.toISOString();
  const batch: ScoredBatch = { items: [], logRecords: [], events: scored.events, counts: scored.counts };
  let record = 0;
  for (const [offset, { subject }] of source.items.entries()) {
    const index = from + offset;
    const cid = scored.cids[offset] ?? null;
    if (cid === null) {
      const rejected = source.rejected?.[offset];
      const error =
        rejected?.error ??
        JSON.stringify(problem('internal_error', { detail: `Item ${index} could not be scored.` }));
      batch.items.push({
        run_id: source.runId,
        item_index: index,
        subject: rejected ? rejected.subject : subject,
        status: 'error',
        log_cid: null,
        escalated: 0,
        error,
      });
      continue;
    }
    batch.items.push({
      run_id: source.runId,
      item_index: index,
      subject,
      status: 'ok',
      log_cid: cid,
      escalated: scored.escalated[offset] ?? 0,
      error: null,
    });
    batch.logRecords.push({
      tenant_id: source.tenantId,
      cid,
      bytes: scored.records[record] as Uint8Array,
      leaf_hash: scored.leafHashes[record] as Uint8Array,
      request_id: source.runId,
      created_at: createdAt,
    });
    record += 1;
  }
  return batch;
}

/** Scores a batch in this thread and makes its rows: `batchRows` of `scoreItems`. */
export function scoreBatch(source: BatchSource, from: number, now: Date): ScoredBatch {
  return batchRows(source, from, now, scoreItems(source, from, now));
}
