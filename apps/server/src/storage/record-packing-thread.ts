import { parentPort as port, workerData } from 'node:worker_threads';
import { recordLeafHash } from './record-leaf-hash.ts';
import type { PackingReply, PackingRequest, PackingThreadData } from './record-packing-messages.js';
import { reusedDeflateRaw } from './reused-zlib.ts';

/*
 * The thread that packs PostgreSQL's log records (see RecordPacker): for each message, every record's
 * stored form (the codec's byte, then its deflate through one reused stream) and its leaf hash, moved back,
 * not copied. On SQLite the connection's thread does the same as it inserts (`log_record_pack`).
 *
 * It imports only Node's modules, types, reused-zlib.ts and record-leaf-hash.ts, by their `.ts` names, so
 * that Node runs this TypeScript source as it is under vitest (see server-files.ts).
 */

if (port === null) throw new Error('record-packing-thread.ts runs as a worker thread only');
const parentPort = port;
const data = workerData as PackingThreadData;
const deflate = reusedDeflateRaw(data.deflate, data.inflate);
const HASH_BYTES = 32;

parentPort.on('message', ({ id, records }: PackingRequest) => {
  let reply: PackingReply;
  const transfer: ArrayBuffer[] = [];
  try {
    const stored: Uint8Array[] = [];
    const leafHashes = new Uint8Array(records.length * HASH_BYTES);
    records.forEach((record, i) => {
      // ReusedZlib.run returns a buffer of its own (not Node's pool), so it can be moved.
      const packed = deflate.run(record, 1);
      packed[0] = data.codec;
      stored.push(packed);
      transfer.push(packed.buffer as ArrayBuffer);
      leafHashes.set(recordLeafHash(record), i * HASH_BYTES);
    });
    transfer.push(leafHashes.buffer);
    reply = { id, stored, leafHashes };
  } catch (error) {
    reply = { id, error: String((error as Error | undefined)?.message ?? error) };
    transfer.length = 0;
  }
  parentPort.postMessage(reply, transfer);
});
