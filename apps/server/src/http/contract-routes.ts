import type { OpenApiDocument } from '../contract.js';

/** The HTTP methods an OpenAPI path item can hold. */
const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;
export type HttpMethod = (typeof HTTP_METHODS)[number];

/** One operation of the contract. */
export interface ContractOperation {
  readonly operationId: string;
  readonly method: HttpMethod;
  /** The contract's path template, e.g. `/v1/logs/{cid}`. */
  readonly path: string;
  /** The same path in Express syntax, e.g. `/v1/logs/:cid`. */
  readonly expressPath: string;
  /** The operation object, as the contract has it. */
  readonly definition: Readonly<Record<string, unknown>>;
}

/** Every operation of the contract's `paths`, in document order. */
export function contractOperations(document: OpenApiDocument): ContractOperation[] {
  const operations: ContractOperation[] = [];
  for (const [path, item] of Object.entries(document.paths)) {
    for (const method of HTTP_METHODS) {
      const definition = item[method] as Record<string, unknown> | undefined;
      if (definition === undefined) continue;
      operations.push({
        operationId: String(definition.operationId),
        method,
        path,
        expressPath: path.replace(/\{([^}]+)\}/g, ':$1'),
        definition,
      });
    }
  }
  return operations;
}

/**
 * A lookup of the methods the contract allows at a concrete path (`/v1/logs/bafk…` → `GET`), for the
 * `Allow` header of a 405. Matchers are compiled once; they run only on the error path.
 */
export function allowedMethodsLookup(
  operations: readonly ContractOperation[],
): (path: string) => readonly string[] | undefined {
  const byPath = new Map<string, string[]>();
  for (const { path, method } of operations) {
    const methods = byPath.get(path) ?? [];
    methods.push(method.toUpperCase());
    byPath.set(path, methods);
  }
  const matchers = [...byPath].map(([template, methods]) => ({
    pattern: new RegExp(
      `^${template
        .split(/\{[^}]+\}/)
        .map(escapeRegExp)
        .join('[^/]+')}/?$`,
    ),
    methods,
  }));
  return (path) => matchers.find((m) => m.pattern.test(path))?.methods;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
