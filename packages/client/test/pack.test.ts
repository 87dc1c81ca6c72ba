import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { keyOf, SNIPPET_CONTEXT, typescriptExamples } from './doc-snippets.js';

/**
 * The published shape: `npm pack` the built package (with Node 22's npm run, as a consumer's older Node
 * would), install the tarball in a clean project outside the workspace (only the registry's packages
 * around it), and check that it type-checks there and runs on Node 22 and Node 24, Bun and Deno. Also that it
 * builds on Node 22 (its build scripts are plain JavaScript and tsc) and that `npm publish --dry-run` is
 * clean.
 */
const run = promisify(execFile);
const PACKAGE_DIR = fileURLToPath(new URL('..', import.meta.url));
const NODE22_SCRIPT = fileURLToPath(new URL('../../../scripts/node22.sh', import.meta.url));
const RUNTIME_SCRIPT = fileURLToPath(new URL('../../../scripts/js-runtime.sh', import.meta.url));
const HELLO_CID = 'bafkreifzjut3te2nhyekklss27nh3k72ysco7y32koao5eei66wof36n5e';

/** The environment without the npm_* settings of an enclosing `npm run`, which would steer the inner npm. */
const cleanEnv = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k)));

const CONSUMER = `import {
  createClient,
  handleWebhookEvent,
  isProblem,
  registerWebhook,
  scoreSubject,
  type VerifiedCheckpoint,
  verifyCheckpoint,
  verifyConsistency,
  verifyInclusion,
  verifyLogRecord,
  verifyWebhook,
  WebhookVerificationError,
  type Problem,
  type ProblemCode,
} from '@scenario-scoring/client';

const client = createClient({ baseUrl: 'https://api.example.com', apiKey: 'sk_${'a'.repeat(40)}' });

export async function firstScore(): Promise<number | undefined> {
  const { data, error } = await client.POST('/v1/scoring/score', {
    body: { subject: 'x', context: { jurisdiction: 'DE' } },
  });
  const code: ProblemCode | undefined = error?.code;
  const problem: Problem | undefined = error;
  if (code === 'rate_limited' || isProblem(problem)) return undefined;
  if (!data) return undefined;
  // @ts-expect-error a score is a number, not a string
  const wrong: string = data.result.scenarios[0].score;
  // @ts-expect-error scenarios have no such field
  void data.result.scenarios[0].value;
  void wrong;
  await verifyLogRecord(new Uint8Array(), data.log_cid);
  return data.result.scenarios[0].score;
}

export async function typedCalls(): Promise<void> {
  // @ts-expect-error a typo inside the nested context is caught by the typed helper
  await scoreSubject(client, { subject: 'x', context: { jurisdiction: 'DE', utilisation: 0.3 } });
  // @ts-expect-error event types are typed by name
  await registerWebhook(client, { url: 'https://receiver.test/', events: ['run.complete'] });
}

export async function prove(key: string, bytes: Uint8Array, cid: string, older: VerifiedCheckpoint) {
  const { data } = await client.GET('/v1/log/proofs/inclusion/{cid}', { params: { path: { cid } } });
  if (!data) return;
  // @ts-expect-error a checkpoint is verified against the origin line of the caller's log too
  await verifyCheckpoint(data.checkpoint.note, key);
  const checkpoint = await verifyCheckpoint(data.checkpoint.note, key, { origin: older.origin });
  await verifyInclusion(bytes, data, checkpoint);
  // @ts-expect-error a consistency proof needs the newer checkpoint
  await verifyConsistency(older, []);
  await verifyConsistency(older, checkpoint, []);
}

export function receive(body: string, headers: Headers): string | undefined {
  try {
    return handleWebhookEvent(verifyWebhook(body, headers, 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw6VGNO8XrBJI='), {
      'run.completed': (event) => event.data.run_id,
      // @ts-expect-error a test event has no run_id
      'webhook.test': (event) => event.data.run_id,
    });
  } catch (error) {
    if (error instanceof WebhookVerificationError && error.reason === 'stale_timestamp') return undefined;
    throw error;
  }
}
`;

