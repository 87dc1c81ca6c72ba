import type { CompiledQuery, Insertable, Kysely } from 'kysely';
import { eventInserts, type OutboxSignal, subscribedEventInserts } from '../events/event-outbox.js';
import { releasedInputsUsage, rowBytes, runUsageUpsert, writtenEventsUsage } from '../quota/tenant-usage.js';
import { compare, logRowInserts, type SubjectKey } from '../score-log/score-log-store.js';
import { chunks } from '../storage/chunks.js';
import type { Database, RunItemsTable } from '../storage/database.js';
import { type GroupCommitStats, GroupCommitter } from '../storage/group-committer.js';
import { type RowInsert, rowInsertQuery } from '../storage/row-insert.js';
import type { Storage } from '../storage/storage.js';
import { changedRows, type TransactionStep } from '../storage/transaction-steps.js';
import type { BatchCommit } from './run-claim.js';

/** Rows per run_items INSERT: at 7 parameters a row, below both dialects' bound-parameter limits. */
const ROWS_PER_STATEMENT = 1000;

/** The INSERT of a batch's items. */
const RUN_ITEM_INSERT: RowInsert<Insertable<RunItemsTable>> = {
  table: 'run_items',
  columns: ['run_id', 'item_index', 'subject', 'status', 'log_cid', 'escalated', 'error', 'subject_key'],
};

/** The most batches (of different runs) one transaction commits. */
const MAX_BATCHES_PER_COMMIT = 16;

/** A batch waiting in the group commit, and what became of it. */
interface Entry {
  batch: BatchCommit;
  /** Set by the flush: true once committed, false when the fence refused it (nothing of it written). */
  committed?: boolean;
  /** Set by the flush when this batch, committed alone, failed. */
  error?: unknown;
}

/**
 * Commits run batches, grouping those of concurrent runs that are ready together into one transaction:
 * one disk flush for all of them instead of one each, and more rows per dirtied index page. Each batch
 * keeps its own fence (the claim and `next_index`), checked inside the shared transaction: a batch whose
 * fence fails writes nothing and answers false, the others commit. If the shared transaction fails, each
 * batch is retried alone, so that one batch's error never becomes another's.
 *
 * Grouping is for SQLite, whose one connection commits one transaction at a time anyway. On PostgreSQL
 * (`group: false`) each batch commits in its own transaction on its own pooled connection: the server
 * already shares WAL flushes between concurrent commits, and one shared transaction would serialize them.
 */
export class RunBatchCommitter {
  readonly #storage: Pick<Storage, 'db' | 'transact'>;
  readonly #group: GroupCommitter<Entry>;
  readonly #grouping: boolean;
  readonly #subjectKey: SubjectKey | undefined;
  readonly #outbox: Pick<OutboxSignal, 'notify'> | undefined;

  /**
   * `subjectKey` keys each item's subject (run_items, log_records, events), for erasure and access;
   * `outbox` is notified after a commit that wrote events (a `policy.escalated` is written only for a
   * tenant with a webhook that takes it), so the delivery workers are woken for those, not for every batch
   * that escalated an item.
   */
  constructor(
    storage: Pick<Storage, 'db' | 'transact'>,
    options: {
      group?: boolean;
      subjectKey?: SubjectKey | undefined;
      outbox?: Pick<OutboxSignal, 'notify'> | undefined;
    } = {},
  ) {
    this.#storage = storage;
    this.#grouping = options.group ?? true;
    this.#subjectKey = options.subjectKey;
    this.#outbox = options.outbox;
    this.#group = new GroupCommitter<Entry>((entries) => this.#flush(entries), MAX_BATCHES_PER_COMMIT);
  }

  /** Counters of the group commit: `flushes` is the number of shared transactions, `largestBatch` in batches. */
  get stats(): GroupCommitStats {
    return this.#group.stats;
  }

