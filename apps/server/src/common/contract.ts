import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SERVER_FILES } from '../server-files.js';

/** The bundled contract as served and enforced: the parsed document, its files' text and the docs page. */
export interface Contract {
  /** The parsed `openapi.json`. Shared: never mutate it. */
  readonly document: OpenApiDocument;
  readonly jsonText: string;
  readonly yamlText: string;
  readonly docsHtml: string;
}

/** The parts of an OpenAPI 3.1 document the server reads itself; the validator reads the rest. */
export interface OpenApiDocument {
  readonly paths: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
  readonly components?: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
  /** The default security requirement of every operation without its own. */
  readonly security?: readonly unknown[];
}

/**
 * `value` with its local `$ref`s (`#/components/…`, tokens unescaped as RFC 6901 says) followed within
 * `document`, a few hops at most; undefined when one leads nowhere or outside the document.
 */
export function resolveRef(
  document: OpenApiDocument,
  value: unknown,
): Readonly<Record<string, unknown>> | undefined {
  let current = value as Readonly<Record<string, unknown>> | undefined;
  for (let hop = 0; hop < 16 && typeof current?.$ref === 'string'; hop++) {
    const ref = current.$ref as string;
    if (!ref.startsWith('#/')) return undefined;
    let target: unknown = document;
    for (const token of ref.slice(2).split('/'))
      target = (target as Record<string, unknown> | undefined)?.[
        token.replaceAll('~1', '/').replaceAll('~0', '~')
      ];
    current = target as Readonly<Record<string, unknown>> | undefined;
  }
  return current;
}

const here = fileURLToPath(SERVER_FILES);

/**
 * Where the contract files are: `dist/contract/` beside the built server (copied there by the build, so
 * `dist/` is self-contained), else the workspace's `openapi/dist/` when running from `src/` under vitest.
 */
export function contractDirectory(): string {
  const candidates = [join(here, 'contract'), join(here, '..', '..', '..', 'openapi', 'dist')];
  const found = candidates.find((dir) => existsSync(join(dir, 'openapi.json')));
  if (found === undefined) {
    throw new Error(
      `the bundled contract is missing (looked in ${candidates.join(' and ')}); run "npx turbo run build"`,
    );
  }
  return found;
}

/** Reads the contract files once, at start. */
export function loadContract(directory: string = contractDirectory()): Contract {
  const read = (...path: string[]) => readFileSync(join(directory, ...path), 'utf8');
  const jsonText = read('openapi.json');
  return {
    document: JSON.parse(jsonText) as OpenApiDocument,
    jsonText,
    yamlText: read('openapi.yaml'),
    docsHtml: read('docs', 'index.html'),
  };
}
