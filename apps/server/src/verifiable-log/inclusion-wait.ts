import type { Kysely } from 'kysely';
import { AppError } from '../errors/app-error.js';
import type { Database } from '../storage/database.js';
import type { CheckpointSignal } from './checkpoint-signal.js';
import { type InclusionProof, proveInclusion } from './verifiable-log-service.js';

/**
 * How many scorings of each tenant wait for their proof at once, bounded per tenant: each waiter reads a
 * proof on every checkpoint signed for its tenant (and every poll), so a tenant with thousands waiting
 * would have the database answer thousands of proof reads a second at everyone's expense.
 */
export class InclusionWaiters {
  readonly #maxPerTenant: number;
  readonly #waiting = new Map<string, number>();

  constructor(maxPerTenant: number) {
    this.#maxPerTenant = maxPerTenant;
  }

  /**
   * Runs `wait` when the tenant has fewer than the bound waiting (counting it until it settles);
   * otherwise answers undefined at once, as a wait that ran out.
   */
  async run<T>(tenantId: string, wait: () => Promise<T | undefined>): Promise<T | undefined> {
    const waiting = this.#waiting.get(tenantId) ?? 0;
    if (waiting >= this.#maxPerTenant) return undefined;
    this.#waiting.set(tenantId, waiting + 1);
    try {
      return await wait();
    } finally {
      const left = (this.#waiting.get(tenantId) ?? 1) - 1;
      if (left > 0) this.#waiting.set(tenantId, left);
      else this.#waiting.delete(tenantId);
    }
  }
}

/** What waiting for a record's inclusion reads and listens to. */
export interface InclusionWaitOptions {
  db: Kysely<Database>;
  checkpoints: Pick<CheckpointSignal, 'next'>;
  /**
   * Also look again after this many ms without a notification: set on PostgreSQL, where another
   * instance's sequencer may sign the checkpoint and this process hears nothing; undefined on SQLite.
   */
  pollMs: number | undefined;
}

/**
 * Waits, at most `waitMs`, until the tenant's record `cid` (committed already) is in a signed checkpoint,
 * and answers its inclusion proof in the latest checkpoint; undefined when the wait runs out first. Reads
 * the database once now and once per checkpoint signed for the tenant (or per poll), never in a loop of
 * its own.
 */
export async function awaitInclusion(
  options: InclusionWaitOptions,
  tenantId: string,
  cid: string,
  waitMs: number,
): Promise<InclusionProof | undefined> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    // Listening before reading: a checkpoint committed between the read and the wait still wakes it.
    const left = deadline - Date.now();
    const next = options.checkpoints.next(tenantId, Math.min(left, options.pollMs ?? left));
    try {
      const proof = await provedIfSigned(options.db, tenantId, cid);
      if (proof !== undefined || left <= 0) return proof;
      await next.done;
    } finally {
      next.cancel();
    }
  }
}

/** The record's inclusion proof in the latest checkpoint, or undefined while it is not signed. */
async function provedIfSigned(
  db: Kysely<Database>,
  tenantId: string,
  cid: string,
): Promise<InclusionProof | undefined> {
  try {
    return await proveInclusion(db, tenantId, cid);
  } catch (error) {
    if (error instanceof AppError && NOT_YET.has(error.code)) return undefined;
    throw error;
  }
}

/** Answers of proveInclusion that mean "not signed yet", not "no such record". */
const NOT_YET = new Set(['log_record_not_sequenced', 'checkpoint_not_found']);