  /** Commits a batch; false when the claim was lost, so nothing was written. Throws when the commit failed. */
  async commit(batch: BatchCommit): Promise<boolean> {
    const entry: Entry = { batch };
    if (this.#grouping) await this.#group.add(entry);
    else await this.#flush([entry]);
    if ('error' in entry) throw entry.error;
    return entry.committed === true;
  }

  async #flush(entries: readonly Entry[]): Promise<void> {
    try {
      await this.#write(entries);
      return;
    } catch (error) {
      if (entries.length === 1) {
        (entries[0] as Entry).error = error;
        return;
      }
    }
    for (const entry of entries) {
      try {
        await this.#write([entry]);
      } catch (error) {
        entry.error = error;
      }
    }
  }

  /** Writes the batches in one transaction known up front (one message on SQLite, see Storage.transact). */
  async #write(entries: readonly Entry[]): Promise<void> {
    const subjectKey = this.#subjectKey;
    const keyed = subjectKey ? entries.map((entry) => keyedEntry(entry, subjectKey)) : entries;
    const { steps, fences, eventSteps } = batchSteps(this.#storage.db, keyed);
    const results = await this.#storage.transact(steps);
    fences.forEach((index, entry) => {
      entry.committed = changedRows(results, index);
    });
    const eventsWritten = eventSteps.reduce(
      (sum, index) => sum + Number(results[index]?.numAffectedRows ?? 0n),
      0,
    );
    if (eventsWritten > 0) this.#outbox?.notify();
    if (keyed !== entries) {
      keyed.forEach((entry, i) => {
        (entries[i] as Entry).committed = entry.committed;
      });
    }
  }
}

/**
 * The entry with its rows keyed by subject: each item, its log record and its `policy.escalated` event get
 * the subject's tenant-keyed hash (`subject_key`), by which an erasure finds them.
 */
function keyedEntry(entry: Entry, subjectKey: SubjectKey): Entry {
  const { batch } = entry;
  const tenantId = batch.tenantId ?? batch.logRecords[0]?.tenant_id;
  if (tenantId === undefined) return { batch };
  const keys = new Map<string, string>();
  const keyOf = (subject: string) => {
    let key = keys.get(subject);
    if (key === undefined) {
      key = subjectKey(tenantId, subject);
      keys.set(subject, key);
    }
    return key;
  };
  const byCid = new Map<string, string>();
  const items = batch.items.map((item) => {
    const key = keyOf(item.subject);
    if (item.log_cid) byCid.set(item.log_cid, key);
    return { ...item, subject_key: key };
  });
  const logRecords = batch.logRecords.map((row) => ({ ...row, subject_key: byCid.get(row.cid) ?? null }));
  const events = batch.events.map((event) => {
    if (event.type !== 'policy.escalated') return event;
    const { data } = JSON.parse(event.payload) as { data: { subject: string } };
    return { ...event, subjectKey: keyOf(data.subject) };
  });
  return { batch: { ...batch, items, logRecords, events } };
}

/**
 * The statements of one transaction writing `entries`: each batch's fence first (on PostgreSQL it also
 * locks the run's row, so a rival's commit waits, then misses; in run id order, so two groups cannot
 * deadlock), then the rows of each batch, fenced on its fence (a batch whose claim was lost writes
 * nothing): a multi-row INSERT per batch and table, in which the run id (and for the log records the
 * tenant, run id and time) is one parameter for all the batch's rows instead of a copy per row (see
 * `rowInsertQuery`), and its events; then every batch's usage statements, by tenant. `fences` gives each
 * entry's fence statement.
 */
