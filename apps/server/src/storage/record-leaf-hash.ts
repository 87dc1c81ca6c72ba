import { hash } from 'node:crypto';

/**
 * The RFC 9162 leaf hash of a log record: SHA-256(0x00 || the record's bytes). On its own, importing only
 * Node's modules, so that the SQLite connection's thread (which imports such modules only) hashes with it
 * too; record-codec.ts gives it to everyone else.
 */
export function recordLeafHash(record: Uint8Array): Buffer {
  const input = Buffer.allocUnsafe(record.length + 1);
  input[0] = 0x00;
  input.set(record, 1);
  return hash('sha256', input, 'buffer');
}
