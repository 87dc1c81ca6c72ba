import { createHash } from 'node:crypto';
import {
  type CosignatureSigner,
  checkTree,
  emptyTreeHash,
  equalHashes,
  formatSignatureLine,
  fromBase64,
  type Hash,
  NoteError,
  type NoteVerifier,
  openNote,
  ProofError,
  parseCheckpoint,
} from '@scenario-scoring/tlog';
import type { WitnessStore } from './witness-store.js';

/** The most consistency proof lines a client may send (C2SP tlog-witness). */
const MAX_PROOF_LINES = 63;

/** An HTTP answer of the witness: status, content type and body. */
export interface WitnessAnswer {
  status: number;
  contentType: string;
  body: string;
}

/** A refused submission worth an operator's look (a bad proof or a fork from a known, validly signed log). */
export interface WitnessRefusal {
  origin: string;
  status: number;
  reason: string;
  checkpoint: string;
  /**
   * Evidence of a fork on its own: the checkpoint has the size of the one the witness cosigned and another
   * root, both signed by the log. Any other refusal may be anyone's doing (a signed checkpoint is public, and
   * a proof that does not verify, or one sent between equal sizes, says nothing of the log).
   */
  fork: boolean;
}

/** What a {@link Witness} needs: its cosigner, the logs it witnesses and its state. */
export interface WitnessOptions {
  signer: CosignatureSigner;
  /** Per log origin, the keys whose signature the log's checkpoints must carry (signed-note Ed25519). */
  logs: ReadonlyMap<string, readonly NoteVerifier[]>;
  store: WitnessStore;
  /** Called for each validly signed checkpoint it refuses (evidence of misbehaviour or a lagging client). */
  onRefusal?: (refusal: WitnessRefusal) => void;
}

const text = (status: number, body: string): WitnessAnswer => ({
  status,
  contentType: 'text/plain; charset=utf-8',
  body: `${body}\n`,
});

/**
 * The witness side of C2SP tlog-witness: {@link addCheckpoint} checks a submitted checkpoint against the
 * log's key and the latest checkpoint it cosigned for that origin, and cosigns it only when it extends it.
 */
export class Witness {
  readonly #options: WitnessOptions;

  constructor(options: WitnessOptions) {
    this.#options = options;
  }

  /**
   * `POST <prefix>/add-checkpoint` with request body `body`: `old <size>`, up to 63 consistency proof
   * lines, a blank line and the signed checkpoint. Answers 200 with this witness's cosignature line(s)
   * after persisting the checkpoint; 400 for a malformed body or an old size above the checkpoint's; 404
   * for an origin it does not witness; 403 when no trusted key signed it or a trusted key's line does not
   * verify; 409 (`text/x.tlog.size`, the size it holds) when the old size is not the size it last cosigned
   * (a rollback or a lagging client); 422 for a size-0 checkpoint without the empty root, a proof given
   * from size 0, a consistency proof that does not verify (a proof given between equal sizes included)
   * or, at an equal size, a different root (a fork, the only refusal marked `fork`).
   */
  async addCheckpoint(body: string): Promise<WitnessAnswer> {
    const request = parseRequest(body);
    if (typeof request === 'string') return text(400, request);
    const { oldSize, proof, note } = request;
    let checkpoint: ReturnType<typeof parseCheckpoint>;
    try {
      checkpoint = parseCheckpoint(note.slice(0, note.lastIndexOf('\n\n') + 1));
    } catch {
      return text(400, 'the checkpoint is not a tlog-checkpoint note');
    }
    const keys = this.#options.logs.get(checkpoint.origin);
    if (!keys) return text(404, `unknown log origin ${JSON.stringify(checkpoint.origin)}`);
    try {
      await openNote(note, keys);
    } catch (error) {
      if (!(error instanceof NoteError)) throw error;
      return error.reason === 'malformed' ? text(400, error.message) : text(403, error.message);
    }
    if (oldSize > checkpoint.treeSize) return text(400, 'the old size is above the checkpoint size');
    const refuse = (status: number, reason: string, fork = false) => {
      this.#options.onRefusal?.({ origin: checkpoint.origin, status, reason, checkpoint: note, fork });
      return text(status, reason);
    };
    const stored = this.#options.store.latest(checkpoint.origin);
    const storedSize = stored?.treeSize ?? 0;
    if (oldSize !== storedSize) {
      this.#options.onRefusal?.({
        origin: checkpoint.origin,
        status: 409,
        reason: `old size ${oldSize}, the witness holds ${storedSize}`,
        checkpoint: note,
        fork: false,
      });
      return { status: 409, contentType: 'text/x.tlog.size', body: `${storedSize}\n` };
    }
    if (checkpoint.treeSize === 0 && !equalHashes(checkpoint.rootHash, await emptyTreeHash())) {
      return refuse(422, 'a checkpoint of size 0 has the root of the empty tree');
    }
    if (oldSize === 0 && proof.length > 0) return refuse(422, 'a proof from size 0 must be empty');
    if (stored && oldSize > 0) {
      try {
        await checkTree(proof, checkpoint.treeSize, checkpoint.rootHash, stored.treeSize, stored.rootHash);
      } catch (error) {
        if (!(error instanceof ProofError)) throw error;
        // A proof between equal sizes is not empty: 422 as any proof that does not verify (C2SP
        // tlog-witness: the RFC 6962 proof between equal sizes is empty), and no fork, whatever the roots.
        return refuse(422, error.message, error.reason === 'same size, different roots');
      }
    }
    const { signer } = this.#options;
    const line = formatSignatureLine(await signer.sign(note.slice(0, note.lastIndexOf('\n\n') + 1)));
    const next = { ...checkpoint, note: `${note}${line}` };
    const conflict = this.#options.store.replace(next, stored);
    if (conflict !== undefined) {
      // Another submission moved the state between the check and the write: this one checked a stale view.
      return { status: 409, contentType: 'text/x.tlog.size', body: `${conflict}\n` };
    }
    return { status: 200, contentType: 'text/plain; charset=utf-8', body: line };
  }

  /**
   * `GET <prefix>/<hex SHA-256 of origin>/checkpoint`: the latest checkpoint cosigned for the log whose
   * origin hashes to `originHash`, with the log's and this witness's signatures; 404 when there is none.
   */
  async latestCheckpoint(originHash: string): Promise<WitnessAnswer> {
    for (const origin of this.#options.logs.keys()) {
      if (createHash('sha256').update(origin).digest('hex') !== originHash) continue;
      const stored = this.#options.store.latest(origin);
      if (stored) return { status: 200, contentType: 'text/plain; charset=utf-8', body: stored.note };
    }
    return text(404, 'no checkpoint cosigned for that log');
  }
}

/** The parts of an add-checkpoint body, or what is wrong with it. */
function parseRequest(body: string): { oldSize: number; proof: Hash[]; note: string } | string {
  const blank = body.indexOf('\n\n');
  if (blank < 0) return 'no blank line before the checkpoint';
  const [old = '', ...proofLines] = body.slice(0, blank).split('\n');
  const size = /^old (0|[1-9][0-9]*)$/.exec(old)?.[1];
  if (size === undefined || !Number.isSafeInteger(Number(size))) return 'the first line is "old <size>"';
  if (proofLines.length > MAX_PROOF_LINES) return `more than ${MAX_PROOF_LINES} proof lines`;
  const proof: Hash[] = [];
  for (const line of proofLines) {
    const hash = fromBase64(line);
    if (hash?.length !== 32) return 'a proof line is not a base64 SHA-256 hash';
    proof.push(hash);
  }
  return { oldSize: Number(size), proof, note: body.slice(blank + 2) };
}
