import { randomBytes } from 'node:crypto';
import { scoreAndLog } from '@scenario-scoring/engine';
import { afterEach, describe, expect, it } from 'vitest';
import { packRecord, recordLeafHash, unpackRecord } from './record-codec.js';
import { type PackedRecords, RecordPacker } from './record-packer.js';

/** Real score-log/2 records, a new subject and salt each. */
function records(count: number): Uint8Array[] {
  return Array.from(
    { length: count },
    (_, n) =>
      scoreAndLog(
        `packer-${n}-${randomBytes(4).toString('hex')}`,
        { jurisdiction: 'DE', on_time_ratio: 0.9, utilization: 0.3 + (n % 5) / 10 },
        {
          identity: { kind: 'score', request_id: `req_${n}` },
          scored_at: '2026-12-06T17:00:00.000Z',
          salt: randomBytes(32).toString('base64url'),
        },
      ).logBytes,
  );
}

/** What packing on the calling thread gives: the same stored forms, byte for byte, and the leaf hashes. */
function expectPacked(packed: PackedRecords, input: readonly Uint8Array[]): void {
  expect(packed.stored).toHaveLength(input.length);
  expect(packed.leafHashes).toHaveLength(input.length);
  input.forEach((record, i) => {
    expect(Buffer.from(packed.stored[i] as Uint8Array)).toEqual(packRecord(record));
    expect(Buffer.from(unpackRecord(packed.stored[i] as Uint8Array))).toEqual(Buffer.from(record));
    expect(Buffer.from(packed.leafHashes[i] as Uint8Array)).toEqual(recordLeafHash(record));
  });
}

/** A thread module as a data: URL. */
const thread = (source: string) => new URL(`data:text/javascript,${encodeURIComponent(source)}`);

const packers: RecordPacker[] = [];
afterEach(async () => {
  await Promise.all(packers.splice(0).map((packer) => packer.close()));
});
function packer(options?: { module?: URL }): RecordPacker {
  const made = new RecordPacker(options);
  packers.push(made);
  return made;
}

describe('RecordPacker (PostgreSQL packs its log records on a thread of its own)', () => {
  it('when records are packed, then each comes back as the stored form and leaf hash the event loop would make, in order', async () => {
    const input = records(300);
    const packing = packer();
    expectPacked(await packing.pack(input), input);
    expect(packing.packedHere).toBe(0);
  });

  it('when packs overlap, then each gets its own records back, and a record that is a view of a larger buffer is packed as its bytes only', async () => {
    const packing = packer();
    const batches = [records(20), records(1), records(57)];
    const shared = Buffer.concat([
      Buffer.from('xxxx'),
      Buffer.from(records(1)[0] as Uint8Array),
      Buffer.from('yy'),
    ]);
    const view = shared.subarray(4, shared.length - 2);
    batches.push([view]);
    const results = await Promise.all(batches.map((batch) => packing.pack(batch)));
    results.forEach((packed, i) => {
      expectPacked(packed, batches[i] as Uint8Array[]);
    });
    expect(packing.packedHere).toBe(0);
    expect(shared.subarray(0, 4).toString()).toBe('xxxx');
  });

  it('when there is nothing to pack, then nothing is posted and the answer is empty', async () => {
    expect(await packer().pack([])).toEqual({ stored: [], leafHashes: [] });
  });

  it('when the thread exits at once, then the records out and every later pack are packed on the calling thread, the same', async () => {
    const packing = packer({ module: thread('process.exit(3)') });
    const first = records(5);
    expectPacked(await packing.pack(first), first);
    const later = records(3);
    expectPacked(await packing.pack(later), later);
    expect(packing.packedHere).toBe(8);
  });

  it('when the thread answers an error, then those records are packed on the calling thread, the same', async () => {
    const packing = packer({
      module: thread(
        "import { parentPort } from 'node:worker_threads'; parentPort.on('message', ({ id }) => parentPort.postMessage({ id, error: 'no' }));",
      ),
    });
    const input = records(4);
    expectPacked(await packing.pack(input), input);
    expect(packing.packedHere).toBe(4);
  });

  it('when the thread never answers and the packer is closed, then what was out is packed on the calling thread, and so is all that follows', async () => {
    const packing = packer({
      module: thread("import { parentPort } from 'node:worker_threads'; parentPort.on('message', () => {});"),
    });
    const input = records(6);
    const out = packing.pack(input);
    await packing.close();
    expectPacked(await out, input);
    const later = records(2);
    expectPacked(await packing.pack(later), later);
    expect(packing.packedHere).toBe(8);
    await packing.close();
  });
});
