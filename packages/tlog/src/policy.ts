import { parseCheckpoint } from './checkpoint.js';
import { parseCosignatureVerifierKey } from './cosignature.js';
import { fromBase64, toBase64, toHex } from './encoding.js';
import { NoteError, type NoteVerifier, openNote, parseVerifierKey } from './note.js';

/** A log line of a tlog-policy: its verifier key (whose name is the log's origin) and optional URL. */
export interface PolicyLog {
  verifierKey: string;
  url?: string;
}

/** A witness line of a tlog-policy: its policy name, cosignature verifier key and optional URL. */
export interface PolicyWitness {
  name: string;
  verifierKey: string;
  url?: string;
}

/** A group line of a tlog-policy: at least `threshold` of `members` (witness or group names) must witness. */
export interface PolicyGroup {
  name: string;
  threshold: number;
  members: string[];
}

/** A parsed C2SP tlog-policy: logs, witnesses, groups and the quorum (a name, or `none`). */
export interface Policy {
  logs: PolicyLog[];
  witnesses: PolicyWitness[];
  groups: PolicyGroup[];
  quorum: string;
}

/** Thrown by {@link parsePolicy} for text that is not a valid tlog-policy; the message names the line. */
export class PolicyError extends Error {
  override readonly name = 'PolicyError';
}

/**
 * The C2SP tlog-policy `text` states: `log <vkey> [<url>]`, `witness <name> <vkey> [<url>]`,
 * `group <name> all|any|<k> <name>...` and exactly one `quorum <name>|none` line; blank and `#` comment
 * lines ignored; names defined before use, once each, members listed once per group. Throws a PolicyError
 * naming the line otherwise (keys are checked for shape here, cryptographically by {@link loadPolicy}).
 */
export function parsePolicy(text: string): Policy {
  const policy: Policy = { logs: [], witnesses: [], groups: [], quorum: '' };
  const names = new Set<string>();
  const keys = new Set<string>();
  let quorumLine = 0;
  for (const [i, raw] of text.split('\n').entries()) {
    const at = `policy line ${i + 1}`;
    if ([...raw].some(isControlCharacter)) throw new PolicyError(`${at}: a control character`);
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const [keyword, ...args] = line.split(/[ \t]+/);
    const uniqueKey = (vkey: string) => {
      const key = vkey.split('+').slice(2).join('+');
      const bytes = fromBase64(key);
      if (bytes?.length !== 33) throw new PolicyError(`${at}: not an Ed25519 vkey: ${vkey}`);
      const material = toBase64(bytes.subarray(1));
      if (keys.has(material)) throw new PolicyError(`${at}: a duplicate key`);
      keys.add(material);
    };
    const define = (name: string | undefined) => {
      if (!name || name === 'none') throw new PolicyError(`${at}: a name (not "none") is needed`);
      if (names.has(name)) throw new PolicyError(`${at}: "${name}" is already defined`);
      names.add(name);
      return name;
    };
    switch (keyword) {
      case 'log': {
        const [verifierKey, url, extra] = args;
        if (!verifierKey || extra !== undefined) throw new PolicyError(`${at}: log <vkey> [<url>]`);
        uniqueKey(verifierKey);
        policy.logs.push(url === undefined ? { verifierKey } : { verifierKey, url });
        break;
      }
      case 'witness': {
        const [name, verifierKey, url, extra] = args;
        if (!verifierKey || extra !== undefined) {
          throw new PolicyError(`${at}: witness <name> <vkey> [<url>]`);
        }
        uniqueKey(verifierKey);
        const witness = { name: define(name), verifierKey };
        policy.witnesses.push(url === undefined ? witness : { ...witness, url });
        break;
      }
      case 'group': {
        const [name, k, ...members] = args;
        if (!k || members.length === 0) throw new PolicyError(`${at}: group <name> all|any|<k> <name>...`);
        const threshold =
          k === 'all' ? members.length : k === 'any' ? 1 : /^[1-9][0-9]*$/.test(k) ? Number(k) : 0;
        if (threshold < 1 || threshold > members.length) {
          throw new PolicyError(`${at}: a threshold from 1 to the number of members, or all or any`);
        }
        const seen = new Set<string>();
        for (const member of members) {
          if (!names.has(member)) throw new PolicyError(`${at}: "${member}" is not defined before`);
          if (seen.has(member)) throw new PolicyError(`${at}: "${member}" is listed twice`);
          seen.add(member);
        }
        policy.groups.push({ name: define(name), threshold, members });
        break;
      }
      case 'quorum': {
        const [name, extra] = args;
        if (!name || extra !== undefined) throw new PolicyError(`${at}: quorum <name>`);
        if (quorumLine)
          throw new PolicyError(`${at}: a second quorum line (the first is line ${quorumLine})`);
        if (name !== 'none' && !names.has(name))
          throw new PolicyError(`${at}: "${name}" is not defined before`);
        policy.quorum = name;
        quorumLine = i + 1;
        break;
      }
      default:
        throw new PolicyError(`${at}: unknown keyword "${keyword}"`);
    }
  }
  if (!quorumLine) throw new PolicyError('the policy has no quorum line');
  return policy;
}

