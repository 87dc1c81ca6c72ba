import { sql } from 'kysely';
import { releasedInputsUsage } from '../quota/tenant-usage.js';
import type { Storage } from '../storage/storage.js';

/**
 * Deletes uploads whose lease passed (their server died mid-upload), up to `limit` runs with their lines;
 * resolves with how many runs it deleted. The run workers call it now and then (run-store.ts).
 */
export async function sweepAbandonedUploads(
  storage: Pick<Storage, 'db'>,
  now: Date,
  limit = 10,
): Promise<number> {
  const abandoned = await storage.db
    .selectFrom('runs')
    .select('id')
    .where('status', '=', 'uploading')
    .where('locked_until', '<', now.toISOString())
    .limit(limit)
    .execute();
  for (const { id } of abandoned) {
    await storage.db.transaction().execute(async (trx) => {
      // Still abandoned, and locked (PostgreSQL: the row; SQLite: the writer) until the lines are gone: an
      // upload whose lease was renewed meanwhile is left alone.
      const held = await trx
        .updateTable('runs')
        .set({ locked_until: sql<string>`locked_until` })
        .where('id', '=', id)
        .where('status', '=', 'uploading')
        .where('locked_until', '<', sql<string>`${now.toISOString()}`)
        .executeTakeFirst();
      if (Number(held.numUpdatedRows) !== 1) return;
      await trx.executeQuery(releasedInputsUsage(trx, id, now));
      await trx.deleteFrom('run_inputs').where('run_id', '=', id).execute();
      await trx.deleteFrom('runs').where('id', '=', id).execute();
    });
  }
  return abandoned.length;
}
