import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import { describe, expect, it } from 'vitest';
import { buildLogRecord, canonicalBytes, cidOfBytes } from './log-record.js';
import type { ScoreResult } from './score-types.js';

const utf8 = (s: string) => new TextEncoder().encode(s);
const text = (b: Uint8Array) => new TextDecoder().decode(b);

/** RFC 4648 base32, lower case, no padding: written out here so the CID check does not trust multiformats. */
function base32(bytes: Uint8Array): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz234567';
  let bits = 0;
  let value = 0;
  let out = '';
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += alphabet[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += alphabet[(value << (5 - bits)) & 31];
  return out;
}

/** CIDv1 by hand: version 1, codec raw 0x55, multihash sha2-256 (0x12) of length 32 (0x20), multibase 'b'. */
function cidByHand(bytes: Uint8Array): string {
  const digest = createHash('sha256').update(bytes).digest();
  return `b${base32(Uint8Array.from([0x01, 0x55, 0x12, 0x20, ...digest]))}`;
}

const RESULT: ScoreResult = {
  scenarios: [
    { name: 'p10', score: 338.2, explain: ['factor:payment_history⇊'] },
    { name: 'p50', score: 500, explain: [] },
    { name: 'p90', score: 661.8, explain: ['factor:utilization⇈'] },
  ],
  levers: [{ name: 'utilization', direction: '-', delta: 16.7, step: 0.05 }],
};

describe('cidOfBytes', () => {
  it('when given "hello world", then it is the CID IPFS gives (ipfs add --cid-version 1 --raw-leaves)', () => {
    expect(cidOfBytes(utf8('hello world'))).toBe(
      'bafkreifzjut3te2nhyekklss27nh3k72ysco7y32koao5eei66wof36n5e',
    );
  });

  it('when given no bytes, then it is the well-known CID of the empty file', () => {
    expect(cidOfBytes(new Uint8Array())).toBe('bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku');
  });

  it('when given any bytes, then it equals the CID assembled by hand', () => {
    for (const s of ['', 'hello world', '{"a":1}', 'Zoë ⇈ 😀'])
      expect(cidOfBytes(utf8(s))).toBe(cidByHand(utf8(s)));
    expect(cidByHand(utf8('hello world'))).toBe(
      'bafkreifzjut3te2nhyekklss27nh3k72ysco7y32koao5eei66wof36n5e',
    );
  });
});

describe('canonicalBytes', () => {
  it('when keys are unordered, then they are sorted by UTF-16 code unit, with no whitespace (RFC 8785 §3.2.3)', () => {
    const value = {
      '\u20ac': 'Euro Sign',
      '\r': 'Carriage Return',
      '\ufb33': 'Hebrew Letter Dalet With Dagesh',
      '1': 'One',
      '\ud83d\ude00': 'Emoji: Grinning Face',
      '\u0080': 'Control',
      '\u00f6': 'Latin Small Letter O With Diaeresis',
    };
    // 😀 (U+1F600, D83D DE00) sorts before U+FB33 in UTF-16 order, unlike code point order.
    expect(text(canonicalBytes(value))).toBe(
      '{"\\r":"Carriage Return","1":"One","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis",' +
        '"\u20ac":"Euro Sign","\ud83d\ude00":"Emoji: Grinning Face","\ufb33":"Hebrew Letter Dalet With Dagesh"}',
    );
  });

  it('when strings hold non-ASCII characters, then they are raw UTF-8, not \\u escapes', () => {
    expect([...canonicalBytes('⇈')]).toEqual([0x22, 0xe2, 0x87, 0x88, 0x22]);
    expect([...canonicalBytes('é')]).toEqual([0x22, 0xc3, 0xa9, 0x22]);
    expect(text(canonicalBytes('\u0001'))).toBe('"\\u0001"');
  });

  it('when numbers are serialized, then they use the ECMAScript shortest form', () => {
    expect(text(canonicalBytes([500.0, 338.2, 0.1 + 0.2, 1e21, -0, 0.05]))).toBe(
      '[500,338.2,0.30000000000000004,1e+21,0,0.05]',
    );
  });

  it('when plain data takes the fast path, then its bytes are exactly the canonicalize library’s', () => {
    const values: unknown[] = [
      { b: [1, { d: 'x', c: null }], a: true, é: -0, '\u2028': 'line separator', z: '\ud83d\ude00 pair' },
      { '10': 'ten', '9': 'nine', nested: { '01': 1, '1a': 2 } },
      [0.1 + 0.2, 1e21, 5e-7, 123456789012345680000, -1.5, 'Zoë ☃ "quoted" \\ \u0001'],
      { empty: {}, list: [], deep: [[[{ y: 1, x: 2 }]]] },
      JSON.parse('{"__proto__": {"polluted": true}, "b": 2}'),
      buildLogRecord({
        policy_version: '2026-11-01',
        subject: 's',
        context: { jurisdiction: 'DE', utilization: 0.35 },
        result: RESULT,
      }),
    ];
    for (const value of values) expect(text(canonicalBytes(value))).toBe(canonicalize(value));
  });

  it('when a value has no JSON form, then it throws', () => {
    expect(() => canonicalBytes(Number.NaN)).toThrow();
    expect(() => canonicalBytes(undefined)).toThrow(TypeError);
    expect(() => canonicalBytes({ subject: '\ud800 lone surrogate' })).toThrow(/surrogate/);
  });
});

describe('buildLogRecord', () => {
  it('when a scoring is logged, then the record and its bytes are exactly the canonical form', () => {
    const record = buildLogRecord({
      policy_version: '2026-11-01',
      subject: 'Zoë ☃ \u2028 "quoted"',
      context: { utilization: 0.5, jurisdiction: 'FR', on_time_ratio: 1 },
      result: RESULT,
    });
    expect(Object.keys(record)).toEqual([
      'schema',
      'model_version',
      'policy_version',
      'subject',
      'context',
      'result',
    ]);
    const expected =
      '{"context":{"jurisdiction":"FR","on_time_ratio":1,"utilization":0.5},"model_version":"scorecard-1",' +
      '"policy_version":"2026-11-01","result":{"levers":[{"delta":16.7,"direction":"-","name":"utilization","step":0.05}],' +
      '"scenarios":[{"explain":["factor:payment_history⇊"],"name":"p10","score":338.2},' +
      '{"explain":[],"name":"p50","score":500},{"explain":["factor:utilization⇈"],"name":"p90","score":661.8}]},' +
      '"schema":"score-log/1","subject":"Zoë ☃ \u2028 \\"quoted\\""}';
    const bytes = canonicalBytes(record);
    expect(text(bytes)).toBe(expected);
    expect(bytes).toEqual(utf8(expected));
    expect(cidOfBytes(bytes)).toBe(cidByHand(utf8(expected)));
    expect(cidOfBytes(bytes)).toMatch(/^bafkrei[a-z2-7]{52}$/);
  });

  it('when the policy version or subject changes, then the CID changes; when nothing does, it is stable', () => {
    const input = {
      policy_version: '2026-11-01',
      subject: 's-1',
      context: { jurisdiction: 'FR' },
      result: RESULT,
    };
    const cid = cidOfBytes(canonicalBytes(buildLogRecord(input)));
    expect(cidOfBytes(canonicalBytes(buildLogRecord({ ...input })))).toBe(cid);
    expect(cidOfBytes(canonicalBytes(buildLogRecord({ ...input, policy_version: '2026-12-01' })))).not.toBe(
      cid,
    );
    expect(cidOfBytes(canonicalBytes(buildLogRecord({ ...input, subject: 's-2' })))).not.toBe(cid);
  });
});
