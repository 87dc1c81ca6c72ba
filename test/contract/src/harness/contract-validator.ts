import { readFileSync } from 'node:fs';
import type { ProblemCode, paths } from '@scenario-scoring/client';
import { Ajv2020 } from 'ajv/dist/2020.js';
import ajvFormats from 'ajv-formats';
import { expect } from 'vitest';
import { BUNDLE_JSON } from './workspace-paths.js';

type Node = Record<string, unknown>;

const bundle = JSON.parse(readFileSync(BUNDLE_JSON, 'utf8')) as Node;

// Every $ref of the bundle is local (`#/components/...`): registering the whole document lets Ajv follow
// them from any schema, addressed by its JSON Pointer. The document's own top-level fields (`openapi`,
// `paths`, …) are declared as keywords without meaning, so that strict mode accepts them.
const BUNDLE_ID = 'https://scenario-scoring.invalid/openapi.json';
function contractAjv(options: { coerceTypes: boolean }): Ajv2020 {
  const ajv = new Ajv2020({ allErrors: true, strict: true, strictTypes: false, ...options });
  // ajv-formats is CommonJS: its default import is `module.exports`, whose `default` is the plugin.
  ajvFormats.default(ajv);
  ajv.addVocabulary(Object.keys(bundle));
  ajv.addSchema(bundle, BUNDLE_ID);
  return ajv;
}
const bodies = contractAjv({ coerceTypes: false });
// A header is text on the wire; an integer header (Retry-After) is checked as the number it spells.
const headers = contractAjv({ coerceTypes: true });

/** The fixed title of each problem code (the error guide's); `satisfies` makes a new code fail typecheck until listed. */
const PROBLEM_TITLES: Record<string, string> = {
  validation_failed: 'Request validation failed',
  malformed_json: 'Malformed JSON',
  missing_api_key: 'API key missing',
  invalid_api_key: 'API key invalid',
  insufficient_scope: 'Insufficient scope',
  quota_exceeded: 'Quota exceeded',
  not_found: 'Not found',
  method_not_allowed: 'Method not allowed',
  payload_too_large: 'Payload too large',
  unsupported_media_type: 'Unsupported media type',
  idempotency_key_reused: 'Idempotency key reused',
  idempotent_replay_unavailable: 'Idempotent replay unavailable',
  unknown_event_type: 'Unknown event type',
  webhook_url_refused: 'Webhook URL refused',
  webhook_limit_reached: 'Webhook limit reached',
  rate_limited: 'Rate limited',
  internal_error: 'Internal error',
  service_unavailable: 'Service unavailable',
  storage_unavailable: 'Storage unavailable',
  run_deadline_exceeded: 'Run deadline exceeded',
  checkpoint_not_found: 'Checkpoint not found',
  log_record_not_sequenced: 'Log record not sequenced',
  log_record_erased: 'Log record erased',
  tree_size_too_small: 'Tree size too small',
  malformed_request: 'Malformed request',
  headers_too_large: 'Headers too large',
  request_timeout: 'Request timeout',
  expectation_failed: 'Expectation failed',
  unknown_jurisdiction: 'Unknown jurisdiction',
  notice_unavailable: 'Notice unavailable',
} satisfies Record<ProblemCode, string>;

const escapeSegment = (segment: string) => segment.replaceAll('~', '~0').replaceAll('/', '~1');

/** Follows a local `$ref` (if any) and returns the node with its JSON Pointer in the bundle. */
function deref(node: Node, pointer: string): { node: Node; pointer: string } {
  const ref = node.$ref;
  if (typeof ref !== 'string') return { node, pointer };
  const target = ref
    .slice(2)
    .split('/')
    .map((s) => s.replaceAll('~1', '/').replaceAll('~0', '~'))
    .reduce<Node>((at, segment) => at[segment] as Node, bundle);
  return deref(target, ref.slice(1));
}

