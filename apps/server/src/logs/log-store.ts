import type { Kysely } from 'kysely';
import { insertEvents, type OutboxEvent, type OutboxSignal } from '../events/event-outbox.js';
import { chunks } from '../storage/chunks.js';
import type { Database } from '../storage/database.js';
import { type GroupCommitStats, GroupCommitter } from '../storage/group-committer.js';
import type { StoredLogRecord } from '../storage/storage.js';

/**
 * Rows per INSERT statement: 5 parameters a row stays far below SQLite's 32766 and PostgreSQL's 65535
 * bound parameters, whatever `maxBatch` is.
 */
const ROWS_PER_STATEMENT = 1000;

/** The score log: appends grouped into one durable transaction per batch, reads by (tenant, CID). */
export interface LogStore {
  append(record: StoredLogRecord): Promise<void>;
  get(tenantId: string, cid: string): Promise<Buffer | undefined>;
  /** Counters of the group commit (flushes = transactions). */
  readonly stats: GroupCommitStats;
  /** Flushes pending appends and refuses new ones. */
  close(): Promise<void>;
}

/**
 * Inserts records, and the events they raised, in one transaction. A (tenant, CID) already present is left
 * alone: the CID is the hash of the bytes, so the bytes are the same by definition. Returns how many
 * events it wrote, so the caller can wake the delivery workers after the commit.
 */
export async function insertLogRecords(
  db: Kysely<Database>,
  records: readonly StoredLogRecord[],
): Promise<number> {
  const events: OutboxEvent[] = [];
  for (const record of records) if (record.events) events.push(...record.events);
  await db.transaction().execute(async (trx) => {
    for (const chunk of chunks(records, ROWS_PER_STATEMENT)) {
      const rows = chunk.map((record) => ({
        tenant_id: record.tenantId,
        cid: record.cid,
        bytes: record.bytes,
        request_id: record.requestId,
        created_at: record.createdAt.toISOString(),
      }));
      await trx
        .insertInto('log_records')
        .values(rows)
        .onConflict((conflict) => conflict.columns(['tenant_id', 'cid']).doNothing())
        .execute();
    }
    // One multi-row insert for the whole group, so escalations do not cost the group commit a statement each.
    await insertEvents(trx, events);
  });
  return events.length;
}

/**
 * The bytes of a tenant's record, as a Buffer on both dialects (so `res.send` sends them as they are),
 * or undefined when this tenant has no such record.
 */
export async function selectLogRecord(
  db: Kysely<Database>,
  tenantId: string,
  cid: string,
): Promise<Buffer | undefined> {
  const row = await db
    .selectFrom('log_records')
    .select('bytes')
    .where('tenant_id', '=', tenantId)
    .where('cid', '=', cid)
    .executeTakeFirst();
  if (!row) return undefined;
  const bytes = row.bytes;
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** What a log store is built with: the group commit's cap, and the signal to notify after events commit. */
export interface LogStoreOptions {
  maxBatch?: number | undefined;
  outbox?: OutboxSignal;
}

/** A LogStore whose appends go through a GroupCommitter over `insertLogRecords`. */
export function createLogStore(db: Kysely<Database>, options: LogStoreOptions = {}): LogStore {
  const committer = new GroupCommitter<StoredLogRecord>(async (batch) => {
    const events = await insertLogRecords(db, batch);
    if (events > 0) options.outbox?.notify();
  }, options.maxBatch);
  return {
    append: (record) => committer.add(record),
    get: (tenantId, cid) => selectLogRecord(db, tenantId, cid),
    get stats() {
      return committer.stats;
    },
    close: () => committer.close(),
  };
}
