import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

// Import circles are refused by `npm run lint` (dpdm, run by `npm test`); these are the layer rules of
// docs/architecture.md that a circle check cannot see.
const SRC = join(dirname(fileURLToPath(import.meta.url)), '..', 'src');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? sourceFiles(join(dir, entry.name))
      : entry.name.endsWith('.ts')
        ? [join(dir, entry.name)]
        : [],
  );
}

/** Every relative import of the production sources, as [importer, imported], both relative to src/. */
const imports = sourceFiles(SRC)
  .filter((file) => !file.endsWith('.test.ts'))
  .flatMap((file) =>
    [...readFileSync(file, 'utf8').matchAll(/(?:from|import)\s*\(?\s*'(\.{1,2}\/[^']+)'/g)].map(
      ([, specifier]): [string, string] => [
        relative(SRC, file),
        relative(SRC, resolve(dirname(file), specifier as string)),
      ],
    ),
  );

/**
 * The server's layers, top to bottom. A module may import modules of its own folder and of any folder in a
 * LOWER layer, never of its own layer's other folders or of a higher one, so no two folders import each
 * other, directly or around a loop. A folder is the first part of the path under src/ (`webhooks/api`,
 * `webhooks/delivery` and `webhooks/outbound` are folders of their own, the files directly in webhooks/
 * another); the files directly in src/ are the composition root, except `server-files.ts`, which must sit
 * there for its URL (see its comment) and imports nothing.
 */
export const LAYERS: readonly (readonly string[])[] = [
  ['(root)'], // main, start, cli, runtime, app, features, create-workers, server-config, index
  ['scoring', 'runs', 'webhooks/api', 'webhooks/delivery', 'verifiable-log', 'health', 'docs', 'erasure'],
  ['policies', 'score-log'],
  ['webhooks'], // webhook-registry, event-filter, webhook-config: what both webhook sides share
  ['webhooks/outbound'],
  ['http', 'idempotency', 'events'],
  ['transport'], // the guards of the HTTP edge (see src/transport/README.md)
  ['keys', 'metrics'],
  ['request-logging', 'workers', 'quota'],
  ['errors', 'config'],
  ['storage'],
  ['common'],
  ['tracing'], // cross-cutting: every layer may trace; loads OpenTelemetry only when on
  ['server-files.ts'],
];

/** The folder (as LAYERS names it) of a path relative to src/. */
export function folderOf(path: string): string {
  const parts = path.replace(/\.js$/, '.ts').split('/');
  if (parts.length === 1) return parts[0] === 'server-files.ts' ? 'server-files.ts' : '(root)';
  if (parts[0] === 'webhooks') return parts.length === 2 ? 'webhooks' : `webhooks/${parts[1]}`;
  return parts[0] as string;
}

/** The imports that break the layer order: [importer, imported] for each. */
export function layerViolations(edges: readonly (readonly [string, string])[]): string[] {
  const layerOf = new Map(LAYERS.flatMap((folders, layer) => folders.map((f) => [f, layer] as const)));
  return edges.flatMap(([from, to]) => {
    const a = folderOf(from);
    const b = folderOf(to);
    if (a === b) return [];
    const la = layerOf.get(a);
    const lb = layerOf.get(b);
    if (la === undefined || lb === undefined)
      return [`${from} -> ${to}: folder ${la === undefined ? a : b} is in no layer`];
    return la < lb ? [] : [`${from} -> ${to}: ${a} (layer ${la}) may not import ${b} (layer ${lb})`];
  });
}

it('every folder sits in a layer, and imports only folders of lower layers: no folder loops', () => {
  expect(layerViolations(imports)).toEqual([]);
});

it('the layer check fails on a back edge between two folders', () => {
  expect(layerViolations([['http/auth.ts', 'scoring/score-service.ts']])).toHaveLength(1);
  expect(
    layerViolations([['webhooks/api/webhook-store.ts', 'webhooks/delivery/delivery-claims.ts']]),
  ).toHaveLength(1);
  expect(layerViolations([['errors/app-error.ts', 'transport/client-error.ts']])).toHaveLength(1);
  expect(layerViolations([['transport/text-policy.ts', 'http/error-translation.ts']])).toHaveLength(1);
  expect(layerViolations([['scoring/score-service.ts', 'score-log/score-log-store.ts']])).toEqual([]);
});

it('storage/ imports nothing of a feature: features build their stores on it', () => {
  // server-files.ts, the leaf that locates the worker threads' modules, is no feature: it imports nothing.
  const outward = imports.filter(
    ([from, to]) =>
      from.startsWith('storage/') &&
      !to.startsWith('storage/') &&
      to !== 'server-files.js' &&
      to !== 'tracing/tracing.js',
  );
  expect(outward).toEqual([]);
  expect(imports.filter(([from]) => from === 'server-files.ts')).toEqual([]);
});

it('no production source runs code from a string (a Worker with eval: true, eval, new Function)', () => {
  // Such code is not type-checked, linted or seen by these rules: a worker thread is a module of its own.
  const evaluating = sourceFiles(SRC)
    .filter((file) => !file.endsWith('.test.ts'))
    .filter((file) => /\beval\s*[:(]|\bnew Function\s*\(/.test(readFileSync(file, 'utf8')))
    .map((file) => relative(SRC, file));
  expect(evaluating).toEqual([]);
});

it('every worker thread of the server starts with the bounded heap of THREAD_RESOURCE_LIMITS (server-files.ts)', () => {
  // A thread started without it gets V8's young generation sized from the machine's memory (128 MiB of
  // new space per thread on 24 GiB), which a sustained load fills with garbage (docs/operating.md, Memory).
  const workers = sourceFiles(SRC)
    .filter((file) => !file.endsWith('.test.ts'))
    .flatMap((file) =>
      [...readFileSync(file, 'utf8').matchAll(/new Worker\(([^;]*?)\);/gs)].map(
        (match) => [relative(SRC, file), match[1] as string] as const,
      ),
    );
  expect(workers.map(([file]) => file).sort()).toEqual([
    'runs/scoring-pool.ts',
    'storage/sqlite-checkpointer.ts',
    'storage/sqlite-thread.ts',
  ]);
  expect(workers.filter(([, args]) => !/resourceLimits: THREAD_RESOURCE_LIMITS/.test(args))).toEqual([]);
});

it('production sources never import the test fixtures', () => {
  expect(imports.filter(([, to]) => to.startsWith('../'))).toEqual([]);
});

it('the webhook delivery engine and outbound safety never import the webhook API routes', () => {
  const upward = imports.filter(
    ([from, to]) => /^webhooks\/(delivery|outbound)\//.test(from) && /^webhooks\/api\/.*-routes/.test(to),
  );
  expect(upward).toEqual([]);
});