/** Runs the packed client against a scripted fetch: the import, the CID and a typed call work. */
const RUN_ON_NODE = `
const m = await import('@scenario-scoring/client');
const scenario = (name, score) => ({ name, score, explain: [] });
const body = { id: 'req_1', status: 'ok', log_cid: '${HELLO_CID}',
  result: { scenarios: [scenario('p10', 655.5), scenario('p50', 690.7), scenario('p90', 726)], levers: [] } };
const client = m.createClient({ baseUrl: 'https://api.test', apiKey: 'sk_${'a'.repeat(40)}', retries: false,
  fetch: async () => Response.json(body) });
const scored = await m.scoreSubject(client, { subject: 'x', context: { jurisdiction: 'DE' } });
console.log(typeof m.createClient, await m.computeLogCid('hello world'), scored.data.result.scenarios[0].score);
`;

const TSC = fileURLToPath(new URL('../../../node_modules/typescript/bin/tsc', import.meta.url));

const TSCONFIGS = {
  'tsconfig.nodenext.json': { module: 'NodeNext', moduleResolution: 'NodeNext' },
  'tsconfig.bundler.json': { module: 'ESNext', moduleResolution: 'Bundler' },
};

let workDir = '';
afterAll(async () => {
  if (workDir) await rm(workDir, { recursive: true, force: true });
});

async function declarationFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries.filter((e) => e.isFile() && e.name.endsWith('.d.ts')).map((e) => join(e.parentPath, e.name));
}

describe('the packed package', () => {
  it('installs, type-checks and imports in a clean project outside the workspace', {
    // Generous: on a fresh clone it also fetches Node 22, Bun and Deno from the registry (once).
    timeout: 300_000,
  }, async () => {
    if (!existsSync(join(PACKAGE_DIR, 'dist/index.js'))) {
      throw new Error('dist/ is missing: run `npm run build -w @scenario-scoring/client` first');
    }
    workDir = await mkdtemp(join(tmpdir(), 'ss-client-pack-'));
    // The other runtimes come from the registry once (then from .tools/): fetched while the rest runs.
    const tool = (script: string, ...args: string[]) =>
      run('bash', [script, ...args], { env: cleanEnv, timeout: 200_000 }).then((done) => done.stdout.trim());
    const runtimes = Promise.all([tool(RUNTIME_SCRIPT, 'bun'), tool(RUNTIME_SCRIPT, 'deno')]);
    runtimes.catch(() => {});
    const node22 = await tool(NODE22_SCRIPT);
    const env22 = { ...cleanEnv, PATH: `${dirname(node22)}:${cleanEnv.PATH ?? ''}` };
    expect((await run('node', ['--version'], { env: env22 })).stdout).toMatch(/^v22\./);
    // It builds on Node 22: the pre-build script is plain JavaScript, and tsc writes into a scratch folder
    // (not dist/, which other suites may be reading).
    await run('node', ['scripts/copy-api-types.mjs'], { cwd: PACKAGE_DIR, env: env22 });
    await run('node', [TSC, '-p', 'tsconfig.build.json', '--outDir', join(workDir, 'dist-node22')], {
      cwd: PACKAGE_DIR,
      env: env22,
    });
    expect(existsSync(join(workDir, 'dist-node22/index.js'))).toBe(true);
    // --ignore-scripts: the test packs the dist/ that turbo built, instead of rebuilding it under other tests.
    const packed = await run('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', workDir], {
      cwd: PACKAGE_DIR,
      env: env22,
    });
    const [{ filename, files }] = JSON.parse(packed.stdout) as [
      { filename: string; files: { path: string }[] },
    ];
    const paths = files.map((f) => f.path);
    expect(paths).toContain('dist/index.js');
    expect(paths).toContain('dist/index.d.ts');
    expect(paths).toContain('README.md');
    expect(paths).toContain('LICENSE');
    expect(
      paths.filter((p) => p.startsWith('src/') || p.startsWith('test/') || p.endsWith('.test.js')),
    ).toEqual([]);

    const project = join(workDir, 'consumer');
    await mkdir(project);
    await writeFile(
      join(project, 'package.json'),
      JSON.stringify({ name: 'consumer', private: true, type: 'module' }),
    );
    // Bounded below the test's own timeout, so that a registry that cannot be reached shows npm's output
    // (behind a TLS-intercepting proxy npm needs NODE_EXTRA_CA_CERTS: turbo.json passes it through).
    await run('npm', ['install', '--no-audit', '--no-fund', join(workDir, filename), 'typescript@5.9.3'], {
      cwd: project,
      env: cleanEnv,
      timeout: 100_000,
    }).catch((failed: { stdout?: string; stderr?: string }) => {
      throw new Error(
        `npm install in the clean project failed:\n${failed.stdout ?? ''}${failed.stderr ?? ''}`,
        {
          cause: failed,
        },
      );
    });

    const installed = join(project, 'node_modules/@scenario-scoring/client');
    for (const file of await declarationFiles(join(installed, 'dist'))) {
      expect(await readFile(file, 'utf8'), file).not.toMatch(
        /from ['"]@scenario-scoring\/|import\(['"]@scenario-scoring\//,
      );
    }
    expect(existsSync(join(project, 'node_modules/@scenario-scoring/api-types'))).toBe(false);

    await writeFile(join(project, 'index.ts'), CONSUMER);
    for (const [name, resolution] of Object.entries(TSCONFIGS)) {
      const compilerOptions = {
        ...resolution,
        target: 'ES2022',
        lib: ['ES2023', 'DOM'],
        strict: true,
        noEmit: true,
        skipLibCheck: false,
      };
      await writeFile(join(project, name), JSON.stringify({ compilerOptions, files: ['index.ts'] }));
      const tsc = await run('node', ['node_modules/typescript/bin/tsc', '-p', name], { cwd: project }).then(
        (done) => ({ exitCode: 0, output: done.stdout + done.stderr }),
        (failed: { code: number; stdout: string; stderr: string }) => ({
          exitCode: failed.code,
          output: failed.stdout + failed.stderr,
        }),
      );
      expect(tsc, `tsc -p ${name}`).toEqual({ exitCode: 0, output: '' });
    }

    for (const [name, env] of [
      ['Node 24', cleanEnv],
      ['Node 22', env22],
    ] as const) {
      const imported = await run('node', ['--input-type=module', '-e', RUN_ON_NODE], { cwd: project, env });
      expect(imported.stdout.trim(), name).toBe(`function ${HELLO_CID} 655.5`);
    }
    // Bun and Deno (from their npm packages), on the same installed project: Deno uses its node_modules.
    await writeFile(join(project, 'run.mjs'), RUN_ON_NODE);
    const [bun, deno] = await runtimes;
    for (const [runtime, bin, args] of [
      ['bun', bun, ['run.mjs']],
      ['deno', deno, ['run', '--node-modules-dir=manual', '--allow-read', '--allow-env', 'run.mjs']],
    ] as const) {
      const ran = await run(bin, [...args], { cwd: project, env: { ...cleanEnv, NO_COLOR: '1' } });
      expect(ran.stdout.trim(), runtime).toBe(`function ${HELLO_CID} 655.5`);
    }

    // Ready to publish: npm finds nothing to correct or warn about (only that no one is logged in).
    const published = await run('npm', ['publish', '--dry-run', '--ignore-scripts', '--json'], {
      cwd: PACKAGE_DIR,
      env: cleanEnv,
    });
    const warnings = published.stderr
      .split('\n')
      .filter((line) => /\bwarn\b/i.test(line) && !/logged in|Unknown user config/.test(line));
    expect(warnings).toEqual([]);

    // The log auditor is installed as a bin and runs from the tarball alone.
    const audit = await run('node', ['node_modules/.bin/scenario-scoring-audit', '--help'], {
      cwd: project,
      env: cleanEnv,
    });
    expect(audit.stdout).toMatch(/^Usage: scenario-scoring-audit --url/);
  });
});

