import { fromBase64, toBase64 } from './encoding.js';
import { HASH_SIZE, type Hash } from './hash.js';

/** The first line of a C2SP tlog-proof. */
const HEADER = 'c2sp.org/tlog-proof@v1';

/** A C2SP tlog-proof: optional extra data, the entry's index, its inclusion proof and the signed checkpoint. */
export interface TlogProof {
  extra?: Uint8Array;
  index: number;
  path: Hash[];
  /** The checkpoint note, verbatim (body, blank line, signature and cosignature lines). */
  checkpoint: string;
}

/** Thrown by {@link parseTlogProof} for text that is not a tlog-proof. */
export class TlogProofFormatError extends Error {
  override readonly name = 'TlogProofFormatError';
}

/**
 * The C2SP tlog-proof text of `proof`: `c2sp.org/tlog-proof@v1`, `extra <base64>` when there is extra
 * data, `index <n>`, one base64 hash per line, a blank line and the checkpoint verbatim.
 */
export function formatTlogProof(proof: TlogProof): string {
  const extra = proof.extra === undefined ? '' : `extra ${toBase64(proof.extra)}\n`;
  const path = proof.path.map((hash) => `${toBase64(hash)}\n`).join('');
  return `${HEADER}\n${extra}index ${proof.index}\n${path}\n${proof.checkpoint}`;
}

/**
 * The proof a C2SP tlog-proof text states. Throws a TlogProofFormatError unless it has the header, an
 * optional `extra` line of base64, an `index` line (decimal, no leading zeros), base64 SHA-256 hashes, a
 * blank line and a non-empty checkpoint.
 */
export function parseTlogProof(text: string): TlogProof {
  const blank = text.indexOf('\n\n');
  if (blank < 0) throw new TlogProofFormatError('a tlog-proof has a blank line before its checkpoint');
  const lines = text.slice(0, blank).split('\n');
  if (lines.shift() !== HEADER) throw new TlogProofFormatError(`a tlog-proof starts with ${HEADER}`);
  let extra: Uint8Array | undefined;
  if (lines[0]?.startsWith('extra ')) {
    extra = fromBase64((lines.shift() as string).slice('extra '.length));
    if (extra === undefined) throw new TlogProofFormatError('the extra line is not base64');
  }
  const index = /^index (0|[1-9][0-9]*)$/.exec(lines.shift() ?? '')?.[1];
  if (index === undefined || !Number.isSafeInteger(Number(index))) {
    throw new TlogProofFormatError('a tlog-proof has an "index <n>" line');
  }
  const path = lines.map((line) => {
    const hash = fromBase64(line);
    if (hash?.length !== HASH_SIZE)
      throw new TlogProofFormatError('a proof line is not a base64 SHA-256 hash');
    return hash;
  });
  const checkpoint = text.slice(blank + 2);
  if (checkpoint === '') throw new TlogProofFormatError('a tlog-proof ends with its checkpoint');
  return { ...(extra !== undefined && { extra }), index: Number(index), path, checkpoint };
}
