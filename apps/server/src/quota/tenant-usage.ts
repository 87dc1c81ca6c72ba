import { CompiledQuery, type Kysely, sql } from 'kysely';
import type { Database } from '../storage/database.js';
import { usesNumberedParameters } from '../storage/row-insert.js';

/**
 * What a stored row counts besides its variable-length content (record bytes, JSON texts, bodies): its
 * fixed columns, ids, times and index entries, roughly. So rows without a body (an attempt that got no
 * answer) still count.
 */
export const ROW_OVERHEAD_BYTES = 64;

/**
 * The order in which a PostgreSQL statement upserting several tenants' usage takes their rows' locks: by
 * tenant id, bytewise, which for tenant names (`[a-z0-9_-]`) is the order `UsageTally` sorts them in. Every
 * writer that grows more than one tenant's row in one transaction takes them in this order, so two
 * transactions growing the same tenants (two instances' group commits, or a scoring's group commit and a
 * run's batches) wait for each other instead of deadlocking: a deadlock would stall both for PostgreSQL's
 * `deadlock_timeout` (1 s) before one is aborted and retried. An aggregate's rows come out in hash order
 * otherwise. SQLite writes one transaction at a time: no order needed.
 */
export const USAGE_LOCK_ORDER = 'order by "tenant_id" collate "C"';

/**
 * What a webhook delivery counts (one per event and webhook taking it, kept as the delivery's history): its
 * row has no variable-length content, but with its index entries a hostile review measured about 440 bytes a
 * delivery on SQLite (1.6 M deliveries in 700 MB), so a tenant fanning each event out to many webhooks pays
 * for what that stores.
 */
export const DELIVERY_ROW_BYTES = 440;

/** Every usage upsert's end: a tenant's row, when it has one, grows by what the upsert adds. */
export const USAGE_ON_CONFLICT = `on conflict ("tenant_id") do update set "bytes" = "tenant_usage"."bytes" + excluded."bytes", "updated_at" = excluded."updated_at"`;

/**
 * The upsert adding to their tenants' usage the rows of `from` (a table or a WITH query) that `where`
 * picks, each counted as `rowBytes` counts a row of its `bytes`: their length plus the row overhead.
 * `updatedAt` is the placeholder of the time's parameter. For writers whose rows' stored size only the
 * database knows (score-log-store.ts: SQLite packs a record as it inserts it; rows a conflict left alone are
 * not counted). `ordered` (PostgreSQL): the tenants' rows are locked in `USAGE_LOCK_ORDER`.
 */
export function storedBytesUsage(from: string, where: string, updatedAt: string, ordered = false): string {
  // SQLite needs the WHERE to tell the upsert's ON CONFLICT from a join's.
  return `insert into "tenant_usage" ("tenant_id", "bytes", "updated_at") select "tenant_id", sum(length("bytes")) + count(*) * ${ROW_OVERHEAD_BYTES}, ${updatedAt} from ${from} where ${where} group by "tenant_id"${ordered ? ` ${USAGE_LOCK_ORDER}` : ''} ${USAGE_ON_CONFLICT}`;
}

/**
 * The SQL of a text column's stored size in bytes (UTF-8), as `rowBytes` counts a string: `octet_length`
 * on PostgreSQL (`numbered`), the length of its blob on SQLite (`length` of text counts characters on both).
 */
export function textBytesSql(column: string, numbered: boolean): string {
  return numbered ? `octet_length(${column})` : `length(cast(${column} as blob))`;
}

/** The bytes a row of these texts and byte strings counts: their lengths (UTF-8) plus the row overhead. */
export function rowBytes(...parts: (string | Uint8Array | null | undefined)[]): number {
  let bytes = ROW_OVERHEAD_BYTES;
  for (const part of parts) {
    if (part == null) continue;
    bytes += typeof part === 'string' ? Buffer.byteLength(part) : part.byteLength;
  }
  return bytes;
}

/** Bytes stored per tenant by one transaction, summed so that it writes one upsert per tenant. */
export class UsageTally {
  readonly #bytes = new Map<string, number>();

  add(tenantId: string, bytes: number): this {
    this.#bytes.set(tenantId, (this.#bytes.get(tenantId) ?? 0) + bytes);
    return this;
  }

  get size(): number {
    return this.#bytes.size;
  }

  /**
   * The tally's statement (none when empty): one multi-row upsert, one row per tenant. Its text is
   * written here rather than built by Kysely, whose building and compiling cost every group commit more
   * than the rest of its statements together.
   */
  upserts(db: Kysely<Database>, now: Date): CompiledQuery[] {
    if (this.#bytes.size === 0) return [];
    const parameters: unknown[] = [];
    const text = this.#upsertText(parameters, usesNumberedParameters(db), now);
    return [CompiledQuery.raw(text, parameters)];
  }

  /** The upsert's text, its parameters appended to `parameters` (numbered after those already there). */
  #upsertText(parameters: unknown[], numbered: boolean, now: Date): string {
    const updatedAt = now.toISOString();
    let tuples: string[];
    if (numbered) {
      parameters.push(updatedAt);
      const time = `$${parameters.length}`;
      tuples = this.#sorted().map(([tenantId, bytes]) => {
        parameters.push(tenantId, bytes);
        return `($${parameters.length - 1}, $${parameters.length}::bigint, ${time})`;
      });
    } else {
      tuples = this.#sorted().map(([tenantId, bytes]) => {
        parameters.push(tenantId, bytes, updatedAt);
        return '(?, ?, ?)';
      });
    }
    return `insert into "tenant_usage" ("tenant_id", "bytes", "updated_at") values ${tuples.join(', ')} ${USAGE_ON_CONFLICT}`;
  }

  /** Sorted by tenant: two transactions growing the same tenants lock their rows in one order (USAGE_LOCK_ORDER). */
  #sorted(): [string, number][] {
    return [...this.#bytes].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  }
}

