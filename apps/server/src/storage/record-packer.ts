import { Worker } from 'node:worker_threads';
import { THREAD_RESOURCE_LIMITS, threadModule } from '../server-files.js';
import { packRecord, RECORD_CODECS, RECORD_PACKING, recordLeafHash } from './record-codec.js';
import type { PackingReply, PackingRequest, PackingThreadData } from './record-packing-messages.js';

const THREAD_MODULE = threadModule('storage/record-packing-thread');
const HASH_BYTES = 32;

/** Records packed: each one's stored form (storage/record-codec.ts) and its leaf hash, in order. */
export interface PackedRecords {
  stored: Uint8Array[];
  leafHashes: Uint8Array[];
}

/** The records packed on the calling thread (what the packing thread does, and its fallback). */
export function packRecordsHere(records: readonly Uint8Array[]): PackedRecords {
  return { stored: records.map(packRecord), leafHashes: records.map(recordLeafHash) };
}

/** A record as it is posted: its own bytes only (a view's whole ArrayBuffer would be copied with it). */
function ownBytes(record: Uint8Array): Uint8Array {
  return record.byteOffset === 0 && record.byteLength === record.buffer.byteLength ? record : record.slice();
}

/**
 * Packs PostgreSQL's log records off the event loop: a group commit's records go to one worker thread
 * (record-packing-thread.ts) in one message, and come back packed with their leaf hashes. Deflating a
 * record costs 25-50 µs (bench/disk), most of what the event loop did for a scoring's record on
 * PostgreSQL; on SQLite the connection's own thread packs as it inserts (`log_record_pack`), so this is for
 * PostgreSQL only. The thread starts with the first records and holds the process open only while a
 * message is out. If it cannot be started, fails or exits, the records out and all later ones are packed
 * here, on the calling thread, to the same stored forms (nothing is lost, nothing fails for it); after
 * `close()` too.
 */
export class RecordPacker {
  readonly #module: URL;
  #worker: Worker | undefined;
  #failed = false;
  #nextId = 0;
  #packedHere = 0;
  readonly #pending = new Map<number, { records: Uint8Array[]; resolve: (packed: PackedRecords) => void }>();

  /** `module` (tests): another thread module than record-packing-thread's. */
  constructor(options: { module?: URL } = {}) {
    this.#module = options.module ?? THREAD_MODULE;
  }

  /** How many records were packed on the calling thread (the thread failed, or was closed). */
  get packedHere(): number {
    return this.#packedHere;
  }

  /** Each record's stored form and leaf hash, in order. Never rejects. */
  pack(records: readonly Uint8Array[]): Promise<PackedRecords> {
    const worker = records.length === 0 ? undefined : this.#started();
    if (worker === undefined) return Promise.resolve(this.#here(records));
    const id = this.#nextId++;
    const posted = records.map(ownBytes);
    return new Promise((resolve) => {
      this.#pending.set(id, { records: posted, resolve });
      if (this.#pending.size === 1) worker.ref();
      try {
        worker.postMessage({ id, records: posted } satisfies PackingRequest);
      } catch {
        this.#fail();
      }
    });
  }

  /** Ends the thread; what it still had out, and every later pack, is packed on the calling thread. */
  async close(): Promise<void> {
    const worker = this.#worker;
    this.#fail();
    await worker?.terminate();
  }

  #started(): Worker | undefined {
    if (this.#failed) return undefined;
    if (this.#worker) return this.#worker;
    let worker: Worker;
    try {
      const workerData: PackingThreadData = {
        codec: RECORD_PACKING.codec,
        deflate: RECORD_PACKING.deflate,
        inflate: RECORD_CODECS[RECORD_PACKING.codec] ?? RECORD_PACKING.deflate,
      };
      worker = new Worker(this.#module, { workerData, resourceLimits: THREAD_RESOURCE_LIMITS });
    } catch {
      this.#failed = true;
      return undefined;
    }
    worker.unref();
    worker.on('message', (reply: PackingReply) => this.#answer(reply));
    worker.on('error', () => this.#fail());
    worker.once('exit', () => {
      if (this.#worker === worker) this.#fail();
    });
    this.#worker = worker;
    return worker;
  }

  #answer(reply: PackingReply): void {
    const pending = this.#pending.get(reply.id);
    if (pending === undefined) return;
    this.#pending.delete(reply.id);
    if (this.#pending.size === 0) this.#worker?.unref();
    if ('error' in reply || reply.stored.length !== pending.records.length) {
      pending.resolve(this.#here(pending.records));
      return;
    }
    const leafHashes: Uint8Array[] = [];
    for (let i = 0; i < pending.records.length; i++)
      leafHashes.push(reply.leafHashes.subarray(i * HASH_BYTES, (i + 1) * HASH_BYTES));
    pending.resolve({ stored: reply.stored, leafHashes });
  }

  /** From now on everything is packed here, starting with what the thread had out. */
  #fail(): void {
    this.#failed = true;
    const worker = this.#worker;
    this.#worker = undefined;
    worker?.unref();
    const pending = [...this.#pending.values()];
    this.#pending.clear();
    for (const { records, resolve } of pending) resolve(this.#here(records));
  }

  #here(records: readonly Uint8Array[]): PackedRecords {
    this.#packedHere += records.length;
    return packRecordsHere(records);
  }
}
