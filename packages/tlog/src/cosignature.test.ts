import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CosignatureSigner, cosignatureTimestamp, parseCosignatureVerifierKey } from './cosignature.js';
import { fromBase64, toBase64 } from './encoding.js';
import { formatSignatureLine, NoteSigner, openNote, parseVerifierKey, signNote } from './note.js';
import { loadPolicy, PolicyError, parsePolicy, quorumSatisfied, verifyCheckpoint } from './policy.js';
import { formatTlogProof, parseTlogProof, TlogProofFormatError } from './tlog-proof.js';

/** Cosignatures by transparency-dev/formats' cosignature/v1 signer (scripts/vectors.go). */
const GO = JSON.parse(readFileSync(new URL('../testdata/vectors.json', import.meta.url), 'utf8')) as {
  notes: { name: string; seed: string; verifier_key: string; text: string; note: string }[];
  cosignatures: {
    name: string;
    seed: string;
    verifier_key: string;
    timestamp: number;
    note: string;
    cosigned: string;
  }[];
};
const bytes = (text: string) => fromBase64(text) as Uint8Array;
const [LOG] = GO.notes as [(typeof GO.notes)[number]];
const [W1, W2] = GO.cosignatures as [(typeof GO.cosignatures)[number], (typeof GO.cosignatures)[number]];

describe('cosignature/v1, as transparency-dev/formats signs it', () => {
  it("gives Go's verifier key and cosignature line byte for byte, and opens Go's cosigned notes", async () => {
    for (const vector of GO.cosignatures) {
      const signer = new CosignatureSigner(vector.name, bytes(vector.seed), () => vector.timestamp);
      expect(await signer.verifierKey()).toBe(vector.verifier_key);
      const text = LOG.text;
      const line = formatSignatureLine(await signer.sign(text));
      expect(vector.cosigned).toBe(`${vector.note}${line}`);
      const opened = await openNote(vector.cosigned, [
        await parseCosignatureVerifierKey(vector.verifier_key),
      ]);
      expect(opened.text).toBe(text);
      expect(opened.signatures.map(cosignatureTimestamp)).toEqual([vector.timestamp]);
    }
    const all = [
      await parseVerifierKey(LOG.verifier_key),
      await parseCosignatureVerifierKey(W1.verifier_key),
      await parseCosignatureVerifierKey(W2.verifier_key),
    ];
    expect((await openNote(W2.cosigned, all)).signatures.map((s) => s.name)).toEqual([
      LOG.name,
      W1.name,
      W2.name,
    ]);
  });

  it('signs a note with the log key and cosigners together, and refuses altered timestamps or texts', async () => {
    const w1 = new CosignatureSigner(W1.name, bytes(W1.seed), () => W1.timestamp);
    const note = await signNote(LOG.text, new NoteSigner(LOG.name, bytes(LOG.seed)), w1);
    expect(note).toBe(W1.cosigned);
    const verifier = await parseCosignatureVerifierKey(W1.verifier_key);
    const line = W1.cosigned.split('\n').at(-2) as string;
    const raw = bytes(line.split(' ')[2] as string);
    raw[4 + 7] = (raw[4 + 7] as number) ^ 1; // the timestamp's last byte
    const forged = W1.cosigned.replace(line, `\u2014 ${W1.name} ${btoa(String.fromCharCode(...raw))}`);
    await expect(openNote(forged, [verifier])).rejects.toMatchObject({ reason: 'unverified' });
    await expect(openNote(W1.cosigned.replace('\n300\n', '\n301\n'), [verifier])).rejects.toMatchObject({
      reason: 'unverified',
    });
    // The same public key as a signed-note key (type 0x01) has another key ID: the line is not its.
    const asNoteKey = await parseVerifierKey(await new NoteSigner(W1.name, bytes(W1.seed)).verifierKey());
    await expect(openNote(W1.cosigned, [asNoteKey])).rejects.toThrow(/no valid signature/);
  });

  it('accepts a type 0x01 key as the same public key with the cosignature key ID, as Go does', async () => {
    const signer = new NoteSigner(W1.name, bytes(W1.seed));
    const asCosigner = await parseCosignatureVerifierKey(await signer.verifierKey());
    const opened = await openNote(W1.cosigned, [asCosigner]);
    expect(opened.signatures).toHaveLength(1);
  });
});

