import type { RunCounts } from '@scenario-scoring/api-types';
import type { Insertable } from 'kysely';
import type { OutboxEvent } from '../events/event-outbox.js';
import type { LogRow } from '../score-log/score-log-store.js';
import type { RunItemsTable } from '../storage/database.js';

/**
 * A worker's claim on a run. Every write of the claim is fenced on both the worker id and `claims`: an
 * instance's concurrent slots share the worker id, and only the claim count tells a slot whose lease
 * expired from the slot that claimed the run after it.
 */
export interface RunClaim {
  runId: string;
  workerId: string;
  /** The run's `claims` as this claim set it. */
  claims: number;
}

/** One batch of a claimed run, written in one transaction, fenced on the claim and on `fromIndex`. */
export interface BatchCommit extends RunClaim {
  /** The run's tenant (its rows' subjects are keyed under it); by default that of the first log record. */
  tenantId?: string;
  /** The run's `next_index` the batch was scored from; the commit fails if it moved. */
  fromIndex: number;
  items: Insertable<RunItemsTable>[];
  /** Packed, with their leaf hashes (score-log-store.ts `LogRow`). */
  logRecords: LogRow[];
  /** `policy.escalated` events, plus `run.completed` when the batch ends the run. */
  events: OutboxEvent[];
  /** The counts after this batch. */
  counts: RunCounts;
  now: Date;
  leaseMs: number;
  /** True for the batch that attempts the last item: the run ends `completed` in the same transaction. */
  completes: boolean;
  /** True for a run submitted as NDJSON: the batch's lines (`run_inputs`) are deleted in its transaction. */
  consumesInputs?: boolean;
}
