import { type OpenApiDocument, resolveRef } from '../common/contract.js';
import type { ContractOperation } from './contract-routes.js';

type Json = Record<string, unknown>;

/** Follows a local `$ref` (`#/components/…`) until it reaches a value. */
function resolve(document: OpenApiDocument, value: unknown): Json | undefined {
  return resolveRef(document, value) as Json | undefined;
}

/** A schema's first example (`examples[0]`, else `example`), following `$ref`s. */
function schemaExample(document: OpenApiDocument, schema: unknown): unknown {
  const resolved = resolve(document, schema);
  if (resolved === undefined) return undefined;
  if (Array.isArray(resolved.examples)) return resolved.examples[0];
  return resolved.example;
}

/**
 * A request the contract itself says is valid for an operation: path and required query parameters from
 * their (schemas') examples and the body from the first request body example.
 */
export function requestExample(
  operation: ContractOperation,
  document: OpenApiDocument,
): { url: string; body: unknown } {
  const parameters = ((operation.definition.parameters as unknown[] | undefined) ?? []).map((p) =>
    resolve(document, p),
  );
  let url = operation.path;
  const query = new URLSearchParams();
  for (const parameter of parameters) {
    const value = parameter?.example ?? schemaExample(document, parameter?.schema);
    if (parameter?.in === 'path') {
      url = url.replace(`{${String(parameter.name)}}`, encodeURIComponent(String(value)));
    } else if (parameter?.in === 'query' && parameter.required === true) {
      query.set(String(parameter.name), String(value));
    }
  }
  if (query.size > 0) url += `?${query}`;
  const requestBody = resolve(document, operation.definition.requestBody);
  const media = (requestBody?.content as Json | undefined)?.['application/json'] as Json | undefined;
  let body: unknown;
  if (media !== undefined) {
    const examples = media.examples as Record<string, unknown> | undefined;
    const first = examples === undefined ? undefined : resolve(document, Object.values(examples)[0]);
    body = first?.value ?? media.example ?? (requestBody?.required === true ? {} : undefined);
  }
  return { url, body };
}
