import type { Run } from '@scenario-scoring/api-types';
import type { Kysely } from 'kysely';
import type { Database } from '../../src/storage/database.js';
import { openStorage, type StorageOptions } from '../../src/storage/storage.js';

/** The `run.completed` events written for run `id` (its payload names it), as their payloads. */
export function runCompletedEvents(db: Kysely<Database>, id: string): Promise<{ payload: string }[]> {
  return db
    .selectFrom('events')
    .select('payload')
    .where('type', '=', 'run.completed')
    .where('payload', 'like', `%"run_id":"${id}"%`)
    .execute();
}

/**
 * Reads the run with `read` every 50 ms until it has ended (completed or failed) or `deadline` (epoch ms)
 * has passed; returns the last read, for the caller's assertions.
 */
export async function pollUntilRunEnds(read: () => Promise<Run>, deadline: number): Promise<Run> {
  let run = await read();
  while (run.status !== 'completed' && run.status !== 'failed' && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    run = await read();
  }
  return run;
}

/**
 * Waits until run `id`'s `run.completed` event is written, or `deadline` (epoch ms) has passed: it follows
 * the run's end once the run's records are in a signed checkpoint, an interval later. The caller asserts
 * on the events afterwards.
 */
export async function waitForRunCompleted(
  options: StorageOptions,
  id: string,
  deadline: number,
): Promise<void> {
  const watching = await openStorage(options);
  try {
    while ((await runCompletedEvents(watching.db, id)).length === 0 && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 50));
  } finally {
    await watching.close();
  }
}