/**
 * Whether the witnesses named in `witnessed` (policy names of witnesses whose cosignature verified)
 * satisfy the policy's quorum: `none` always does, a witness when it is in the set, a group when at least
 * its threshold of members do.
 */
export function quorumSatisfied(policy: Policy, witnessed: ReadonlySet<string>): boolean {
  if (policy.quorum === 'none') return true;
  // A group names only witnesses and groups defined before it (parsePolicy checks), so one pass in the
  // order of definition decides each group once from its members' results: linear in the policy's size,
  // however its groups share members or nest (a recursive walk re-decided shared groups: exponential).
  const satisfied = new Map<string, boolean>();
  const decided = (name: string) => satisfied.get(name) ?? witnessed.has(name);
  for (const group of policy.groups) {
    let count = 0;
    for (const member of group.members) if (decided(member)) count++;
    satisfied.set(group.name, count >= group.threshold);
  }
  return decided(policy.quorum);
}

/** A policy with its keys parsed: a verifier per log (by origin) and per witness (by policy name). */
export interface LoadedPolicy {
  policy: Policy;
  logs: Map<string, NoteVerifier>;
  witnesses: Map<string, NoteVerifier>;
}

/**
 * Parses `text` ({@link parsePolicy}) and its keys: log keys as signed-note Ed25519 verifier keys, witness
 * keys as cosignature/v1 verifier keys. Throws a PolicyError for a policy or key that is not valid.
 */
export async function loadPolicy(text: string): Promise<LoadedPolicy> {
  const policy = parsePolicy(text);
  const logs = new Map<string, NoteVerifier>();
  const witnesses = new Map<string, NoteVerifier>();
  try {
    for (const log of policy.logs) {
      const verifier = await parseVerifierKey(log.verifierKey);
      logs.set(verifier.name, verifier);
    }
    for (const witness of policy.witnesses) {
      witnesses.set(witness.name, await parseCosignatureVerifierKey(witness.verifierKey));
    }
  } catch (error) {
    if (error instanceof NoteError) throw new PolicyError(`a policy key: ${error.message}`);
    throw error;
  }
  return { policy, logs, witnesses };
}

/** A checkpoint {@link verifyCheckpoint} accepted: its body and the policy names of its cosigners. */
export interface VerifiedCheckpoint {
  text: string;
  origin: string;
  treeSize: number;
  rootHash: Uint8Array;
  witnessed: Set<string>;
}

/**
 * Verifies the signed checkpoint `note` against `loaded`: its origin is a policy log's, that log's key
 * signed it, and the witnesses whose cosignatures verify satisfy the quorum. `origin`, when given, must be
 * the checkpoint's origin. Throws a NoteError (`unverified` for a missing signature or quorum, a bad
 * signature by a known key or another origin; `malformed` for what is not a checkpoint note).
 */
export async function verifyCheckpoint(
  loaded: LoadedPolicy,
  note: string,
  origin?: string,
): Promise<VerifiedCheckpoint> {
  const split = note.lastIndexOf('\n\n');
  let checkpoint: ReturnType<typeof parseCheckpoint>;
  try {
    checkpoint = parseCheckpoint(note.slice(0, split + 1));
  } catch {
    throw new NoteError('not a signed checkpoint', 'malformed');
  }
  if (origin !== undefined && checkpoint.origin !== origin) {
    throw new NoteError(`the checkpoint's origin is "${checkpoint.origin}", not "${origin}"`, 'unverified');
  }
  const log = loaded.logs.get(checkpoint.origin);
  if (!log) throw new NoteError(`no policy log has the origin "${checkpoint.origin}"`, 'unverified');
  const witnessByKey = new Map(
    [...loaded.witnesses].map(([name, verifier]) => [`${verifier.name}/${toHex(verifier.keyId)}`, name]),
  );
  const opened = await openNote(note, [log, ...loaded.witnesses.values()]);
  if (!opened.signatures.some((s) => s.name === log.name && toHex(s.keyId) === toHex(log.keyId))) {
    throw new NoteError(`the checkpoint is not signed by the log key ${log.name}`, 'unverified');
  }
  const witnessed = new Set<string>();
  for (const signature of opened.signatures) {
    const name = witnessByKey.get(`${signature.name}/${toHex(signature.keyId)}`);
    if (name !== undefined) witnessed.add(name);
  }
  if (!quorumSatisfied(loaded.policy, witnessed)) {
    const got = [...witnessed].join(', ') || 'none';
    throw new NoteError(`the checkpoint's cosignatures (${got}) do not satisfy the quorum`, 'unverified');
  }
  return { text: opened.text, ...checkpoint, witnessed };
}

/** Whether `char` is an ASCII control character other than tab (newlines are already split off). */
function isControlCharacter(char: string): boolean {
  const code = char.charCodeAt(0);
  return (code < 0x20 && code !== 0x09) || code === 0x7f;
}
