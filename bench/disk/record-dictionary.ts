/**
 * bench/disk/record-dictionary: how the score-log record dictionary (apps/server/src/score-log/
 * record-dictionary.ts) was made, and what it gives. Prints the dictionary as base64, its size, and the
 * mean stored size of records it was not made from (random salts, request ids and times, the bench's
 * mix of full and thin contexts in four jurisdictions, scorings and run items alike).
 *
 *   node disk/record-dictionary.ts [--window 4096]
 *
 * The dictionary in the server is frozen: records stored with it are read with it forever, so a better
 * one is a new codec version beside it, never an edit of it. It is a raw-content dictionary (deflate has
 * no trained form): the last `--window` bytes of eight records of the shapes the server writes (scorings
 * and run items; full and thin contexts; German, French and default policies), each with its own
 * deterministic salt, id and time, so that it carries the keys, the reason objects, the model and policy
 * strings, the explain markers and the id and time formats. Deflate prefers near matches: the commonest
 * shapes come last.
 */
import { createHash, randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import zlib from 'node:zlib';
import { type ScoreContext, scoreAndLog } from '@scenario-scoring/engine';
import { benchContext } from '../lib/bench-inputs.ts';

const { values: args } = parseArgs({ options: { window: { type: 'string', default: '4096' } } });
const WINDOW = Number(args.window);
const JURISDICTIONS = ['DE', 'FR', 'NL', 'ES'];

/** Record `i` of the bench's mix; `seeded` makes its salt, id and time a function of `i` alone. */
function record(i: number, seeded: boolean): Buffer {
  const jurisdiction = JURISDICTIONS[i % 4] as string;
  const context: ScoreContext = i % 10 === 0 ? { jurisdiction } : benchContext(i, jurisdiction);
  const bytes = (n: number) =>
    seeded ? createHash('sha256').update(`${n}:${i}`).digest().subarray(0, 32) : randomBytes(32);
  const time = seeded ? Date.UTC(2026, 10, 27, 9, 0, 0) + i * 7_919 : Date.now();
  return Buffer.from(
    scoreAndLog(`bench-subject-${i}`, context, {
      identity:
        i % 2 === 0
          ? {
              kind: 'run_item',
              run_id: `run_${bytes(1).toString('hex').slice(0, 26).toUpperCase()}`,
              item: i,
            }
          : { kind: 'score', request_id: `req_${bytes(2).toString('hex').slice(0, 26).toUpperCase()}` },
      scored_at: new Date(time).toISOString(),
      salt: bytes(3).toString('base64url'),
    }).logBytes,
  );
}

const made = Buffer.concat(Array.from({ length: 8 }, (_, i) => record(i + 1, true)));
const dictionary = made.subarray(Math.max(0, made.length - WINDOW));
const windowBits = Math.log2(WINDOW);
const others = Array.from({ length: 3000 }, (_, i) => record(i + 50_000, false));
const raw = others.reduce((sum, b) => sum + b.length, 0) / others.length;
const options = { level: 6, memLevel: 4, windowBits, dictionary };
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
