import type { OpenApiDocument } from '../common/contract.js';

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
  /** Matches the concrete paths of the template (`/v1/logs/bafk…`), a trailing slash allowed. */
  readonly pattern: RegExp;
  /** The operation object, as the contract has it. */
  readonly definition: Readonly<Record<string, unknown>>;
}

/** Every operation of the contract's `paths`, in document order. */
export function contractOperations(document: OpenApiDocument): ContractOperation[] {
  const operations: ContractOperation[] = [];
  for (const [path, item] of Object.entries(document.paths)) {
    const expressPath = path.replace(/\{([^}]+)\}/g, ':$1');
    const pattern = pathPattern(path);
    for (const method of HTTP_METHODS) {
      const definition = item[method] as Record<string, unknown> | undefined;
      if (definition === undefined) continue;
      operations.push({
        operationId: String(definition.operationId),
        method,
        path,
        expressPath,
        pattern,
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
  const byPath = new Map<string, { pattern: RegExp; methods: string[] }>();
  for (const { path, method, pattern } of operations) {
    const matcher = byPath.get(path) ?? { pattern, methods: [] };
    matcher.methods.push(method.toUpperCase());
    byPath.set(path, matcher);
  }
  // HEAD is answered wherever GET is (http/head-requests.ts).
  for (const matcher of byPath.values()) {
    const get = matcher.methods.indexOf('GET');
    if (get >= 0) matcher.methods.splice(get + 1, 0, 'HEAD');
  }
  const matchers = [...byPath.values()];
  return (path) => matchers.find((m) => m.pattern.test(path))?.methods;
}

/** `/v1/logs/{cid}` → `^/v1/logs/[^/]+/?$`: a parameter is one non-empty segment. */
function pathPattern(template: string): RegExp {
  const source = template
    .split(/\{[^}]+\}/)
    .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
    .join('[^/]+');
  return new RegExp(`^${source}/?$`);
}