function batchSteps(
  db: Kysely<Database>,
  entries: readonly Entry[],
): { steps: TransactionStep[]; fences: Map<Entry, number>; eventSteps: number[] } {
  const steps: TransactionStep[] = [];
  const fences = new Map<Entry, number>();
  const eventSteps: number[] = [];
  const byRun = [...entries].sort((a, b) => (a.batch.runId < b.batch.runId ? -1 : 1));
  for (const entry of byRun) {
    fences.set(entry, steps.length);
    steps.push(fence(db, entry.batch));
  }
  // Each batch's usage statements (which lock its tenant's `tenant_usage` row) come last, by tenant
  // (USAGE_LOCK_ORDER: a scoring's group commit and another instance's batches take those rows in the same
  // order, so none of them deadlocks with this transaction), each fenced as the batch's rows are.
  const usage: { tenant: string; runId: string; statements: CompiledQuery[]; onlyIfChanged: number }[] = [];
  for (const entry of byRun) {
    const onlyIfChanged = fences.get(entry) as number;
    const { batch } = entry;
    // `policy.escalated` (it holds the subject) only for a tenant with a webhook that takes it.
    const escalations = batch.events.filter((event) => event.type === 'policy.escalated');
    const others = batch.events.filter((event) => event.type !== 'policy.escalated');
    const events = [...eventInserts(db, others), ...subscribedEventInserts(db, escalations)];
    const statements = [
      ...Array.from(chunks(batch.items, ROWS_PER_STATEMENT), (chunk) =>
        rowInsertQuery(db, RUN_ITEM_INSERT, chunk, ['run_id']),
      ),
      ...logRowInserts(db, batch.logRecords),
      ...events,
    ];
    for (const statement of statements) {
      if (events.includes(statement)) eventSteps.push(steps.length);
      steps.push({ statement, onlyIfChanged });
    }
    usage.push({
      tenant: batch.tenantId ?? batch.logRecords[0]?.tenant_id ?? '',
      runId: batch.runId,
      onlyIfChanged,
      statements: [
        ...writtenEventsUsage(
          db,
          escalations.map((event) => event.id),
          batch.now,
        ),
        runUsageUpsert(db, batch.runId, batchBytes(batch, others), batch.now),
        // The lines' usage is released before they are deleted (it reads them).
        ...(batch.consumesInputs
          ? [
              releasedInputsUsage(db, batch.runId, batch.now, {
                from: batch.fromIndex,
                to: batch.fromIndex + batch.items.length,
              }),
              consumedInputs(db, batch),
            ]
          : []),
      ],
    });
  }
  // Bytewise, as USAGE_LOCK_ORDER and UsageTally order tenant names.
  usage.sort((a, b) => compare(a.tenant, b.tenant) || compare(a.runId, b.runId));
  for (const { statements, onlyIfChanged } of usage) {
    for (const statement of statements) steps.push({ statement, onlyIfChanged });
  }
  return { steps, fences, eventSteps };
}

/** Deletes the NDJSON lines of the batch's items: a committed item's line is never needed again. */
function consumedInputs(db: Kysely<Database>, batch: BatchCommit): CompiledQuery {
  return db
    .deleteFrom('run_inputs')
    .where('run_id', '=', batch.runId)
    .where('item_index', '>=', batch.fromIndex)
    .where('item_index', '<', batch.fromIndex + batch.items.length)
    .compile();
}

/** What a batch adds to its tenant's storage usage, escalation events aside (counted as written). */
function batchBytes(batch: BatchCommit, events: readonly { payload: string }[]): number {
  let bytes = 0;
  for (const item of batch.items) bytes += rowBytes(item.subject, item.error, item.log_cid);
  for (const record of batch.logRecords) bytes += rowBytes(record.bytes);
  for (const event of events) bytes += rowBytes(event.payload);
  return bytes;
}

/** The UPDATE that advances the run past the batch if the batch's claim still holds it at `fromIndex` (one row changed), and changes nothing otherwise. */
function fence(db: Kysely<Database>, batch: BatchCommit): CompiledQuery {
  return db
    .updateTable('runs')
    .set({
      next_index: batch.fromIndex + batch.items.length,
      ...batch.counts,
      ...(batch.completes
        ? {
            status: 'completed',
            completed_at: batch.now.toISOString(),
            log_event_pending: 1,
            locked_by: null,
            locked_until: null,
          }
        : { locked_until: new Date(batch.now.getTime() + batch.leaseMs).toISOString() }),
    })
    .where('id', '=', batch.runId)
    .where('locked_by', '=', batch.workerId)
    .where('claims', '=', batch.claims)
    .where('next_index', '=', batch.fromIndex)
    .where('status', '=', 'running')
    .compile();
}
