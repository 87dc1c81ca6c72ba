import { parentPort } from 'node:worker_threads';
import { scoreItems } from './run-batch.js';
import type { ScoringReply, ScoringRequest } from './scoring-pool.js';

/**
 * A scoring thread of the ScoringPool: scores the batches it is sent with the same `scoreItems` the
 * in-process path uses, and sends them back in that compact form (the pool makes the rows), moving the log
 * records' bytes instead of copying them.
 */
parentPort?.on('message', (request: ScoringRequest) => {
  try {
    const scored = scoreItems(request.source, request.from, new Date(request.now));
    const buffers = scored.records.map((bytes) => bytes.buffer as ArrayBuffer);
    const reply: ScoringReply = { id: request.id, scored };
    parentPort?.postMessage(reply, [...new Set(buffers)]);
  } catch (error) {
    parentPort?.postMessage({ id: request.id, error: String(error) });
  }
});
