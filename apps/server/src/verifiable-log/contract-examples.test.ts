import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  canonicalBytes,
  cidOfBytes,
  type LogRecordIdentity,
  type LogRecordStamp,
  scoreAndLog,
} from '@scenario-scoring/engine';
import {
  formatCheckpoint,
  NoteSigner,
  proveRecord,
  proveTree,
  recordHash,
  signNote,
  TileTree,
  tilesForAppend,
  treeHash,
} from '@scenario-scoring/tlog';
import { describe, expect, it } from 'vitest';
import { loadContract } from '../common/contract.js';

/**
 * The contract's log examples are real: this suite builds the log of the two scoring examples (FullFile,
 * then ThinFile) under the documented example key, and the example files must be exactly what it gives.
 * `UPDATE_LOG_EXAMPLES=1 npx vitest run src/verifiable-log/contract-examples.test.ts` rewrites them.
 */
const EXAMPLES_DIR = fileURLToPath(new URL('../../../../openapi/components/examples/', import.meta.url));
/** The example key: never a deployment's (its seed is public). */
const EXAMPLE_SEED = createHash('sha256').update('scenario-scoring contract example log key').digest();
const ORIGIN = 'localhost/scenario-scoring/default';
/** The CID of the FullFile scoring's score-log/1 record, as it was logged before score-log/2. */
const LEGACY_CID = 'bafkreiayofhlaqkaph3jjsfs6wjoujxsu665s7ehdjfl443rszjeaj77vu';

const SCORE_PATH = fileURLToPath(new URL('../../../../openapi/paths/scoring_score.yaml', import.meta.url));

type ScoreExample = { value: { subject: string; context: Parameters<typeof scoreAndLog>[1] } };
type ScoreAnswer = { value: { id: string; log_cid: string } };
type Content<T> = { content: { 'application/json': { examples: Record<string, T> } } };

/**
 * The stamp of an example record: the response example's request id, a fixed time, and a salt that is
 * public on purpose (the SHA-256 of a label: an example's, never a deployment's, whose salts are random).
 */
function exampleStamp(name: string, identity: LogRecordIdentity, second: number): LogRecordStamp {
  return {
    identity,
    scored_at: new Date(Date.UTC(2026, 10, 26, 9, 30, second)).toISOString(),
    salt: createHash('sha256').update(`scenario-scoring contract example salt ${name}`).digest('base64url'),
  };
}

async function exampleLog() {
  const operation = loadContract().document.paths['/v1/scoring/score'] as {
    post: {
      requestBody: Content<ScoreExample>;
      responses: { '200': Content<ScoreAnswer> };
    };
  };
  const examples = operation.post.requestBody.content['application/json'].examples;
  const answers = operation.post.responses['200'].content['application/json'].examples;
  const names = ['FullFile', 'ThinFile'];
  const records = names.map((name, second) => {
    const { subject, context } = (examples[name] as ScoreExample).value;
    const identity = { kind: 'score', request_id: (answers[name] as ScoreAnswer).value.id } as const;
    return scoreAndLog(subject, context, exampleStamp(name, identity, second));
  });
  // A run item's record: the FullFile request as item 0 of the contract's example run.
  const fullFile = (examples.FullFile as ScoreExample).value;
  const runItem = scoreAndLog(
    fullFile.subject,
    fullFile.context,
    exampleStamp('RunItem', { kind: 'run_item', run_id: 'run_01JZ4VB2C4D6E8F0G2H4J6K8M0', item: 0 }, 2),
  );
  const tiles = new Map<string, Uint8Array>();
  const tree = new TileTree(async (level, index) => tiles.get(`${level}/${index}`));
  const signer = new NoteSigner('localhost/scenario-scoring', EXAMPLE_SEED);
  const checkpoints = [];
  for (const [size, record] of records.entries()) {
    for (const tile of await tilesForAppend(tree, size, [await recordHash(record.logBytes)])) {
      tiles.set(`${tile.level}/${tile.index}`, tile.hashes);
    }
    const root = await treeHash(tree, size + 1);
    checkpoints.push({
      origin: ORIGIN,
      tree_size: size + 1,
      root_hash: Buffer.from(root).toString('base64'),
      note: await signNote(formatCheckpoint({ origin: ORIGIN, treeSize: size + 1, rootHash: root }), signer),
    });
  }
  const base64 = (hashes: Uint8Array[]) => hashes.map((hash) => Buffer.from(hash).toString('base64'));
  const recordExample = (summary: string, bytes: Uint8Array) =>
    example(summary, JSON.parse(new TextDecoder().decode(bytes)));
  return {
    signer,
    records,
    names,
    files: {
      'LogRecordFullFile.yaml': recordExample(
        'The record of the FullFile scoring (score-log/2; an example salt, public on purpose)',
        records[0]?.logBytes as Uint8Array,
      ),
      'LogRecordThinFile.yaml': recordExample(
        'The record of the ThinFile scoring (score-log/2; an example salt, public on purpose)',
        records[1]?.logBytes as Uint8Array,
      ),
      'LogRecordRunItem.yaml': recordExample(
        'The record of item 0 of a run (score-log/2, kind run_item; an example salt, public on purpose)',
        runItem.logBytes,
      ),
      'LogVerifierKeyExample.yaml': example(
        "The verifier key of the contract examples (a public test key, never a deployment's)",
        {
          verifier_key: await signer.verifierKey(),
          key_name: signer.name,
        },
      ),
      'LogCheckpointLatest.yaml': example(
        'The checkpoint of a log of the two scoring examples',
        checkpoints[1],
      ),
      'InclusionProofFullFile.yaml': example('The FullFile scoring, leaf 0 of a tree of 2', {
        log_cid: records[0]?.logCid,
        leaf_index: 0,
        tree_size: 2,
        inclusion_path: base64(await proveRecord(tree, 2, 0)),
        checkpoint: checkpoints[1],
      }),
      'LogTileLeaves.yaml': example('The leaf hashes of the example tree: tile 0/0, 2 wide', {
        level: 0,
        index: 0,
        width: 2,
        hashes: base64(await Promise.all(records.map((record) => recordHash(record.logBytes)))),
      }),
      'ConsistencyProofOneToTwo.yaml': example('The log grew from 1 to 2 leaves', {
        from_size: 1,
        to_size: 2,
        consistency_path: base64(await proveTree(tree, 2, 1)),
        from_checkpoint: checkpoints[0],
        to_checkpoint: checkpoints[1],
      }),
    },
  };
}

