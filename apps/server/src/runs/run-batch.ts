import type { RunCounts, ScoreRequest } from '@scenario-scoring/api-types';
import { scoreAndLog } from '@scenario-scoring/engine';
import type { Insertable } from 'kysely';
import { problem } from '../errors/problem.js';
import type { OutboxEvent } from '../events/event-outbox.js';
import { escalationEvent } from '../policies/policy-escalation.js';
import type { LogRecordsTable, RunItemsTable } from '../storage/database.js';

/** A batch of a run's items, scored: the rows and events its transaction writes, and its own counts. */
export interface ScoredBatch {
  items: Insertable<RunItemsTable>[];
  logRecords: Insertable<LogRecordsTable>[];
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
}

/**
 * Scores a batch of a run's items, the first being item `from`, exactly like a synchronous scoring: the
 * same engine pipeline, a log record per item under the run's tenant (its `request_id` column holds the run
 * id), and a `policy.escalated` event per escalated item. An item that cannot be scored gets its own
 * `internal_error` problem and is counted as failed; it does not stop the run.
 */
export function scoreBatch(source: BatchSource, from: number, now: Date): ScoredBatch {
  const createdAt = now.toISOString();
  const counts: RunCounts = { succeeded: 0, failed: 0, escalated: 0 };
  const batch: ScoredBatch = { items: [], logRecords: [], events: [], counts };
  for (const [offset, { subject, context }] of source.items.entries()) {
    const index = from + offset;
    try {
      const scoring = scoreAndLog(subject, context);
      const event = escalationEvent(source.tenantId, subject, scoring, { runId: source.runId }, now);
      batch.items.push({
        run_id: source.runId,
        item_index: index,
        subject,
        status: 'ok',
        log_cid: scoring.logCid,
        escalated: event ? 1 : 0,
        error: null,
      });
      batch.logRecords.push({
        tenant_id: source.tenantId,
        cid: scoring.logCid,
        bytes: scoring.logBytes,
        request_id: source.runId,
        created_at: createdAt,
      });
      counts.succeeded += 1;
      if (event) {
        batch.events.push(event);
        counts.escalated += 1;
      }
    } catch {
      // Items were validated against the contract at creation; reaching this is a bug, kept to this item.
      const error = problem('internal_error', { detail: `Item ${index} could not be scored.` });
      batch.items.push({
        run_id: source.runId,
        item_index: index,
        subject,
        status: 'error',
        log_cid: null,
        escalated: 0,
        error: JSON.stringify(error),
      });
      counts.failed += 1;
    }
  }
  return batch;
}