function schemaErrors(ajv: Ajv2020, pointer: string, value: unknown): string[] {
  const fragment = pointer.split('/').map(encodeURIComponent).join('/');
  const validate = ajv.getSchema(`${BUNDLE_ID}#${fragment}`);
  if (!validate) throw new Error(`no schema at ${pointer}`);
  if (validate(value)) return [];
  return (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message}`);
}

/** A path of the contract and one of its methods. */
export interface ContractOperation {
  path: keyof paths & string;
  method: 'get' | 'post' | 'patch' | 'delete';
}

/**
 * Asserts that a response is one the contract documents for the operation: a documented status, every
 * header the contract declares for it present and valid, the declared media type, and a body valid against
 * its schema. A problem must also say its own status, link to its code's entry in the error guide, carry
 * its code's title and quote the response's request id.
 */
export function expectDocumentedResponse(
  operation: ContractOperation,
  response: Response,
  body: unknown,
): void {
  const { method, path } = operation;
  const where = `${method.toUpperCase()} ${path} → ${response.status}`;
  const operationPointer = `/paths/${escapeSegment(path)}/${method}`;
  const operationNode = ((bundle.paths as Node)[path] as Node | undefined)?.[method] as Node | undefined;
  if (operationNode === undefined) throw new Error(`the contract has no ${method.toUpperCase()} ${path}`);
  const responses = operationNode.responses as Node;
  const status = String(response.status);
  const declared = (responses[status] ?? responses.default) as Node | undefined;
  expect(declared, `${where}: the contract documents no ${status} for this operation`).toBeDefined();
  const documented = deref(
    declared as Node,
    `${operationPointer}/responses/${status in responses ? status : 'default'}`,
  );

  for (const [name, header] of Object.entries((documented.node.headers ?? {}) as Record<string, Node>)) {
    const value = response.headers.get(name);
    const declaredHeader = deref(header, `${documented.pointer}/headers/${escapeSegment(name)}`);
    // Declared headers come with every response, except those the contract marks `required: false`.
    if (value === null && declaredHeader.node.required === false) continue;
    expect(value, `${where}: the contract declares a ${name} header`).not.toBeNull();
    expect(
      schemaErrors(headers, `${declaredHeader.pointer}/schema`, value),
      `${where}: header ${name}: ${value}`,
    ).toEqual([]);
  }

  const content = (documented.node.content ?? {}) as Record<string, Node>;
  if (Object.keys(content).length === 0) {
    // A response without content (204): nothing may come with it.
    expect(body ?? '', `${where}: a response without content has no body`).toEqual('');
    return;
  }
  const mediaType = (response.headers.get('Content-Type') ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
  expect(Object.keys(content), `${where}: Content-Type ${mediaType}`).toContain(mediaType);
  const schemaPointer = `${documented.pointer}/content/${escapeSegment(mediaType)}/schema`;
  expect(schemaErrors(bodies, schemaPointer, body), `${where}: ${JSON.stringify(body)}`).toEqual([]);

  if (mediaType === 'application/problem+json') expectConsistentProblem(where, response, body);
}

function expectConsistentProblem(where: string, response: Response, body: unknown): void {
  const problem = body as { type: string; title: string; status: number; code: string; request_id?: string };
  expect(problem.status, `${where}: the problem's status`).toBe(response.status);
  expect(problem.type, `${where}: the problem's type`).toBe(`/docs#section/errors/${problem.code}`);
  expect(problem.title, `${where}: the title of ${problem.code}`).toBe(PROBLEM_TITLES[problem.code]);
  expect(problem.request_id, `${where}: the problem's request_id`).toBe(response.headers.get('X-Request-Id'));
}

/**
 * Asserts that a response outside every documented operation (an unknown path) is still the API's
 * problem: `application/problem+json`, valid against the contract's Problem schema, with an X-Request-Id.
 */
export function expectUndocumentedProblem(response: Response, body: unknown): void {
  const where = `${response.status} for ${response.url}`;
  expect(response.headers.get('X-Request-Id'), `${where}: X-Request-Id`).toMatch(/^[A-Za-z0-9._:-]{1,128}$/);
  expect(response.headers.get('Content-Type')?.split(';')[0]).toBe('application/problem+json');
  expect(
    schemaErrors(bodies, '/components/schemas/Problem', body),
    `${where}: ${JSON.stringify(body)}`,
  ).toEqual([]);
  expectConsistentProblem(where, response, body);
}

/** The request body example of an operation, by name. */
export function requestExample(
  operation: ContractOperation,
  name: string,
  mediaType = 'application/json',
): unknown {
  const { method, path } = operation;
  const requestBody = (((bundle.paths as Node)[path] as Node)[method] as Node).requestBody as Node;
  const media = (requestBody.content as Record<string, Node>)[mediaType] as Node;
  const example = (media.examples as Record<string, Node>)[name];
  if (example === undefined)
    throw new Error(`no request example ${name} for ${method.toUpperCase()} ${path}`);
  return deref(example, '').node.value;
}