/** The one upsert adding `bytes` to `tenantId`'s usage (nothing for 0). */
export function usageUpserts(
  db: Kysely<Database>,
  tenantId: string,
  bytes: number,
  now: Date,
): CompiledQuery[] {
  return bytes === 0 ? [] : new UsageTally().add(tenantId, bytes).upserts(db, now);
}

/**
 * The upsert counting the events of `ids` that were written (an event written only when someone listens,
 * see events/event-outbox.ts): their payloads' lengths plus the row overhead, per tenant. In the
 * transaction that wrote them, after their INSERT. A payload counts its UTF-8 bytes, as `rowBytes` does.
 */
export function writtenEventsUsage(db: Kysely<Database>, ids: readonly string[], now: Date): CompiledQuery[] {
  if (ids.length === 0) return [];
  const numbered = sql`${0}`.compile(db).sql === '$1';
  const parameters: unknown[] = [now.toISOString()];
  const mark = () => (numbered ? `$${parameters.length}` : '?');
  const updatedAt = mark();
  const marks = ids.map((id) => {
    parameters.push(id);
    return mark();
  });
  // SQLite needs the WHERE to tell the upsert's ON CONFLICT from a join's.
  const text = `insert into "tenant_usage" ("tenant_id", "bytes", "updated_at") select "tenant_id", sum(${textBytesSql('"payload"', numbered)} + ${ROW_OVERHEAD_BYTES}), ${updatedAt} from "events" where "id" in (${marks.join(', ')}) group by "tenant_id"${numbered ? ` ${USAGE_LOCK_ORDER}` : ''} ${USAGE_ON_CONFLICT}`;
  return [CompiledQuery.raw(text, parameters)];
}

/**
 * The upsert adding `bytes` to the usage of the tenant of run `runId` (the run's row names it), for a
 * writer that knows the run, not its tenant (a run batch).
 */
export function runUsageUpsert(db: Kysely<Database>, runId: string, bytes: number, now: Date): CompiledQuery {
  const numbered = sql`${0}`.compile(db).sql === '$1';
  const [a, b, c] = numbered ? ['$1::bigint', '$2', '$3'] : ['?', '?', '?'];
  return CompiledQuery.raw(
    `insert into "tenant_usage" ("tenant_id", "bytes", "updated_at") select "tenant_id", ${a}, ${b} from "runs" where "id" = ${c} ${USAGE_ON_CONFLICT}`,
    [bytes, now.toISOString(), runId],
  );
}

/**
 * The upsert taking back from the tenant of run `runId` what its NDJSON lines (`run_inputs`) counted as
 * they were uploaded (`rowBytes(subject, item, error)` each, run-upload.ts): all of them, or those of
 * item indexes `range` [from, to). In the transaction that deletes them, before the DELETE; nothing
 * changes when no line is left.
 */
export function releasedInputsUsage(
  db: Kysely<Database>,
  runId: string,
  now: Date,
  range?: { from: number; to: number },
): CompiledQuery {
  const numbered = usesNumberedParameters(db);
  const parameters: unknown[] = [];
  const mark = (value: unknown) => {
    parameters.push(value);
    return numbered ? `$${parameters.length}` : '?';
  };
  const bytes = (column: string) => `coalesce(${textBytesSql(`i."${column}"`, numbered)}, 0)`;
  const updatedAt = mark(now.toISOString());
  const where = [`i."run_id" = ${mark(runId)}`];
  if (range) where.push(`i."item_index" >= ${mark(range.from)}`, `i."item_index" < ${mark(range.to)}`);
  const released = `-sum(${bytes('subject')} + ${bytes('item')} + ${bytes('error')} + ${ROW_OVERHEAD_BYTES})`;
  return CompiledQuery.raw(
    `insert into "tenant_usage" ("tenant_id", "bytes", "updated_at") select r."tenant_id", ${numbered ? `(${released})::bigint` : released}, ${updatedAt} from "run_inputs" i join "runs" r on r."id" = i."run_id" where ${where.join(' and ')} group by r."tenant_id" ${USAGE_ON_CONFLICT}`,
    parameters,
  );
}

/** The bytes `tenantId` has stored (0 before its first). */
export async function readTenantUsage(db: Kysely<Database>, tenantId: string): Promise<number> {
  const row = await db
    .selectFrom('tenant_usage')
    .select('bytes')
    .where('tenant_id', '=', tenantId)
    .executeTakeFirst();
  return row ? Number(row.bytes) : 0;
}

/** Every tenant's stored bytes (tenants are few: one row each). */
export async function listTenantUsage(db: Kysely<Database>): Promise<Map<string, number>> {
  const rows = await db.selectFrom('tenant_usage').select(['tenant_id', 'bytes']).execute();
  return new Map(rows.map((row) => [row.tenant_id, Number(row.bytes)]));
}
