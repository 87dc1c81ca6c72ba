import { randomBytes } from 'node:crypto';
import zlib from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { ReusedZlib } from './reused-zlib.js';

const DICTIONARY = Buffer.from(
  '{"schema":"score-log/2","subject":"","context":{"jurisdiction":"DE"}}'.repeat(20),
);
const DEFLATE: zlib.ZlibOptions = { level: 6, memLevel: 5, windowBits: 13, dictionary: DICTIONARY };
const INFLATE: zlib.ZlibOptions = { windowBits: 13, dictionary: DICTIONARY };

/** A deflater and an inflater as record-codec.ts makes them, counting the calls that fell back. */
function pair(outputBytes = 4096) {
  const fellBack = { deflate: 0, inflate: 0 };
  const deflater = new ReusedZlib({
    open: () => zlib.createDeflateRaw(DEFLATE),
    fallback: (input) => {
      fellBack.deflate += 1;
      return zlib.deflateRawSync(input, DEFLATE);
    },
    check: (run) => run(Buffer.from('{}')) !== undefined,
    outputBytes,
  });
  const inflater = new ReusedZlib({
    open: () => zlib.createInflateRaw(INFLATE),
    fallback: (input) => {
      fellBack.inflate += 1;
      return zlib.inflateRawSync(input, INFLATE);
    },
    check: (run) => run(zlib.deflateRawSync(Buffer.from('{}'), DEFLATE))?.toString() === '{}',
    outputBytes,
  });
  return { deflater, inflater, fellBack };
}

/** JSON-like input of `n` bytes, part random (so some of it does not compress). */
function input(n: number): Buffer {
  const text = `{"subject":"${randomBytes(n).toString('base64url')}","context":{"jurisdiction":"DE"}}`;
  return Buffer.from(text.slice(0, Math.max(2, n)));
}

describe('a reused zlib stream', () => {
  it('deflates and inflates as the one-shot functions do, call after call, on its own stream', () => {
    const { deflater, inflater, fellBack } = pair();
    for (let n = 0; n < 300; n++) {
      const bytes = input(n * 7);
      const deflated = deflater.run(bytes);
      expect(zlib.inflateRawSync(deflated, INFLATE).equals(bytes)).toBe(true);
      expect(inflater.run(zlib.deflateRawSync(bytes, DEFLATE)).equals(bytes)).toBe(true);
      expect(inflater.run(deflated).equals(bytes)).toBe(true);
    }
    expect(fellBack).toEqual({ deflate: 0, inflate: 0 });
  });

  it('leaves room before the output, in a buffer of its own that a thread can transfer', () => {
    const { deflater } = pair();
    const bytes = input(100);
    const out = deflater.run(bytes, 1);
    expect(out.buffer.byteLength).toBe(out.length);
    expect(zlib.inflateRawSync(out.subarray(1), INFLATE).equals(bytes)).toBe(true);
    const { port1 } = new MessageChannel();
    expect(() => port1.postMessage(out, [out.buffer as ArrayBuffer])).not.toThrow();
    port1.close();
  });

  it('falls back to the one-shot function for an output larger than its buffer', () => {
    const { deflater, inflater, fellBack } = pair(256);
    const big = Buffer.concat([Buffer.from('{'), randomBytes(2000)]);
    const deflated = deflater.run(big);
    expect(fellBack.deflate).toBe(1);
    expect(inflater.run(deflated).equals(big)).toBe(true);
    expect(fellBack.inflate).toBe(1);
  });

  it('throws the one-shot function’s error for damaged input, then goes on with a new stream', () => {
    const { inflater, fellBack } = pair();
    const bytes = input(500);
    const good = zlib.deflateRawSync(bytes, DEFLATE);
    expect(() => inflater.run(good.subarray(0, good.length - 20))).toThrow(/unexpected end of file/);
    expect(() => inflater.run(Buffer.from([0xff, 0xff, 0xff, 0xff]))).toThrow(/invalid/);
    expect(fellBack.inflate).toBe(2);
    expect(inflater.run(good).equals(bytes)).toBe(true);
    expect(fellBack.inflate).toBe(2);
  });

  it('uses only the one-shot functions when the stream has not the internals it drives, or fails its check', () => {
    let calls = 0;
    const withoutHandle = new ReusedZlib({
      open: () => ({}) as zlib.DeflateRaw,
      fallback: (bytes) => {
        calls += 1;
        return zlib.deflateRawSync(bytes, DEFLATE);
      },
      check: (run) => run(Buffer.from('{}')) !== undefined,
      outputBytes: 4096,
    });
    const failingCheck = new ReusedZlib({
      open: () => zlib.createDeflateRaw(DEFLATE),
      fallback: (bytes) => {
        calls += 1;
        return zlib.deflateRawSync(bytes, DEFLATE);
      },
      check: () => false,
      outputBytes: 4096,
    });
    for (const deflater of [withoutHandle, failingCheck]) {
      const bytes = input(300);
      expect(zlib.inflateRawSync(deflater.run(bytes), INFLATE).equals(bytes)).toBe(true);
    }
    expect(calls).toBe(2);
  });
});
