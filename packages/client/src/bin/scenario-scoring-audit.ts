#!/usr/bin/env node
/// <reference types="node" />
import { readFile, rename, writeFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { auditLog } from '../log-auditor.js';
import { verifyProofFile } from '../log-proof-file.js';

const USAGE = `Usage: scenario-scoring-audit --url <base URL> --key <verifier key> --origin <origin> --state <file> [--policy <file>] [--cid <cid>]...
       scenario-scoring-audit --proof-file <file> --policy <file> --origin <origin> [--cid <cid>]

Audits your tenant's verifiable log: verifies the latest signed checkpoint with the pinned verifier key
and the pinned origin line (<LOG_ORIGIN>/<tenant>: one key signs every tenant's log, so the origin is what
tells yours from another tenant's),
proves it consistent with the checkpoint accepted last time (kept in --state), proves each --cid's record
in it, then saves it as accepted. With --policy (a C2SP tlog-policy: the log's key, the witnesses' keys, the
quorum) it also checks the root log: the latest root checkpoint is cosigned by a quorum, holds your
checkpoint (its inclusion proof), and is consistent with the root checkpoint accepted last time (kept in
--state too). The API key is read from SCENARIO_SCORING_API_KEY. Exits 0 when every check held, 1 with one
line per failure otherwise, 2 on bad usage.

With --proof-file it verifies an offline proof file (GET /v1/logs/{cid}/proof-file) with nothing but the
C2SP tlog-policy --policy (the log's key, the witnesses' keys, the quorum): the record is in your signed
checkpoint, which is in a root checkpoint cosigned by a quorum of the witnesses. No network, no API key.`;

async function main(): Promise<number> {
  let values: ReturnType<typeof parse>['values'];
  try {
    values = parse().values;
  } catch (error) {
    console.error(`${(error as Error).message}\n\n${USAGE}`);
    return 2;
  }
  const apiKey = process.env.SCENARIO_SCORING_API_KEY;
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  if (values['proof-file'] !== undefined) {
    if (!values['proof-file'] || !values.policy || !values.origin || (values.cid?.length ?? 0) > 1) {
      console.error(`--proof-file, --policy and --origin go together, with at most one --cid.\n\n${USAGE}`);
      return 2;
    }
    const [proof, policy] = await Promise.all([
      readFile(values['proof-file'], 'utf8'),
      readFile(values.policy, 'utf8'),
    ]);
    try {
      const verified = await verifyProofFile(proof, policy, {
        ...(values.cid?.[0] !== undefined && { cid: values.cid[0] }),
        origin: values.origin,
      });
      console.log(
        `OK ${verified.cid} leaf ${verified.leafIndex} of ${verified.checkpoint.origin} tree size ${verified.checkpoint.treeSize}, in root tree size ${verified.rootCheckpoint.treeSize} cosigned by ${verified.witnesses.join(', ') || 'no witness (quorum none)'}`,
      );
      return 0;
    } catch (error) {
      console.error(`FAIL ${(error as Error).message}`);
      return 1;
    }
  }
  if (!values.url || !values.key || !values.origin || !values.state || !apiKey) {
    console.error(`--url, --key, --origin, --state and SCENARIO_SCORING_API_KEY are required.\n\n${USAGE}`);
    return 2;
  }
  const state = await readState(values.state);
  const policy = values.policy === undefined ? undefined : await readFile(values.policy, 'utf8');
  const result = await auditLog({
    baseUrl: values.url,
    apiKey,
    verifierKey: values.key,
    origin: values.origin,
    cids: values.cid ?? [],
    ...(state?.note !== undefined && { previousNote: state.note }),
    ...(policy !== undefined && { policy }),
    ...(policy !== undefined && state?.rootNote !== undefined && { previousRootNote: state.rootNote }),
  });
  if (result.failures.length > 0 || !result.checkpoint) {
    for (const failure of result.failures) console.error(`FAIL ${failure}`);
    return 1;
  }
  const { checkpoint, previous, root } = result;
  // Written to a temp file and renamed, so a crash never leaves a half-written state. A root checkpoint
  // accepted earlier is kept when this audit did not check the root log.
  const rootNote = root?.checkpoint.note ?? state?.rootNote;
  await writeFile(
    `${values.state}.tmp`,
    `${JSON.stringify({ note: checkpoint.note, ...(rootNote !== undefined && { rootNote }) })}\n`,
  );
  await rename(`${values.state}.tmp`, values.state);
  const grew = previous ? ` (was ${previous.treeSize}, consistent)` : ' (first checkpoint, pinned)';
  const cids = values.cid?.length ? `, ${values.cid.length} record(s) included` : '';
  const inRoot = root
    ? `, in root tree size ${root.checkpoint.treeSize} cosigned by ${root.witnesses.join(', ') || 'no witness (quorum none)'}`
    : '';
  console.log(`OK ${checkpoint.origin} tree size ${checkpoint.treeSize}${grew}${cids}${inRoot}`);
  return 0;
}

function parse() {
  return parseArgs({
    options: {
      url: { type: 'string' },
      key: { type: 'string' },
      state: { type: 'string' },
      origin: { type: 'string' },
      cid: { type: 'string', multiple: true },
      'proof-file': { type: 'string' },
      policy: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
}

async function readState(file: string): Promise<{ note: string; rootNote?: string } | undefined> {
  try {
    return JSON.parse(await readFile(file, 'utf8')) as { note: string; rootNote?: string };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new Error(`cannot read the state file ${file}: ${(error as Error).message}`);
  }
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    console.error(`FAIL ${(error as Error).message}`);
    process.exitCode = 1;
  },
);
