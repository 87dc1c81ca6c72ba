/**
 * bench/disk/record-dictionary: how the score-log record dictionary (apps/server/src/storage/
 * record-dictionary.ts) was made, and what it gives. Prints the dictionary as base64, its size, and the
 * mean stored size of records it was not made from (random salts, the server's own request and run ids,
 * the time now, the bench's mix of full and thin contexts in four jurisdictions, scorings and run items
 * alike).
 *
 *   node disk/record-dictionary.ts [--window 8192]
 *
 * The dictionary in the server is frozen: records stored with it are read with it forever, so a better
 * one is a new codec version beside it, never an edit of it. It is a raw-content dictionary (deflate has
 * no trained form): the last `--window` bytes of eleven records of the shapes the server writes (scorings
 * and run items; full and thin contexts; German, French and default policies), each with a deterministic
 * salt, ULID-shaped id and time, so that it carries the keys, the reason objects (the thin files' "not
 * enough information" ones too), the model and policy strings, the explain markers and the id and time
 * formats. Deflate prefers near matches: the commonest shapes (a full German scoring, a thin French one)
 * come last.
 */
import { createHash, randomBytes } from 'node:crypto';
import zlib from 'node:zlib';
import { type ScoreContext, scoreAndLog } from '@scenario-scoring/engine';
import { newId } from '@scenario-scoring/server';
import { benchArgs } from '../lib/bench-args.ts';
import { benchContext } from '../lib/bench-inputs.ts';

const { values: args } = benchArgs(import.meta.url, {
  options: { window: { type: 'string', default: '8192' } },
});
const WINDOW = Number(args.window);
const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/** Record `i` in `jurisdiction`, thin or full, a run item or a scoring, its salt, id and time from `i` alone. */
function seeded(i: number, jurisdiction: string, thin: boolean, runItem: boolean): Buffer {
  const bytes = (n: number) => createHash('sha256').update(`${n}:${i}`).digest();
  const ulid = (n: number) => `01K${Array.from(bytes(n).subarray(0, 23), (b) => CROCKFORD[b % 32]).join('')}`;
  const context: ScoreContext = thin ? { jurisdiction } : benchContext(i, jurisdiction);
  return Buffer.from(
    scoreAndLog(`subject-${i}`, context, {
      identity: runItem
        ? { kind: 'run_item', run_id: `run_${ulid(1)}`, item: i }
        : { kind: 'score', request_id: `req_${ulid(2)}` },
      scored_at: new Date(Date.UTC(2026, 10, 27, 9, 0, 0) + i * 7_919).toISOString(),
      salt: bytes(3).subarray(0, 32).toString('base64url'),
    }).logBytes,
  );
}

/** A record as the server writes one: its own ids, the time now, a random salt. */
function written(i: number): Buffer {
  const jurisdiction = ['DE', 'FR', 'NL', 'ES'][i % 4] as string;
  const context: ScoreContext = i % 10 === 0 ? { jurisdiction } : benchContext(i, jurisdiction);
  return Buffer.from(
    scoreAndLog(`bench-subject-${i}`, context, {
      identity:
        i % 2 === 0
          ? { kind: 'run_item', run_id: newId('run'), item: i }
          : { kind: 'score', request_id: newId('req') },
      scored_at: new Date().toISOString(),
      salt: randomBytes(32).toString('base64url'),
    }).logBytes,
  );
}

const made = Buffer.concat([
  seeded(11, 'NL', false, true),
  seeded(12, 'ES', true, false),
  seeded(13, 'DE', true, true),
  seeded(14, 'FR', false, true),
  seeded(1, 'NL', true, true),
  seeded(2, 'ES', false, true),
  seeded(3, 'FR', false, false),
  seeded(4, 'FR', true, true),
  seeded(5, 'DE', false, true),
  seeded(6, 'FR', true, false),
  seeded(7, 'DE', false, false),
]);
const dictionary = made.subarray(Math.max(0, made.length - WINDOW));
const windowBits = Math.log2(WINDOW);
const others = Array.from({ length: 3000 }, (_, i) => written(i + 50_000));
const raw = others.reduce((sum, b) => sum + b.length, 0) / others.length;
const options = { level: 6, memLevel: windowBits - 8, windowBits, dictionary };
const stored = others.map((b) => zlib.deflateRawSync(b, options));
const started = performance.now();
for (const b of others) zlib.deflateRawSync(b, options);
const us = ((performance.now() - started) * 1000) / others.length;
const mean = stored.reduce((sum, b) => sum + b.length, 0) / stored.length;
console.log(
  `dictionary ${dictionary.length} B (sha256 ${createHash('sha256').update(dictionary).digest('hex')}); ` +
    `3,000 other records: ${raw.toFixed(0)} → ${mean.toFixed(0)} B, ${us.toFixed(1)} µs each to compress`,
);
console.log(dictionary.toString('base64'));
