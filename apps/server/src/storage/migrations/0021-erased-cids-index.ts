import { type Kysely, sql } from 'kysely';
import { createLogRecordsErasureIndex0010 } from './0010-erasure.js';

/**
 * `log_records_erasure_idx` holds the CID: (tenant_id, erasure_id, cid) instead of (tenant_id, erasure_id),
 * still only over erased records. An erasure's records are listed a page at a time in CID order
 * (`GET /v1/erasures/{id}/log-cids`, and the first 1,000 in `GET /v1/erasures/{id}`): with the CID in the
 * index a page reads its rows in order and stops; without it, each page read and sorted every record of the
 * erasure (a retention erasure can hold millions).
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations run against the schema as it was, not as it is typed now
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('log_records_erasure_idx').execute();
  await db.schema
    .createIndex('log_records_erasure_idx')
    .on('log_records')
    .columns(['tenant_id', 'erasure_id', 'cid'])
    .where(sql.ref('erasure_id'), 'is not', null)
    .execute();
}

// biome-ignore lint/suspicious/noExplicitAny: migrations run against the schema as it was, not as it is typed now
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('log_records_erasure_idx').execute();
  await createLogRecordsErasureIndex0010(db);
}
