import { parentPort } from 'node:worker_threads';
import { scoreBatch } from './run-batch.js';
import type { ScoringRequest } from './scoring-pool.js';

/**
 * A scoring thread of the ScoringPool: scores the batches it is sent with the same `scoreBatch` the
 * in-process path uses, and sends the rows back, moving the log records' bytes instead of copying them.
 */
parentPort?.on('message', (request: ScoringRequest) => {
  try {
    const batch = scoreBatch(request.source, request.from, new Date(request.now));
    const buffers = batch.logRecords.map((row) => (row.bytes as Uint8Array).buffer as ArrayBuffer);
    parentPort?.postMessage({ id: request.id, batch }, [...new Set(buffers)]);
  } catch (error) {
    parentPort?.postMessage({ id: request.id, error: String(error) });
  }
});