describe('tlog-policy', () => {
  const policyText = `# the witnesses of localhost/scenario-scoring
log ${LOG.verifier_key} https://log.example
witness w1 ${W1.verifier_key} http://127.0.0.1:1
\twitness w2 ${W2.verifier_key}
group both all w1 w2
group one any w1 w2
quorum one
`;

  it('parses logs, witnesses with URLs, groups and the quorum', () => {
    const policy = parsePolicy(policyText);
    expect(policy.logs).toEqual([{ verifierKey: LOG.verifier_key, url: 'https://log.example' }]);
    expect(policy.witnesses.map((w) => [w.name, w.url])).toEqual([
      ['w1', 'http://127.0.0.1:1'],
      ['w2', undefined],
    ]);
    expect(policy.groups).toEqual([
      { name: 'both', threshold: 2, members: ['w1', 'w2'] },
      { name: 'one', threshold: 1, members: ['w1', 'w2'] },
    ]);
    expect(policy.quorum).toBe('one');
  });

  it('evaluates nested groups with thresholds, and quorum none', () => {
    const policy = parsePolicy(
      `witness a ${W1.verifier_key}\nwitness b ${W2.verifier_key}\nwitness c ${LOG.verifier_key}\n` +
        'group ab 2 a b\ngroup top any ab c\nquorum top\n',
    );
    expect(quorumSatisfied(policy, new Set(['a']))).toBe(false);
    expect(quorumSatisfied(policy, new Set(['a', 'b']))).toBe(true);
    expect(quorumSatisfied(policy, new Set(['c']))).toBe(true);
    expect(quorumSatisfied(parsePolicy('quorum none\n'), new Set())).toBe(true);
    expect(quorumSatisfied(parsePolicy(`witness a ${W1.verifier_key}\nquorum a`), new Set())).toBe(false);
  });

  it('decides a quorum of groups that share members or nest deep in one pass, not by walking every path', () => {
    // Each group names the two before it: a walk of every path is Fibonacci in the number of groups
    // (9 s at 40, hours at 60); a chain of 5,000 groups overflowed the stack of a recursive walk.
    const shared = [`witness a ${W1.verifier_key}`, `witness b ${W2.verifier_key}`, 'group g0 all a b'];
    shared.push('group g1 all a b');
    for (let k = 2; k <= 80; k++) shared.push(`group g${k} all g${k - 1} g${k - 2}`);
    const fibonacci = parsePolicy(`${shared.join('\n')}\nquorum g80\n`);
    expect(quorumSatisfied(fibonacci, new Set(['a', 'b']))).toBe(true);
    expect(quorumSatisfied(fibonacci, new Set(['a']))).toBe(false);
    const chain = [`witness a ${W1.verifier_key}`, 'group g0 any a'];
    for (let k = 1; k <= 5_000; k++) chain.push(`group g${k} any g${k - 1}`);
    const deep = parsePolicy(`${chain.join('\n')}\nquorum g5000\n`);
    expect(quorumSatisfied(deep, new Set(['a']))).toBe(true);
    expect(quorumSatisfied(deep, new Set())).toBe(false);
  });

  it.each([
    ['no quorum', `witness a ${W1.verifier_key}\n`, /no quorum/],
    ['two quorums', 'quorum none\nquorum none\n', /second quorum/],
    ['an undefined member', `group g any x\nquorum g\n`, /not defined/],
    ['use before definition', `quorum a\nwitness a ${W1.verifier_key}\n`, /not defined/],
    [
      'a duplicate key',
      `witness a ${W1.verifier_key}\nwitness b ${W1.verifier_key}\nquorum a\n`,
      /duplicate/,
    ],
    ['a duplicate name', `witness a ${W1.verifier_key}\nwitness a ${W2.verifier_key}\nquorum a\n`, /already/],
    ['a member twice', `witness a ${W1.verifier_key}\ngroup g any a a\nquorum g\n`, /twice/],
    ['a threshold too high', `witness a ${W1.verifier_key}\ngroup g 2 a\nquorum g\n`, /threshold/],
    ['an unknown keyword', 'quorum none\nmirror x\n', /unknown keyword/],
    ['a control character', 'quorum none\r\n', /control/],
    ['a witness named none', `witness none ${W1.verifier_key}\nquorum none\n`, /not "none"/],
  ])('refuses %s', (_what, text, message) => {
    expect(() => parsePolicy(text)).toThrow(PolicyError);
    expect(() => parsePolicy(text)).toThrow(message);
  });

  it('verifies a cosigned checkpoint against the policy: log signature, origin and quorum', async () => {
    const loaded = await loadPolicy(policyText);
    const verified = await verifyCheckpoint(loaded, W2.cosigned, LOG.name);
    expect([...verified.witnessed].sort()).toEqual(['w1', 'w2']);
    expect(verified.treeSize).toBe(300);
    const both = await loadPolicy(policyText.replace('quorum one', 'quorum both'));
    await expect(verifyCheckpoint(both, W1.cosigned)).rejects.toThrow(/\(w1\) do not satisfy the quorum/);
    await expect(verifyCheckpoint(loaded, LOG.note)).rejects.toThrow(/\(none\) do not satisfy/);
    await expect(verifyCheckpoint(loaded, W2.cosigned, 'localhost/other')).rejects.toThrow(/origin/);
    // Only witnesses' lines, without the log's signature.
    const withoutLog = W2.cosigned.replace(/\u2014 localhost\/scenario-scoring .*\n/, '');
    await expect(verifyCheckpoint(loaded, withoutLog)).rejects.toThrow(/not signed by the log key/);
    await expect(loadPolicy('log notakey\nquorum none\n')).rejects.toThrow(PolicyError);
  });
});

