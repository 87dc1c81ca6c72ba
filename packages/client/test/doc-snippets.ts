import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The TypeScript examples of the documentation (the project README, the client's README, docs/*.md and
 * the published guides, openapi/guides/*.md), each with the declarations it leans on (a `client` made in an
 * earlier example, a `queueResultsFetch` of the reader's own), so that test/doc-snippets.test.ts and
 * test/pack.test.ts can type-check every one of them against the built and the packed client.
 *
 * Every block fenced ```ts (or ```typescript) is checked: an example that is deliberately not
 * TypeScript-checkable (a fragment, pseudo-code) must be fenced otherwise (```text, ```js), not left to
 * fail or be skipped here.
 */

export const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
/** The client's README: its examples, and the tsconfig (its first ```json block) they are checked with. */
export const README = join(ROOT, 'packages/client/README.md');

/** The fence languages taken as TypeScript. */
export const TYPESCRIPT = ['ts', 'typescript'];

/** A fenced code block of a Markdown file, with the `## ` heading (or else the `# ` title) it is under. */
export interface DocBlock {
  file: string;
  /** The file's path from the repository root, as SNIPPET_CONTEXT names it. */
  doc: string;
  heading: string;
  /** The block's place among the blocks of its language under the same heading, from 0. */
  index: number;
  /** Its first line in the file, from 1. */
  line: number;
  code: string;
}

/** The Markdown files whose TypeScript examples are checked, from the repository root. */
export async function documentationFiles(): Promise<string[]> {
  const markdownIn = async (dir: string) =>
    (await readdir(join(ROOT, dir)))
      .filter((name) => name.endsWith('.md'))
      .sort()
      .map((name) => `${dir}/${name}`);
  return [
    'README.md',
    'packages/client/README.md',
    ...(await markdownIn('docs')),
    ...(await markdownIn('openapi/guides')),
  ];
}

/**
 * Every fenced block of one of `languages` in `file` (```ts), in order. A fence may be indented (a block
 * inside a list item): its lines are taken without that indentation.
 */
export async function docBlocks(file: string, languages: string | readonly string[]): Promise<DocBlock[]> {
  const wanted = typeof languages === 'string' ? [languages] : languages;
  const doc = file.startsWith(ROOT) ? file.slice(ROOT.length) : file;
  const lines = (await readFile(file, 'utf8')).split('\n');
  const blocks: DocBlock[] = [];
  let heading = '';
  for (let at = 0; at < lines.length; at++) {
    const line = lines[at] ?? '';
    const title = /^##? (.*)$/.exec(line);
    if (title) heading = (title[1] ?? '').trim();
    const open = /^( *)(`{3,})(.*)$/.exec(line);
    if (!open) continue;
    const [, indent = '', fence = '', info = ''] = open;
    const end = lines.findIndex((l, n) => n > at && l.trim() === fence && l.startsWith(indent));
    if (end === -1) throw new Error(`${doc}:${at + 1}: a code block is not closed`);
    if (wanted.includes(info.trim().split(/\s/)[0] ?? '')) {
      const index = blocks.filter((block) => block.heading === heading).length;
      const code = lines
        .slice(at + 1, end)
        .map((l) => (l.startsWith(indent) ? l.slice(indent.length) : l))
        .join('\n');
      blocks.push({ file, doc, heading, index, line: at + 1, code });
    }
    at = end;
  }
  return blocks;
}

/** Every TypeScript example of the documentation, file by file (documentationFiles' order). */
export async function typescriptExamples(): Promise<DocBlock[]> {
  const blocks: DocBlock[] = [];
  for (const doc of await documentationFiles())
    blocks.push(...(await docBlocks(join(ROOT, doc), TYPESCRIPT)));
  return blocks;
}

/** How SNIPPET_CONTEXT names an example: `<file from the root>: <heading>#<index>`. */
export const keyOf = (block: DocBlock) => `${block.doc}: ${block.heading}#${block.index}`;

/** The context every example after the first assumes: the client it made, and its first answer. */
const CLIENT = `import type { ScoreResponse, ScoringClient } from '@scenario-scoring/client';
declare const client: ScoringClient;`;

/**
 * What each example uses without defining it, by keyOf (`<file>: <heading>#<index>`). An example missing
 * here gets no context: a new example must compile alone or be given one.
 */
export const SNIPPET_CONTEXT: Record<string, string> = {
  // README.md: the first example is a whole program.
  'README.md: Runs of a whole portfolio (NDJSON)#0': CLIENT,
  // packages/client/README.md
  'packages/client/README.md: Create a client and score#1': CLIENT,
  'packages/client/README.md: Reasons and the notice#0': `${CLIENT}\ndeclare const data: ScoreResponse;`,
  'packages/client/README.md: Handle errors#0': `${CLIENT}\ndeclare const id: string;`,
  'packages/client/README.md: Retries#0': `import { createClient, type CreateRunRequest } from '@scenario-scoring/client';
${CLIENT}
declare const baseUrl: string;
declare const apiKey: string;
declare const body: CreateRunRequest;`,
  'packages/client/README.md: Retries#1': `import { createClient } from '@scenario-scoring/client';
declare const baseUrl: string;
declare const apiKey: string;`,
  'packages/client/README.md: Batch scoring (runs)#0': `import type { CreateRunRequest } from '@scenario-scoring/client';
${CLIENT}
declare const items: CreateRunRequest['items'];`,
  'packages/client/README.md: Batch scoring (runs)#1': CLIENT,
  'packages/client/README.md: Batch scoring (runs)#2': `import express from 'express';
import type { Run } from '@scenario-scoring/client';
const app = express();
declare const submitted: { data: Run };`,
  'packages/client/README.md: Personal data: access and erasure#0': CLIENT,
  'packages/client/README.md: Verify a log record#0': `${CLIENT}\ndeclare const data: ScoreResponse;`,
  'packages/client/README.md: Verify the log: checkpoints, inclusion, consistency, and the auditor#0': `import type {
  InclusionProofFields,
  ScoreRequest,
  VerifiedCheckpoint,
} from '@scenario-scoring/client';
${CLIENT}
declare const cid: string;
declare const PINNED: string;
declare const ORIGIN: string;
declare const note: string;
declare const recordBytes: Uint8Array;
declare const inclusionProof: InclusionProofFields;
declare const olderCheckpoint: VerifiedCheckpoint;
declare const consistencyProof: string[];
declare const request: ScoreRequest;`,
  'packages/client/README.md: Verify a webhook delivery#0': `declare function queueResultsFetch(runId: string): Promise<void>;
declare function openReview(subject: string, reasons: readonly unknown[]): Promise<void>;`,
  // docs/
  'docs/mock.md: The mock#0': `import { createClient, submitRun, waitForRun, type CreateRunRequest } from '@scenario-scoring/client';
declare const apiKey: string;
declare const body: CreateRunRequest;`,
  'docs/using-the-api.md: Reasons, languages, the model catalog and the notice#0': `${CLIENT}
declare const scored: ScoreResponse;`,
  'docs/using-the-api.md: Webhooks#0': `import { registerWebhook } from '@scenario-scoring/client';
${CLIENT}
declare function storeSecret(webhookId: string, secret: string): void;`,
  "docs/verifying-the-log.md: The proof in the scoring's answer#0": `import { scoreSubject, verifyScoreInclusion, type ScoreRequest } from '@scenario-scoring/client';
${CLIENT}
declare const request: ScoreRequest;
declare const PINNED: string;
declare const ORIGIN: { origin: string };`,
  'docs/verifying-the-log.md: In code#0': `declare const logCid: string;
declare const recordBytes: Uint8Array;
declare const savedNote: string;`,
  // openapi/guides/
  'openapi/guides/batch-scoring.md: With the TypeScript client#0': `import type { CreateRunRequest } from '@scenario-scoring/client';
declare const items: CreateRunRequest['items'];`,
  // A mix of async and plain handlers, as a receiver has.
  'openapi/guides/webhooks.md: Verifying the signature#0': `declare function alreadyProcessed(eventId: string): Promise<boolean>;
declare function queueResultsFetch(runId: string): Promise<void>;
declare function notifyOnCall(runId: string, detail: string): void;
declare function openReview(subject: string, reasons: readonly unknown[]): Promise<void>;`,
};
