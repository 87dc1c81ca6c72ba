import zlib from 'node:zlib';

/** The parts of a Node zlib stream this drives (lib/zlib.js's own sync path uses them; not public API). */
interface ZlibStreamInternals {
  _handle?: {
    reset(): void;
    writeSync(
      flush: number,
      input: Uint8Array,
      inputOffset: number,
      inputLength: number,
      output: Uint8Array,
      outputOffset: number,
      outputLength: number,
    ): void;
    onerror?: (message: string, errno: number) => void;
  };
  /** [output bytes left, input bytes left] after the last write. */
  _writeState?: Uint32Array;
}

/**
 * A whole buffer deflated or inflated at once through ONE zlib stream, reset between calls, where
 * `zlib.deflateRawSync` and `zlib.inflateRawSync` make a new stream each time: a stream object, zlib's
 * state allocated and set up, and a preset dictionary read in again, on every call. For a log record of a
 * couple of kilobytes that is most of the cost (measured: deflate 45 → 25 µs, inflate 20 → 3 µs per
 * record with codec 1's 8 KiB dictionary); resetting keeps the allocations, and Node's reset sets the
 * dictionary again.
 *
 * It writes through the stream's handle (`_handle.reset()`, `_handle.writeSync()` and `_writeState`), as
 * Node's own sync path does, which is not public API: so it checks itself on first use (`check`, a round
 * trip against the public functions), and whatever surprises it (no such handle, an error, an output that
 * does not fit `outputBytes`) makes that call through `fallback`, the public one-shot function, whose
 * result is the same record (deflate's bytes may differ, its inflation does not) and whose errors are
 * the ones thrown. A stream that reported an error is dropped and made anew.
 */
export class ReusedZlib {
  readonly #open: () => zlib.Deflate | zlib.Inflate | zlib.DeflateRaw | zlib.InflateRaw;
  readonly #fallback: (input: Uint8Array) => Buffer;
  readonly #check: (run: (input: Uint8Array) => Buffer | undefined) => boolean;
  readonly #output: Buffer;
  #stream: ZlibStreamInternals | undefined;
  #failed = false;
  #usable: boolean | undefined;

  constructor(options: {
    open: () => zlib.Deflate | zlib.Inflate | zlib.DeflateRaw | zlib.InflateRaw;
    fallback: (input: Uint8Array) => Buffer;
    /** Whether a run through the reused stream gives what the public functions give (on first use). */
    check: (run: (input: Uint8Array) => Buffer | undefined) => boolean;
    outputBytes: number;
  }) {
    this.#open = options.open;
    this.#fallback = options.fallback;
    this.#check = options.check;
    this.#output = Buffer.allocUnsafeSlow(options.outputBytes);
  }

  /**
   * `input` deflated or inflated whole, in a buffer of its own (not Node's shared pool, so it can be
   * transferred to another thread) with `headroom` bytes free before it for the caller to fill.
   */
  run(input: Uint8Array, headroom = 0): Buffer {
    if (this.#usable === undefined) this.#usable = this.#selfCheck();
    const written = this.#usable ? this.#write(input) : undefined;
    const bytes = written ?? this.#fallback(input);
    const result = Buffer.allocUnsafeSlow(headroom + bytes.length);
    result.set(bytes, headroom);
    return result;
  }

  #selfCheck(): boolean {
    try {
      return this.#check((input) => this.#write(input));
    } catch {
      return false;
    }
  }

  /** The output in `#output` (valid until the next write), or undefined when this write is to fall back. */
  #write(input: Uint8Array): Buffer | undefined {
    const stream = this.#stream ?? this.#start();
    const handle = stream?._handle;
    if (!stream || !handle) return undefined;
    this.#failed = false;
    try {
      handle.reset();
      handle.writeSync(zlib.constants.Z_FINISH, input, 0, input.length, this.#output, 0, this.#output.length);
    } catch {
      this.#failed = true;
    }
    const state = stream._writeState;
    if (this.#failed || !state) {
      this.#stream = undefined;
      (stream as unknown as zlib.Zlib).close();
      return undefined;
    }
    const [outputLeft = 0, inputLeft = 1] = state;
    // All input read, and room left: the stream ended within the buffer (else, bigger than it: fall back).
    if (inputLeft !== 0 || outputLeft === 0) return undefined;
    return this.#output.subarray(0, this.#output.length - outputLeft);
  }

  #start(): ZlibStreamInternals | undefined {
    const stream = this.#open() as unknown as ZlibStreamInternals;
    const handle = stream._handle;
    if (!handle || typeof handle.reset !== 'function' || typeof handle.writeSync !== 'function')
      return undefined;
    // Its errors are this object's to see (the stream's own handler would destroy the stream).
    handle.onerror = () => {
      this.#failed = true;
    };
    this.#stream = stream;
    return stream;
  }
}

/** What the reused raw deflate and inflate check themselves with (any bytes would do; these are a record's). */
const CHECK_INPUT = Buffer.from(
  '{"context":{"jurisdiction":"FR"},"kind":"score","model_version":"scorecard-2","schema":"score-log/2"}',
);

/**
 * Raw deflate with `options` through one reused stream, falling back to `zlib.deflateRawSync`; it checks
 * itself on first use by inflating its own output with `inflate` (the one-shot function).
 */
export function reusedDeflateRaw(options: zlib.ZlibOptions, inflate: zlib.ZlibOptions): ReusedZlib {
  return new ReusedZlib({
    open: () => zlib.createDeflateRaw(options),
    fallback: (input) => zlib.deflateRawSync(input, options),
    check: (run) => {
      const deflated = run(CHECK_INPUT);
      return deflated !== undefined && zlib.inflateRawSync(deflated, inflate).equals(CHECK_INPUT);
    },
    outputBytes: 64 * 1024,
  });
}

/**
 * Raw inflate with `options` through one reused stream, falling back to `zlib.inflateRawSync` (so
 * `options.maxOutputLength` bounds the fallback); it checks itself on first use against `deflate`'s
 * one-shot output.
 */
export function reusedInflateRaw(options: zlib.ZlibOptions, deflate: zlib.ZlibOptions): ReusedZlib {
  const { maxOutputLength: _bound, ...stream } = options;
  return new ReusedZlib({
    open: () => zlib.createInflateRaw(stream),
    fallback: (input) => zlib.inflateRawSync(input, options),
    check: (run) => run(zlib.deflateRawSync(CHECK_INPUT, deflate))?.equals(CHECK_INPUT) === true,
    outputBytes: 256 * 1024,
  });
}