/** The TypeScript versions the client is tested with (README "TypeScript"): 5.x, and 7.x, npm's latest. */
const TYPESCRIPTS = { '5.9': 'typescript@5.9.3', '7.0': 'typescript@7.0.2' } as const;

/** The first block of `language` after `heading` in the client's README. */
async function readmeBlock(heading: string, language: string): Promise<string> {
  const readme = await readFile(join(PACKAGE_DIR, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf(`\n## ${heading}\n`));
  const block = new RegExp(`\`\`\`${language}\\n([^]*?)\`\`\`\n`).exec(section)?.[1];
  if (block === undefined) throw new Error(`no ${language} block under "## ${heading}" in README.md`);
  return block;
}

describe('the packed package with each TypeScript the README names', () => {
  let tsDir = '';
  afterAll(async () => {
    if (tsDir) await rm(tsDir, { recursive: true, force: true });
  });

  it("compiles the documentation's TypeScript examples (READMEs, docs/, guides) and a consumer of every export with TypeScript 5.x and 7.x, with the README's tsconfig", {
    timeout: 240_000,
  }, async () => {
    if (!existsSync(join(PACKAGE_DIR, 'dist/index.js'))) {
      throw new Error('dist/ is missing: run `npm run build -w @scenario-scoring/client` first');
    }
    tsDir = await mkdtemp(join(tmpdir(), 'ss-client-typescript-'));
    const packed = await run('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', tsDir], {
      cwd: PACKAGE_DIR,
      env: cleanEnv,
    });
    const [{ filename }] = JSON.parse(packed.stdout) as [{ filename: string }];
    const project = join(tsDir, 'consumer');
    await mkdir(project);
    await writeFile(
      join(project, 'package.json'),
      JSON.stringify({ name: 'consumer', private: true, type: 'module' }),
    );
    // Both TypeScripts side by side, under aliases; @types/node for the example's process.env, Express
    // (the server's versions) for the webhook receivers.
    const aliases = Object.entries(TYPESCRIPTS).map(([version, spec]) => `ts${version}@npm:${spec}`);
    const express = ['express@5.3.0', '@types/express@5.0.6'];
    await run(
      'npm',
      ['install', '--no-audit', '--no-fund', join(tsDir, filename), '@types/node@24', ...express, ...aliases],
      {
        cwd: project,
        env: cleanEnv,
        timeout: 150_000,
      },
    ).catch((failed: { stdout?: string; stderr?: string }) => {
      throw new Error(
        `npm install in the clean project failed:\n${failed.stdout ?? ''}${failed.stderr ?? ''}`,
        {
          cause: failed,
        },
      );
    });
    await writeFile(join(project, 'example.ts'), await readmeBlock('Create a client and score', 'ts'));
    await writeFile(join(project, 'index.ts'), CONSUMER);
    // Every other example of the documentation (test/doc-snippets.test.ts compiles them against dist/ too),
    // each with its context.
    const snippets: string[] = [];
    for (const [n, block] of (await typescriptExamples()).entries()) {
      const key = keyOf(block);
      if (key === 'packages/client/README.md: Create a client and score#0') continue; // example.ts
      snippets.push(`snippet-${n}.ts`);
      await writeFile(
        join(project, `snippet-${n}.ts`),
        `// ${block.doc}:${block.line}\n${SNIPPET_CONTEXT[key] ?? ''}\n${block.code}\nexport {};\n`,
      );
    }
    const readmeConfig = JSON.parse(await readmeBlock('TypeScript', 'json')) as {
      compilerOptions: Record<string, unknown>;
    };
    const files = ['example.ts', 'index.ts', ...snippets];
    const configs: Record<string, unknown> = {
      'tsconfig.readme.json': { ...readmeConfig, files },
      ...Object.fromEntries(
        Object.entries(TSCONFIGS).map(([name, resolution]) => [
          name,
          { compilerOptions: { ...readmeConfig.compilerOptions, ...resolution }, files },
        ]),
      ),
    };
    const tsc = (version: string, args: string[]) =>
      run('node', [`node_modules/ts${version}/bin/tsc`, ...args], { cwd: project }).then(
        (done) => ({ exitCode: 0, output: done.stdout + done.stderr }),
        (failed: { code: number; stdout: string; stderr: string }) => ({
          exitCode: failed.code,
          output: failed.stdout + failed.stderr,
        }),
      );
    for (const version of Object.keys(TYPESCRIPTS)) {
      expect((await tsc(version, ['--version'])).output).toMatch(
        new RegExp(`^Version ${version.replace('.', '\\.')}\\.`),
      );
    }
    for (const [name, config] of Object.entries(configs))
      await writeFile(join(project, name), JSON.stringify(config));
    // Every TypeScript with every tsconfig, one after the other, and every failure reported (not only the first).
    const compiled: Record<string, { exitCode: number; output: string }> = {};
    const clean: Record<string, { exitCode: number; output: string }> = {};
    for (const version of Object.keys(TYPESCRIPTS)) {
      for (const name of Object.keys(configs)) {
        compiled[`TypeScript ${version}, ${name}`] = await tsc(version, ['-p', name]);
        clean[`TypeScript ${version}, ${name}`] = { exitCode: 0, output: '' };
      }
    }
    expect(compiled).toEqual(clean);
    // What the README warns of: without "types": ["node"], TypeScript 7 does not know process.
    const { types: _types, ...withoutTypes } = readmeConfig.compilerOptions;
    await writeFile(
      join(project, 'tsconfig.no-types.json'),
      JSON.stringify({ compilerOptions: withoutTypes, files: ['example.ts'] }),
    );
    expect((await tsc('7.0', ['-p', 'tsconfig.no-types.json'])).output).toMatch(/Cannot find name 'process'/);
  });
});
