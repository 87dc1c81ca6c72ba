import { existsSync, readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';

/** The openapi package's folder, whatever the working directory of the test run. */
export const PACKAGE_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '..');
/** The bundled contract that `npm run bundle` writes and Prism serves. */
export const BUNDLE_YAML = resolve(PACKAGE_DIR, 'dist/openapi.yaml');
/** The offline docs that `npm run docs` writes. */
export const DOCS_HTML = resolve(PACKAGE_DIR, 'dist/docs/index.html');

/** The HTTP methods an OpenAPI path item can hold, in the order operations are listed. */
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

/** A JSON value of the bundle: the tests only walk it, so a loose shape is enough. */
export type Node = { [key: string]: unknown };

/** An operation of `paths` or `webhooks`, with where it sits in the bundle. */
export interface Operation {
  /** The key under `paths` (a URL template) or `webhooks` (an event name). */
  key: string;
  method: string;
  operationId: string;
  summary: string;
  tags: string[];
  /** The operation object itself. */
  node: Node;
  /** Its JSON Pointer in the bundle, e.g. `/paths/~1healthz/get`. */
  pointer: string;
}

/** The bundled contract, parsed. */
export interface Bundle {
  info: { description?: string };
  security?: unknown[];
  tags?: { name: string; description?: string; 'x-traitTag'?: boolean }[];
  paths: Record<string, Node>;
  webhooks?: Record<string, Node>;
  components: Record<string, Record<string, Node>>;
}

/** Reads and parses a bundle; fails with the command to run when it was not built. */
export function loadBundle(file = BUNDLE_YAML): Bundle {
  if (!existsSync(file)) {
    throw new Error(`${file} is missing: run \`npx turbo run docs\` (bundle and docs) first`);
  }
  return parse(readFileSync(file, 'utf8')) as Bundle;
}

/** Escapes one JSON Pointer segment (RFC 6901). */
export function pointerSegment(key: string): string {
  return key.replaceAll('~', '~0').replaceAll('/', '~1');
}

/** Every operation of the bundle's `paths` or `webhooks` section, in document order. */
export function operationsOf(bundle: Bundle, section: 'paths' | 'webhooks'): Operation[] {
  const operations: Operation[] = [];
  for (const [key, item] of Object.entries(bundle[section] ?? {})) {
    for (const method of METHODS) {
      const node = item[method] as Node | undefined;
      if (!node) continue;
      operations.push({
        key,
        method,
        operationId: String(node.operationId),
        summary: String(node.summary),
        tags: (node.tags as string[] | undefined) ?? [],
        node,
        pointer: `/${section}/${pointerSegment(key)}/${method}`,
      });
    }
  }
  return operations;
}

/** Follows a local `$ref` (the bundle has no other kind), returning the target and its pointer. */
export function deref(bundle: Bundle, node: Node, pointer: string): { node: Node; pointer: string } {
  const ref = node.$ref;
  if (typeof ref !== 'string') return { node, pointer };
  if (!ref.startsWith('#/')) throw new Error(`unexpected non-local $ref ${ref} at ${pointer}`);
  let target: unknown = bundle;
  for (const segment of ref.slice(2).split('/')) {
    const key = segment.replaceAll('~1', '/').replaceAll('~0', '~');
    target = (target as Node | undefined)?.[key];
  }
  if (target === undefined) throw new Error(`dangling $ref ${ref} at ${pointer}`);
  return deref(bundle, target as Node, ref.slice(1));
}

/** A named example of a media type, with its value resolved. */
export interface NamedExample {
  name: string;
  value: unknown;
}

/** The named examples of a media type object (`examples`), resolving `$ref`s to `components/examples`. */
export function examplesOf(bundle: Bundle, mediaType: Node, pointer: string): NamedExample[] {
  const examples = (mediaType.examples ?? {}) as Record<string, Node>;
  return Object.entries(examples).map(([name, example]) => ({
    name,
    value: deref(bundle, example, `${pointer}/examples/${pointerSegment(name)}`).node.value,
  }));
}

/** The values of the `ErrorCode` enum: the stable codes of problem details. */
export function errorCodes(bundle: Bundle): string[] {
  return bundle.components.schemas?.ErrorCode?.enum as string[];
}

/** The slug Redoc gives a heading or tag in its anchors (`Webhook guide` → `webhook-guide`). */
export function redocSlug(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '');
}
