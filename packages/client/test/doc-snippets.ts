import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

/**
 * The TypeScript examples of the client's README and of the published webhook guide, each with the
 * declarations it leans on (a `client` made in an earlier example, a `queueResultsFetch` of the reader's
 * own), so that test/doc-snippets.test.ts can type-check every one of them against the built client.
 */

export const README = fileURLToPath(new URL('../README.md', import.meta.url));
export const WEBHOOK_GUIDE = fileURLToPath(new URL('../../../openapi/guides/webhooks.md', import.meta.url));

/** A fenced code block of a Markdown file, with the `## ` heading it is under. */
export interface DocBlock {
  file: string;
  heading: string;
  /** The block's place among the blocks of its language under the same heading, from 0. */
  index: number;
  /** Its first line in the file, from 1. */
  line: number;
  code: string;
}

/** Every fenced block of `language` in `file` (```ts), in order. */
export async function docBlocks(file: string, language: string): Promise<DocBlock[]> {
  const lines = (await readFile(file, 'utf8')).split('\n');
  const blocks: DocBlock[] = [];
  let heading = '';
  for (let at = 0; at < lines.length; at++) {
    const line = lines[at] ?? '';
    if (line.startsWith('## ')) heading = line.slice(3).trim();
    if (!line.startsWith('```')) continue;
    const end = lines.indexOf('```', at + 1);
    if (end === -1) throw new Error(`${file}:${at + 1}: a code block is not closed`);
    if (line.slice(3).trim() === language) {
      const index = blocks.filter((block) => block.heading === heading).length;
      blocks.push({ file, heading, index, line: at + 1, code: lines.slice(at + 1, end).join('\n') });
    }
    at = end;
  }
  return blocks;
}

/** The context every example after the first assumes: the client it made, and its first answer. */
const CLIENT = `import type { ScoreResponse, ScoringClient } from '@scenario-scoring/client';
declare const client: ScoringClient;`;

/**
 * What each example uses without defining it, by `<heading>#<index>` (the README's, then the guide's).
 * An example missing here gets no context: a new example must compile alone or be given one.
 */
export const SNIPPET_CONTEXT: Record<string, string> = {
  // README.md
  'Create a client and score#1': CLIENT,
  'Reasons and the notice#0': `${CLIENT}\ndeclare const data: ScoreResponse;`,
  'Handle errors#0': `${CLIENT}\ndeclare const id: string;`,
  'Retries#0': `import { createClient, type CreateRunRequest } from '@scenario-scoring/client';
${CLIENT}
declare const baseUrl: string;
declare const apiKey: string;
declare const body: CreateRunRequest;`,
  'Retries#1': `import { createClient } from '@scenario-scoring/client';
declare const baseUrl: string;
declare const apiKey: string;`,
  'Batch scoring (runs)#0': `import type { CreateRunRequest } from '@scenario-scoring/client';
${CLIENT}
declare const items: CreateRunRequest['items'];`,
  'Batch scoring (runs)#1': CLIENT,
  'Batch scoring (runs)#2': `import express from 'express';
import type { Run } from '@scenario-scoring/client';
const app = express();
declare const submitted: { data: Run };`,
  'Personal data: access and erasure#0': CLIENT,
  'Verify a log record#0': `${CLIENT}\ndeclare const data: ScoreResponse;`,
  'Verify the log: checkpoints, inclusion, consistency, and the auditor#0': `import type {
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
  'Verify a webhook delivery#0': `declare function queueResultsFetch(runId: string): Promise<void>;
declare function openReview(subject: string, reasons: readonly unknown[]): Promise<void>;`,
  // openapi/guides/webhooks.md: a mix of async and plain handlers, as a receiver has.
  'Verifying the signature#0': `declare function alreadyProcessed(eventId: string): Promise<boolean>;
declare function queueResultsFetch(runId: string): Promise<void>;
declare function notifyOnCall(runId: string, detail: string): void;
declare function openReview(subject: string, reasons: readonly unknown[]): Promise<void>;`,
};
