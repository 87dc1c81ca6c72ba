import { describeError, type Logger } from '../../request-logging/logger.js';
import type { Storage } from '../../storage/storage.js';
import { type DeliveryWrite, type RecordOptions, recordDeliveryWrites } from './delivery-recorder.js';

/** What the stored attempt says when the receiver's answer itself could not be stored. */
export const UNSTORABLE_OUTCOME_ERROR = 'the outcome of this attempt could not be stored as received';

/**
 * Records a batch of delivery outcomes so that one bad row never fails, blocks or repeats the others: the
 * batch is written in one transaction; when that fails, it is split in halves and each half written on its
 * own (so one bad row among n costs about 2·log2(n) transactions, and every other row commits). A single
 * outcome that still fails is written again without the receiver's text (body and error replaced by a
 * fixed note): the attempt still counts and the delivery follows its schedule, instead of staying
 * leased and being sent again when the lease expires. Only when even that fails (the database is down)
 * does the error propagate, for the rows of that write alone.
 */
export async function recordIsolated(
  storage: Pick<Storage, 'db'>,
  writes: readonly DeliveryWrite[],
  options: RecordOptions,
  logger: Logger,
): Promise<void> {
  try {
    await recordDeliveryWrites(storage, writes, options);
    return;
  } catch (error) {
    if (writes.length > 1) {
      const middle = writes.length >> 1;
      const halves = await Promise.allSettled([
        recordIsolated(storage, writes.slice(0, middle), options, logger),
        recordIsolated(storage, writes.slice(middle), options, logger),
      ]);
      const failed = halves.find((half) => half.status === 'rejected');
      if (failed) throw (failed as PromiseRejectedResult).reason;
      return;
    }
    const [write] = writes as [DeliveryWrite];
    if (write.kind !== 'attempt') throw error;
    logger.error('a webhook delivery outcome could not be stored; storing it without the response', {
      deliveryId: write.claim.deliveryId,
      error: describeError(error),
    });
    const plain = { ...write, sent: { ...write.sent, responseBody: null, error: UNSTORABLE_OUTCOME_ERROR } };
    await recordDeliveryWrites(storage, [plain], options);
  }
}