/**
 * The scoring examples' answers with the `log_cid` of the records built here: the CIDs are rewritten in
 * the scoring path's file, where they are written inline.
 */
function withExampleCids(text: string, names: string[], cids: string[]): string {
  let out = text;
  for (const [i, name] of names.entries()) {
    const answer = new RegExp(`(\n {12}${name}:\n[\\s\\S]*?\n {16}log_cid: )(bafkrei[a-z2-7]{52})`);
    if (!answer.test(out)) throw new Error(`no ${name} answer with a log_cid in ${SCORE_PATH}`);
    out = out.replace(answer, `$1${cids[i]}`);
  }
  return out;
}

/** An Example Object as YAML; strings double-quoted as JSON, which keeps the note's newlines and em dash exact. */
function example(summary: string, value: unknown): string {
  return `# Generated by apps/server/src/verifiable-log/contract-examples.test.ts: do not edit.\nsummary: ${JSON.stringify(summary)}\nvalue:\n${yamlLines(value, '  ').join('\n')}\n`;
}

function yamlLines(value: unknown, indent: string): string[] {
  if (Array.isArray(value)) {
    return value.flatMap((item) => {
      if (item === null || typeof item !== 'object' || Object.keys(item).length === 0) {
        return [`${indent}- ${JSON.stringify(item)}`];
      }
      // An object in block style: its first key on the dash's line, the rest under it.
      const [first = '', ...rest] = yamlLines(item, `${indent}  `);
      return [`${indent}- ${first.slice(indent.length + 2)}`, ...rest];
    });
  }
  return Object.entries(value as Record<string, unknown>).flatMap(([key, item]) =>
    item !== null && typeof item === 'object' && Object.keys(item).length > 0
      ? [`${indent}${key}:`, ...yamlLines(item, `${indent}  `)]
      : [`${indent}${key}: ${JSON.stringify(item)}`],
  );
}

describe("the contract's log examples", () => {
  it('are the records, proofs and signatures of a real log of the scoring examples', async () => {
    const { files, records, names } = await exampleLog();
    const update = process.env.UPDATE_LOG_EXAMPLES === '1';
    for (const [name, text] of Object.entries(files)) {
      const path = join(EXAMPLES_DIR, name);
      if (update) writeFileSync(path, text);
      expect(readFileSync(path, 'utf8'), name).toBe(text);
    }
    // The scoring answers name the example records by their CIDs.
    const scorePath = readFileSync(SCORE_PATH, 'utf8');
    const answered = withExampleCids(
      scorePath,
      names,
      records.map((record) => record.logCid),
    );
    if (update) writeFileSync(SCORE_PATH, answered);
    expect(readFileSync(SCORE_PATH, 'utf8')).toBe(answered);
  });

  it('serve records whose bytes are the canonical form and whose CIDs the answers give', async () => {
    const { records } = await exampleLog();
    const operation = loadContract().document.paths['/v1/logs/{cid}'] as {
      get: { responses: { '200': Content<{ value: unknown }> } };
    };
    const served = operation.get.responses['200'].content['application/json'].examples;
    const examples = (loadContract().document.components?.examples ?? {}) as Record<
      string,
      { value: unknown }
    >;
    /** An example of the bundle, its `$ref` (`#/components/examples/…`) followed. */
    const value = (name: string) => {
      const found = served[name] as { value: unknown; $ref?: string };
      return found.$ref === undefined ? found.value : examples[found.$ref.split('/').at(-1) as string]?.value;
    };
    for (const [i, name] of ['FullFile', 'ThinFile'].entries()) {
      const bytes = canonicalBytes(value(name));
      expect(Buffer.from(bytes)).toEqual(Buffer.from(records[i]?.logBytes as Uint8Array));
    }
    // The score-log/1 example is a record logged before score-log/2: its CID is its bytes' as ever.
    const legacy = value('ScoreLog1') as { schema: string };
    expect(legacy.schema).toBe('score-log/1');
    expect(cidOfBytes(canonicalBytes(legacy))).toBe(LEGACY_CID);
  });
});
