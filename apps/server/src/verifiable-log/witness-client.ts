import { type Hash, type NoteVerifier, openNote, toBase64 } from '@scenario-scoring/tlog';
import { describeError, type Logger } from '../request-logging/logger.js';

/**
 * The most bytes of a witness's answer read: a cosignature answer is a few signature lines (about 150
 * bytes each), a 409's body a number. A longer answer is cut off there (its connection closed) and the
 * attempt failed: 300 MB of answer took the server from 190 MB to 1.19 GB.
 */
export const WITNESS_ANSWER_LIMIT_BYTES = 16 * 1024;

/** One witness of the policy that has a URL: its policy name, submission prefix and cosignature key. */
export interface WitnessEndpoint {
  name: string;
  url: string;
  verifier: NoteVerifier;
}

/** What {@link WitnessClient.submit} got: a cosignature line of the witness's key, or why not. */
export type WitnessOutcome =
  | { kind: 'cosigned'; line: string }
  | { kind: 'refused'; status: number; detail: string }
  /** The witness holds a larger tree than the checkpoint sent: another instance's newer one, or a rollback. */
  | { kind: 'ahead'; size: number }
  | { kind: 'failed'; detail: string };

/**
 * Sends checkpoints to one witness by C2SP tlog-witness `add-checkpoint`, remembering the size it last
 * cosigned (in memory: after a restart, or when another instance moved it, the witness's 409 tells).
 */
export class WitnessClient {
  readonly endpoint: WitnessEndpoint;
  readonly #logger: Logger;
  readonly #timeoutMs: number;
  /** The size the witness holds for the log, as it last said; undefined: unknown (sent as 0). */
  #knownSize: number | undefined;

  constructor(endpoint: WitnessEndpoint, logger: Logger, timeoutMs: number) {
    this.endpoint = endpoint;
    this.#logger = logger;
    this.#timeoutMs = timeoutMs;
  }

  /**
   * Submits the signed checkpoint `note` of `treeSize` leaves. `proveFrom(old)` gives the consistency
   * proof from the root tree of `old` leaves. On 409 it learns the witness's size from the
   * `text/x.tlog.size` body and tries once more from it (a witness holding a larger tree answers `ahead`,
   * for the caller to tell another instance's newer checkpoint from a rollback). 403, 404 and 422 are logged (a 422 means the witness holds a tree
   * this one does not extend) and answered as refused; the witness's cosignature line is checked with its
   * key before it is answered.
   */
  async submit(
    note: string,
    treeSize: number,
    proveFrom: (oldSize: number) => Promise<Hash[]>,
  ): Promise<WitnessOutcome> {
    for (let attempt = 0; attempt < 2; attempt++) {
      const old = Math.min(this.#knownSize ?? 0, treeSize);
      const proof = old > 0 && old < treeSize ? await proveFrom(old) : [];
      const body = `old ${old}\n${proof.map((hash) => `${toBase64(hash)}\n`).join('')}\n${note}`;
      let response: Response;
      let text: string;
      try {
        response = await fetch(`${this.endpoint.url.replace(/\/+$/, '')}/add-checkpoint`, {
          method: 'POST',
          body,
          headers: { 'content-type': 'text/plain; charset=utf-8' },
          signal: AbortSignal.timeout(this.#timeoutMs),
          // C2SP tlog-witness defines no redirect: the answer is the witness's at its submission prefix. A
          // redirect followed would send the checkpoint wherever the answer says (a 301/302/303 as a GET).
          redirect: 'manual',
        });
        text = await readBounded(response, WITNESS_ANSWER_LIMIT_BYTES);
      } catch (error) {
        this.#knownSize = undefined;
        if (error instanceof AnswerTooLarge) {
          this.#logger.error('witness answer too large', {
            witness: this.endpoint.name,
            treeSize,
            limitBytes: WITNESS_ANSWER_LIMIT_BYTES,
          });
          return { kind: 'failed', detail: error.message };
        }
        this.#logger.error('witness unreachable', { witness: this.endpoint.name, ...describeError(error) });
        return { kind: 'failed', detail: (error as Error).message };
      }
      if (response.status >= 300 && response.status < 400) {
        this.#knownSize = undefined;
        const detail = `the witness answered a redirect (${response.status}), which is not followed`;
        this.#logger.error('witness answered a redirect', {
          witness: this.endpoint.name,
          status: response.status,
          location: response.headers.get('location')?.slice(0, 300),
          treeSize,
        });
        return { kind: 'failed', detail };
      }
      if (response.status === 200) {
        const line = await this.#checkCosignature(note, text);
        if (line === undefined) {
          this.#logger.error('witness answered no valid cosignature', {
            witness: this.endpoint.name,
            treeSize,
          });
          return { kind: 'failed', detail: 'no valid cosignature in the answer' };
        }
        this.#knownSize = treeSize;
        return { kind: 'cosigned', line };
      }
      if (response.status === 409 && response.headers.get('content-type')?.startsWith('text/x.tlog.size')) {
        const held = /^(0|[1-9][0-9]*)\n?$/.exec(text)?.[1];
        if (held !== undefined && Number(held) <= treeSize) {
          this.#knownSize = Number(held);
          continue;
        }
        this.#knownSize = undefined;
        if (held !== undefined) return { kind: 'ahead', size: Number(held) };
        this.#logger.error('witness answered 409 without a size', { witness: this.endpoint.name, treeSize });
        return { kind: 'refused', status: 409, detail: text.slice(0, 300) };
      }
      this.#knownSize = undefined;
      this.#logger.error('witness refused the root checkpoint', {
        witness: this.endpoint.name,
        status: response.status,
        treeSize,
        detail: text.slice(0, 300),
      });
      return { kind: 'refused', status: response.status, detail: text.slice(0, 300) };
    }
    return { kind: 'failed', detail: 'the witness moved during resynchronisation' };
  }

  /** The witness's own cosignature line in `answer` that verifies over `note`'s text; undefined if none. */
  async #checkCosignature(note: string, answer: string): Promise<string | undefined> {
    const text = note.slice(0, note.lastIndexOf('\n\n') + 1);
    for (const line of answer.split('\n')) {
      if (!line.startsWith('\u2014 ')) continue;
      try {
        await openNote(`${text}\n${line}\n`, [this.endpoint.verifier]);
        return `${line}\n`;
      } catch {
        // Another key's line, or one that does not verify: not this witness's cosignature.
      }
    }
    return undefined;
  }
}

/** A witness's answer past the limit: read no further. */
class AnswerTooLarge extends Error {
  override readonly name = 'AnswerTooLarge';
}

/**
 * The body of `response` as UTF-8 text, reading at most `limit` bytes: a longer body (by its
 * Content-Length, or as it arrives) is cancelled, which closes its connection, and throws AnswerTooLarge.
 */
async function readBounded(response: Response, limit: number): Promise<string> {
  const tooLarge = () => new AnswerTooLarge(`the witness's answer is over ${limit} bytes; not read further`);
  const declared = Number(response.headers.get('content-length') ?? Number.NaN);
  if (declared > limit) {
    await response.body?.cancel().catch(() => {});
    throw tooLarge();
  }
  if (!response.body) return '';
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let length = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    length += value.byteLength;
    if (length > limit) {
      await reader.cancel().catch(() => {});
      throw tooLarge();
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks, length).toString('utf8');
}
