/**
 * bench/disk/compression: what compressing score-log/2 record bytes would save, and its CPU cost per
 * record. Builds real records (scoreAndLog, the server's own record form) for `--records` subjects, then
 * for the server's own codec (codec 1 of apps/server/src/storage/record-codec.ts: raw deflate with its
 * frozen 8 KiB dictionary), deflate (level 6), zstd (level 3) and both with a dictionary of this run's
 * first records (the constant keys and strings of the form, used as a raw-content dictionary) prints the
 * mean stored bytes and the microseconds per record to compress and to decompress, on this process's main
 * thread.
 *
 *   node disk/compression.ts [--records 20000]
 */
import { randomBytes } from 'node:crypto';
import zlib from 'node:zlib';
import { scoreAndLog } from '@scenario-scoring/engine';
import { packRecord, unpackRecord } from '@scenario-scoring/server';
import { benchArgs } from '../lib/bench-args.ts';
import { benchContext } from '../lib/bench-inputs.ts';

const { values: args } = benchArgs(import.meta.url, {
  options: { records: { type: 'string', default: '20000' } },
});
const N = Number(args.records);
const records: Buffer[] = [];
for (let i = 0; i < N; i++) {
  const context = i % 2 === 0 ? benchContext(i, 'DE') : { jurisdiction: 'FR' };
  const logged = scoreAndLog(`bench-subject-${i}`, context, {
    identity: { kind: 'score', request_id: `req_${randomBytes(13).toString('hex').toUpperCase()}` },
    scored_at: new Date().toISOString(),
    salt: randomBytes(32).toString('base64url'),
  });
  records.push(Buffer.from(logged.logBytes));
}
// A hand-built dictionary: a few records of each shape (their keys, reason statements, model and policy
// strings), the last bytes weighing most as zstd reads a raw dictionary.
const dictionary = Buffer.concat(records.slice(0, 8));
const Z = zlib.constants;
const codecs = [
  {
    name: 'server codec 1',
    c: (b: Buffer) => packRecord(b),
    d: (b: Buffer) => unpackRecord(b),
  },
  {
    name: 'deflate-raw 6',
    c: (b: Buffer) => zlib.deflateRawSync(b, { level: 6 }),
    d: (b: Buffer) => zlib.inflateRawSync(b),
  },
  {
    name: 'deflate-raw 6 + dict',
    c: (b: Buffer) => zlib.deflateRawSync(b, { level: 6, dictionary }),
    d: (b: Buffer) => zlib.inflateRawSync(b, { dictionary }),
  },
  {
    name: 'zstd 3',
    c: (b: Buffer) => zlib.zstdCompressSync(b, { params: { [Z.ZSTD_c_compressionLevel]: 3 } }),
    d: (b: Buffer) => zlib.zstdDecompressSync(b),
  },
  {
    name: 'zstd 3 + dict',
    c: (b: Buffer) =>
      zlib.zstdCompressSync(b, {
        params: { [Z.ZSTD_c_compressionLevel]: 3, [Z.ZSTD_c_checksumFlag]: 0, [Z.ZSTD_c_contentSizeFlag]: 0 },
        dictionary,
      } as zlib.ZstdOptions),
    d: (b: Buffer) => zlib.zstdDecompressSync(b, { dictionary } as zlib.ZstdOptions),
  },
];
const raw = records.reduce((s, r) => s + r.length, 0) / N;
console.log(
  `bench/disk/compression: ${N} score-log/2 records, mean ${raw.toFixed(0)} B; Node ${process.version}`,
);
const sample = records.slice(8);
for (const codec of codecs) {
  let compressed: Buffer[] = [];
  try {
    compressed = sample.map(codec.c);
  } catch (error) {
    console.log(`  ${codec.name}: unavailable (${(error as Error).message})`);
    continue;
  }
  let t = performance.now();
  compressed = sample.map(codec.c);
  const cUs = ((performance.now() - t) * 1000) / sample.length;
  t = performance.now();
  const back = compressed.map(codec.d);
  const dUs = ((performance.now() - t) * 1000) / sample.length;
  if (!back.every((b, i) => b.equals(sample[i] as Buffer)))
    throw new Error(`${codec.name}: not byte-identical`);
  const mean = compressed.reduce((s, r) => s + r.length, 0) / sample.length;
  console.log(
    `  ${codec.name.padEnd(22)} ${mean.toFixed(0).padStart(5)} B (${((100 * mean) / raw).toFixed(0)}%)  ` +
      `compress ${cUs.toFixed(1)} µs  decompress ${dUs.toFixed(1)} µs per record`,
  );
}
