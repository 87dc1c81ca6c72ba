import type { Kysely } from 'kysely';
import { createLogLeavesLeafIndex0006 } from './0006-log-leaves.js';

/**
 * Drops `log_leaves_leaf_index_idx` (tenant_id, leaf_index). Its one reader was the sequencer's tree size
 * (the highest leaf index), which now comes from the tree itself: the tenant's last level-0 tile, found
 * by the tiles' primary key (`selectTreeSize`). Leaves, tiles and the checkpoint are written in one
 * transaction, so the two sizes are always the same. On SQLite the index was a second copy of the whole
 * table (an index of a WITHOUT ROWID table holds the table's key: tenant, time and CID), about 115 bytes
 * per scoring, an eighth of the disk a scoring takes (docs/benchmarks.md, "bench/disk").
 *
 * What the index also did, refuse a second leaf at an index already given, the sequencer does: one
 * sequencer per tenant at a time (PostgreSQL's advisory lock, SQLite's one writer and its check, inside the
 * write, that the tree did not grow since it was read), and each batch checks the stored tree against the
 * last signed checkpoint before it signs.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations run against the schema as it was, not as it is typed now
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('log_leaves_leaf_index_idx').execute();
}

// biome-ignore lint/suspicious/noExplicitAny: migrations run against the schema as it was, not as it is typed now
export async function down(db: Kysely<any>): Promise<void> {
  await createLogLeavesLeafIndex0006(db);
}
