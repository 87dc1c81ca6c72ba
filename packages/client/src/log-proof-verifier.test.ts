import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  LogProofError,
  parseVerifierKey,
  verifyCheckpoint,
  verifyConsistency,
  verifyInclusion,
} from './log-proof-verifier.js';
import { verifyLogRecord } from './log-record-verifier.js';

/** The contract's log examples (bundled): a real log of the two scoring examples under a public example key. */
const CONTRACT = JSON.parse(
  readFileSync(new URL('../../../openapi/dist/openapi.json', import.meta.url), 'utf8'),
);
function exampleValue<T>(name: string): T {
  return CONTRACT.components.examples[name].value as T;
}
type Checkpoint = { note: string; tree_size: number; origin: string };
const KEY = exampleValue<{ verifier_key: string }>('LogVerifierKeyExample').verifier_key;
const LATEST = exampleValue<Checkpoint>('LogCheckpointLatest');
/** The examples' log: tenant `default`'s. */
const ORIGIN = { origin: 'localhost/scenario-scoring/default' };
const INCLUSION = exampleValue<{
  log_cid: string;
  leaf_index: number;
  tree_size: number;
  inclusion_path: string[];
  checkpoint: Checkpoint;
}>('InclusionProofFullFile');
const CONSISTENCY = exampleValue<{
  consistency_path: string[];
  from_checkpoint: Checkpoint;
  to_checkpoint: Checkpoint;
}>('ConsistencyProofOneToTwo');

/** The FullFile record's exact bytes: RFC 8785 of the contract's log example (sorted keys; plain numbers). */
function fullFileRecord(): Uint8Array {
  const contract = JSON.parse(
    readFileSync(new URL('../../../openapi/dist/openapi.json', import.meta.url), 'utf8'),
  );
  const example =
    contract.paths['/v1/logs/{cid}'].get.responses['200'].content['application/json'].examples.FullFile;
  // The bundle keeps a shared example as a reference to components/examples.
  const value = '$ref' in example ? exampleValue(example.$ref.split('/').pop()) : example.value;
  const canonical = (v: unknown): string =>
    Array.isArray(v)
      ? `[${v.map(canonical).join(',')}]`
      : v !== null && typeof v === 'object'
        ? `{${Object.keys(v)
            .sort()
            .map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`)
            .join(',')}}`
        : JSON.stringify(v);
  return new TextEncoder().encode(canonical(value));
}

describe('verifyCheckpoint', () => {
  it('returns the body of a checkpoint signed by the pinned key', async () => {
    const checkpoint = await verifyCheckpoint(LATEST.note, KEY, ORIGIN);
    expect(checkpoint).toMatchObject({ origin: LATEST.origin, treeSize: 2 });
  });

  it('refuses another key, an altered body, another origin and a key whose ID does not match', async () => {
    const [name, , key] = KEY.split('+');
    await expect(parseVerifierKey(`${name}+00000000+${key}`)).rejects.toThrow(/does not match its key/);
    const other = KEY.replace(/^[^+]+/, 'other-name');
    await expect(verifyCheckpoint(LATEST.note, other, ORIGIN)).rejects.toThrow(LogProofError);
    await expect(verifyCheckpoint(LATEST.note.replace('\n2\n', '\n3\n'), KEY, ORIGIN)).rejects.toThrow(
      /no valid signature/,
    );
    await expect(verifyCheckpoint(LATEST.note, KEY, { origin: 'elsewhere/x' })).rejects.toThrow(
      /not elsewhere\/x/,
    );
    await expect(verifyCheckpoint('no note', KEY, ORIGIN)).rejects.toThrow(/not a signed note/);
  });

  it("refuses tenant default's genuine checkpoint presented as another tenant's, and a check without an origin", async () => {
    await expect(
      verifyCheckpoint(LATEST.note, KEY, { origin: 'localhost/scenario-scoring/globex' }),
    ).rejects.toThrow(
      'the checkpoint is for log localhost/scenario-scoring/default, not localhost/scenario-scoring/globex',
    );
    // From JavaScript, where the type does not stop it: no origin is no check, so it is refused.
    const unchecked = verifyCheckpoint as (note: string, key: string) => Promise<unknown>;
    await expect(unchecked(LATEST.note, KEY)).rejects.toThrow(/origin line .* is required/);
  });
});

describe('verifyInclusion', () => {
  it("proves the FullFile record's bytes are leaf 0 of the example tree", async () => {
    const record = fullFileRecord();
    expect(await verifyLogRecord(record, INCLUSION.log_cid)).toBe(true);
    const checkpoint = await verifyCheckpoint(INCLUSION.checkpoint.note, KEY, ORIGIN);
    await expect(verifyInclusion(record, INCLUSION, checkpoint)).resolves.toBeUndefined();
  });

  it('fails, naming the leaf, for one altered byte, another index or a wrong path', async () => {
    const record = fullFileRecord();
    const checkpoint = await verifyCheckpoint(INCLUSION.checkpoint.note, KEY, ORIGIN);
    const altered = record.slice();
    altered[10] = (altered[10] as number) ^ 1;
    await expect(verifyInclusion(altered, INCLUSION, checkpoint)).rejects.toThrow(/^leaf 0: .*root mismatch/);
    await expect(verifyInclusion(record, { ...INCLUSION, leaf_index: 1 }, checkpoint)).rejects.toThrow(
      /leaf 1/,
    );
    await expect(verifyInclusion(record, { ...INCLUSION, inclusion_path: [] }, checkpoint)).rejects.toThrow(
      LogProofError,
    );
    await expect(verifyInclusion(record, { ...INCLUSION, leaf_index: 2 }, checkpoint)).rejects.toThrow(
      /not in a tree of 2/,
    );
  });
});

describe('verifyConsistency', () => {
  it('proves the tree of 2 extends the tree of 1, and refuses the swap or another root', async () => {
    const older = await verifyCheckpoint(CONSISTENCY.from_checkpoint.note, KEY, ORIGIN);
    const newer = await verifyCheckpoint(CONSISTENCY.to_checkpoint.note, KEY, ORIGIN);
    await expect(verifyConsistency(older, newer, CONSISTENCY)).resolves.toBeUndefined();
    await expect(verifyConsistency(newer, older, CONSISTENCY)).rejects.toThrow(/newer tree is smaller/);
    const forged = { ...older, rootHash: newer.rootHash };
    await expect(verifyConsistency(forged, newer, CONSISTENCY)).rejects.toThrow(/root mismatch/);
    await expect(verifyConsistency(newer, newer, [])).resolves.toBeUndefined();
  });
});
