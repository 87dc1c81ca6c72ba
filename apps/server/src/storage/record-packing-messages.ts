/**
 * The messages between the record packing thread (record-packing-thread.ts) and its driver
 * (record-packer.ts). Types only: the thread imports them as types, so that Node can run its TypeScript
 * source as it is under vitest.
 */

/** What the thread packs with, as its `workerData`: the codec's first byte, its deflate, and its inflate (the self-check's). */
export interface PackingThreadData {
  codec: number;
  deflate: import('node:zlib').ZlibOptions;
  inflate: import('node:zlib').ZlibOptions;
}

/** Records to pack, each a log record's own bytes. */
export interface PackingRequest {
  id: number;
  records: Uint8Array[];
}

/**
 * The records' stored forms, in order, and their leaf hashes (32 bytes each, in order, in one buffer); or
 * why they could not be packed there (the driver then packs them itself).
 */
export type PackingReply =
  | { id: number; stored: Uint8Array[]; leafHashes: Uint8Array }
  | { id: number; error: string };
