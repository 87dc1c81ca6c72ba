import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import {
  type DocBlock,
  docBlocks,
  keyOf,
  README,
  ROOT,
  SNIPPET_CONTEXT,
  typescriptExamples,
} from './doc-snippets.js';

/**
 * Every TypeScript example of the documentation (README.md, the client's README, docs/*.md and
 * openapi/guides/*.md) compiles against the built client (dist/, as the package exports it), with the
 * repository's TypeScript and the client README's tsconfig: an example that drifts from the client's types
 * fails here. (test/pack.test.ts compiles them against the packed tarball with TypeScript 5.x and 7.x.)
 */
const run = promisify(execFile);
const TSC = join(ROOT, 'node_modules/typescript/bin/tsc');

let workDir = '';
afterAll(async () => {
  if (workDir) await rm(workDir, { recursive: true, force: true });
});

const slug = (text: string) => text.toLowerCase().replace(/[^a-z0-9]+/g, '-');
const fileOf = (block: DocBlock) =>
  `${slug(block.doc.replace(/\.md$/, ''))}-${slug(block.heading)}-${block.index}.ts`;

describe('the documentation examples', () => {
  it('type-check against the built client with the README tsconfig', { timeout: 120_000 }, async () => {
    if (!existsSync(join(ROOT, 'packages/client/dist/index.d.ts'))) {
      throw new Error('dist/ is missing: run `npm run build -w @scenario-scoring/client` first');
    }
    const blocks = await typescriptExamples();
    // The examples of each place are found (a fence that stopped matching would drop them silently), and
    // each context still names an example.
    const docs = new Set(blocks.map((block) => block.doc));
    for (const doc of [
      'README.md',
      'packages/client/README.md',
      'docs/using-the-api.md',
      'docs/verifying-the-log.md',
      'docs/mock.md',
      'openapi/guides/batch-scoring.md',
      'openapi/guides/webhooks.md',
    ]) {
      expect(docs, doc).toContain(doc);
    }
    expect(blocks.length).toBeGreaterThanOrEqual(23);
    expect(Object.keys(SNIPPET_CONTEXT).filter((key) => !blocks.some((b) => keyOf(b) === key))).toEqual([]);
    expect(new Set(blocks.map(fileOf)).size).toBe(blocks.length);

    // Under the workspace's node_modules, so that '@scenario-scoring/client' resolves to this package's
    // exports (dist/) and 'express' and @types/node to the workspace's, as in a consumer's project.
    await mkdir(join(ROOT, 'node_modules/.cache'), { recursive: true });
    workDir = await mkdtemp(join(ROOT, 'node_modules/.cache/doc-snippets-'));
    await writeFile(join(workDir, 'package.json'), JSON.stringify({ private: true, type: 'module' }));
    const where = new Map<string, { block: DocBlock; contextLines: number }>();
    for (const block of blocks) {
      const context = SNIPPET_CONTEXT[keyOf(block)] ?? '';
      where.set(fileOf(block), { block, contextLines: context.split('\n').length });
      await writeFile(join(workDir, fileOf(block)), `${context}\n${block.code}\nexport {};\n`);
    }
    const [tsconfig] = await docBlocks(README, 'json');
    const { compilerOptions } = JSON.parse(tsconfig?.code ?? '{}') as { compilerOptions: object };
    await writeFile(
      join(workDir, 'tsconfig.json'),
      JSON.stringify({ compilerOptions, files: [...where.keys()] }),
    );
    const version = await run('node', [TSC, '--version']);
    expect(version.stdout).toMatch(/^Version 5\.9\./);
    const compiled = await run('node', [TSC, '-p', 'tsconfig.json', '--pretty', 'false'], {
      cwd: workDir,
    }).then(
      () => '',
      (failed: { stdout: string; stderr: string }) => failed.stdout + failed.stderr,
    );
    // Each error with the example it is in: its file, heading and line in the Markdown.
    const errors = compiled
      .split('\n')
      .filter((line) => line.trim() !== '')
      .map((line) => {
        const at = /^([^(]+)\((\d+),\d+\)/.exec(line);
        const found = at && where.get(at[1] ?? '');
        if (!found) return line;
        const { block, contextLines } = found;
        const markdownLine = block.line + Number(at[2]) - contextLines;
        return `${block.doc}:${markdownLine} (${block.heading}): ${line}`;
      });
    expect(errors).toEqual([]);
  });
});