describe('tlog-proof', () => {
  it('formats and parses the C2SP form, with and without extra data', () => {
    const path = [new Uint8Array(32).fill(1), new Uint8Array(32).fill(2)];
    const text = formatTlogProof({ extra: bytes('AAEC'), index: 7, path, checkpoint: W2.cosigned });
    expect(text.split('\n').slice(0, 4)).toEqual([
      'c2sp.org/tlog-proof@v1',
      'extra AAEC',
      'index 7',
      toBase64(path[0] as Uint8Array),
    ]);
    expect(parseTlogProof(text)).toEqual({ extra: bytes('AAEC'), index: 7, path, checkpoint: W2.cosigned });
    const bare = formatTlogProof({ index: 0, path: [], checkpoint: LOG.note });
    expect(bare).toBe(`c2sp.org/tlog-proof@v1\nindex 0\n\n${LOG.note}`);
    expect(parseTlogProof(bare)).toEqual({ index: 0, path: [], checkpoint: LOG.note });
  });

  it.each([
    ['another header', 'c2sp.org/tlog-proof@v2\nindex 0\n\nx'],
    ['no index', 'c2sp.org/tlog-proof@v1\n\nx'],
    ['a leading zero', 'c2sp.org/tlog-proof@v1\nindex 01\n\nx'],
    ['a short hash', 'c2sp.org/tlog-proof@v1\nindex 1\nAAEC\n\nx'],
    ['no checkpoint', 'c2sp.org/tlog-proof@v1\nindex 1\n\n'],
    ['no blank line', 'c2sp.org/tlog-proof@v1\nindex 1\n'],
  ])('refuses %s', (_what, text) => {
    expect(() => parseTlogProof(text)).toThrow(TlogProofFormatError);
  });
});
