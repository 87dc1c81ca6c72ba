import type { CompiledQuery, QueryResult } from 'kysely';

/**
 * A statement of a transaction known up front (Storage.transact). A bare query always runs; a fenced one
 * runs only when the statement at index `onlyIfChanged` (an earlier one) changed a row: the inserts of a
 * run batch behind the UPDATE that checks its claim still holds, so a batch whose claim was lost writes
 * nothing while the others of its transaction commit. A fence is a write that returns no rows (no
 * `returning`, no select): a step fenced on one that returns rows fails the transaction, on both databases.
 */
export type TransactionStep = CompiledQuery | { statement: CompiledQuery; onlyIfChanged: number };

/**
 * How durable a transaction's commit is. `full` (the default): flushed to disk before it is acknowledged,
 * like every commit the server acknowledges. `lease`: for writes nothing is acknowledged on (a worker's
 * lease on a run or a delivery), on SQLite committed without a disk flush of its own (see leaseWrite).
 */
export interface TransactOptions {
  durability?: 'full' | 'lease';
  /**
   * The latest time (epoch ms, `Date.now()`) at which the transaction may take the write lock (SQLite): one
   * that only got it later (another writer held the database, messages queued ahead of it waited) is rolled
   * back unrun and fails with `COMMIT_DEADLINE_CODE`, so what is committed started in time (a scoring's
   * record within 15 s of its stamp, which an erasure relies on). PostgreSQL's writers check it in their
   * statements (score-log-store.ts).
   */
  lockBy?: number;
}

/** The `code` of the error a transaction fails with when it took the write lock past its `lockBy`. */
export const COMMIT_DEADLINE_CODE = 'ERR_COMMIT_DEADLINE';

/** One result per step, in order: undefined for a fenced step that did not run. */
export type TransactionResults = (QueryResult<unknown> | undefined)[];

/** The step's query, and the index of the statement it is fenced on (undefined when it always runs). */
export function stepParts(step: TransactionStep): { query: CompiledQuery; onlyIfChanged?: number } {
  return 'statement' in step ? { query: step.statement, onlyIfChanged: step.onlyIfChanged } : { query: step };
}

/** True when the step at `index` ran and changed a row. */
export function changedRows(results: TransactionResults, index: number): boolean {
  const affected = results[index]?.numAffectedRows;
  return affected !== undefined && affected > 0n;
}

/** Throws when the step at `index` ran and returned rows: it cannot be a fence (see TransactionStep). */
function checkFence(results: TransactionResults, index: number): void {
  if ((results[index]?.rows.length ?? 0) > 0) throw new Error('a fence statement must not return rows');
}

/** Runs the steps in order with `execute` (inside a transaction the caller began), skipping fenced ones whose fence changed nothing. */
export async function runSteps(
  steps: readonly TransactionStep[],
  execute: (query: CompiledQuery) => Promise<QueryResult<unknown>>,
): Promise<TransactionResults> {
  const results: TransactionResults = [];
  for (const step of steps) {
    const { query, onlyIfChanged } = stepParts(step);
    if (onlyIfChanged !== undefined) checkFence(results, onlyIfChanged);
    results.push(
      onlyIfChanged === undefined || changedRows(results, onlyIfChanged) ? await execute(query) : undefined,
    );
  }
  return results;
}
