import { type Kysely, sql } from 'kysely';
import { type MigrationResult, Migrator } from 'kysely/migration';
import type { Database } from './database.js';
import { MIGRATIONS } from './migrations/index.js';

/** The key of the session advisory lock that serializes migrations across instances sharing a database. */
const MIGRATION_LOCK_KEY = 7_301_946_115_523;

/** Thrown when a migration fails; the database is left as it was before (migrations run in one transaction). */
export class MigrationError extends Error {
  override readonly name = 'MigrationError';
}

/**
 * Brings the schema to the latest migration, in one transaction. On PostgreSQL the whole run, including
 * the creation of Kysely's bookkeeping tables, holds `pg_advisory_lock`, so instances starting together
 * migrate one after the other and the later ones find nothing to do.
 */
export async function migrateToLatest(
  db: Kysely<Database>,
  kind: 'sqlite' | 'postgres',
): Promise<MigrationResult[]> {
  return db.connection().execute(async (connection) => {
    if (kind === 'postgres')
      await sql`select pg_advisory_lock(${sql.lit(MIGRATION_LOCK_KEY)})`.execute(connection);
    try {
      return await connection.transaction().execute(async (trx) => {
        const migrator = new Migrator({
          db: trx,
          provider: { getMigrations: async () => ({ ...MIGRATIONS }) },
        });
        const { error, results = [] } = await migrator.migrateToLatest();
        if (error) {
          const failed = results.find((result) => result.status === 'Error')?.migrationName ?? 'unknown';
          // Throwing rolls the transaction back; Migrator only reports the error.
          throw new MigrationError(`migration ${failed} failed: ${String(error)}`, { cause: error });
        }
        return results;
      });
    } finally {
      if (kind === 'postgres')
        await sql`select pg_advisory_unlock(${sql.lit(MIGRATION_LOCK_KEY)})`.execute(connection);
    }
  });
}

/**
 * The names of the migrations this build knows that the database has not applied (empty when the schema
 * is current; migrations newer than this build, applied by a newer instance, are fine). Throws when the
 * database does not answer.
 */
export async function pendingMigrations(db: Kysely<Database>): Promise<string[]> {
  const { rows } = await sql<{ name: string }>`select name from kysely_migration`.execute(db);
  const applied = new Set(rows.map((row) => row.name));
  return Object.keys(MIGRATIONS).filter((name) => !applied.has(name));
}
