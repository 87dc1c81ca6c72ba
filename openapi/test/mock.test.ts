import { type PrismServer, randomApiKey, snapshotFile, startPrism } from '@scenario-scoring/testkit';
import { Ajv2020 } from 'ajv/dist/2020.js';
import ajvFormats from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  BUNDLE_YAML,
  deref,
  examplesOf,
  loadBundle,
  type Node,
  type Operation,
  operationsOf,
  pointerSegment,
} from './contract-bundle.js';

// Prism watches its document and restarts when it changes: serve a private copy, so that a rebuild of
// dist/ during the run cannot restart it, and read that same copy.
const snapshot = snapshotFile(BUNDLE_YAML);
const bundle = loadBundle(snapshot.path);
const operations = operationsOf(bundle, 'paths');

const API_KEY = randomApiKey();
const PROBLEM_JSON = 'application/problem+json';

// Every $ref of the bundle is local (`#/components/...`): registering the whole document lets Ajv follow
// them from any schema, addressed by its JSON Pointer in the document. Its top-level OpenAPI fields
// (`openapi`, `paths`, `components`…) are declared as keywords without meaning, so strict mode accepts them.
const BUNDLE_ID = 'https://scenario-scoring.invalid/openapi.json';
const ajv = new Ajv2020({ allErrors: true, strict: true, strictTypes: false });
// ajv-formats is CommonJS: its default import is `module.exports`, whose `default` is the plugin.
ajvFormats.default(ajv);
ajv.addVocabulary(Object.keys(bundle));
ajv.addSchema(bundle as object, BUNDLE_ID);

/** Validates `value` against the schema at `pointer` in the bundle; returns Ajv's errors, if any. */
function schemaErrors(pointer: string, value: unknown): string[] {
  const fragment = pointer.split('/').map(encodeURIComponent).join('/');
  const validate = ajv.getSchema(`${BUNDLE_ID}#${fragment}`);
  if (!validate) throw new Error(`no schema at ${pointer}`);
  return validate(value) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message}`);
}

/** The example value of a parameter: its own example, else its schema's first example or default. */
function parameterExample(parameter: Node, pointer: string): unknown {
  if (parameter.example !== undefined) return parameter.example;
  const named = examplesOf(bundle, parameter, pointer)[0];
  if (named) return named.value;
  const schema = deref(bundle, (parameter.schema ?? {}) as Node, `${pointer}/schema`).node;
  return (schema.examples as unknown[] | undefined)?.[0] ?? schema.example ?? schema.default;
}

/** Whether an operation needs an API key, by its own security requirements, else the document's. */
function isSecured(operation: Operation): boolean {
  const requirements = (operation.node.security ?? bundle.security ?? []) as Node[];
  return requirements.some((requirement) => Object.keys(requirement).length > 0);
}

interface RequestOptions {
  authorized?: boolean;
  prefer?: string;
  accept?: string;
  /** Replaces the request example as the JSON body. */
  body?: unknown;
}

/** Sends the operation's documented request: path parameters and body from its examples. */
async function send(prism: PrismServer, operation: Operation, options: RequestOptions = {}) {
  const pathItem = bundle.paths[operation.key] as Node;
  const itemPointer = `/paths/${pointerSegment(operation.key)}`;
  const parameters = [
    ...((pathItem.parameters ?? []) as Node[]).map((p, i) =>
      deref(bundle, p, `${itemPointer}/parameters/${i}`),
    ),
    ...((operation.node.parameters ?? []) as Node[]).map((p, i) =>
      deref(bundle, p, `${operation.pointer}/parameters/${i}`),
    ),
  ];
  let path = operation.key;
  const query = new URLSearchParams();
  const headers: Record<string, string> = {};
  for (const { node: parameter, pointer } of parameters) {
    const name = String(parameter.name);
    if (parameter.in !== 'path' && !parameter.required) continue;
    const value = parameterExample(parameter, pointer);
    if (value === undefined) throw new Error(`${operation.operationId}: no example for parameter ${name}`);
    if (parameter.in === 'path') path = path.replace(`{${name}}`, encodeURIComponent(String(value)));
    if (parameter.in === 'query') query.set(name, String(value));
    if (parameter.in === 'header') headers[name] = String(value);
  }
  let body = options.body;
  if (body === undefined && operation.node.requestBody) {
    const requestBody = deref(bundle, operation.node.requestBody as Node, `${operation.pointer}/requestBody`);
    const json = (requestBody.node.content as Record<string, Node>)['application/json'] as Node;
    const example = examplesOf(bundle, json, `${requestBody.pointer}/content/application~1json`)[0];
    if (!example) throw new Error(`${operation.operationId}: the request body has no example`);
    body = example.value;
  }
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (options.authorized !== false && isSecured(operation)) headers.Authorization = `Bearer ${API_KEY}`;
  if (options.prefer) headers.Prefer = options.prefer;
  if (options.accept) headers.Accept = options.accept;
  const search = query.size > 0 ? `?${query}` : '';
  const response = await fetch(`${prism.baseUrl}${path}${search}`, {
    method: operation.method.toUpperCase(),
    headers,
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { response, text };
}

/** Checks an answer against a documented response: media type, body schema, and declared headers. */
function expectAnswerMatches(answer: { response: Response; text: string }, responseRef: Node, at: string) {
  const { node: documented, pointer } = deref(bundle, responseRef, at);
  const content = (documented.content ?? {}) as Record<string, Node>;
  const mediaTypes = Object.keys(content);
  if (mediaTypes.length === 0) {
    expect(answer.text, 'a response without content has no body').toBe('');
  } else {
    const mediaType = answer.response.headers.get('content-type')?.split(';')[0]?.trim().toLowerCase();
    expect(mediaTypes, 'the answer is of a documented media type').toContain(mediaType);
    // A JSON body is parsed; any other (the notice's text/html page) is checked as the string it is.
    const body: unknown = isJson(String(mediaType)) ? JSON.parse(answer.text) : answer.text;
    const schemaAt = `${pointer}/content/${pointerSegment(String(mediaType))}/schema`;
    expect(schemaErrors(schemaAt, body), `the body matches ${schemaAt}`).toEqual([]);
  }
  for (const [name, headerRef] of Object.entries((documented.headers ?? {}) as Record<string, Node>)) {
    const header = deref(bundle, headerRef, `${pointer}/headers/${pointerSegment(name)}`);
    const value = answer.response.headers.get(name);
    // Sent only on a replay, and the mock keeps no state: nothing it answers is a replay.
    if (name === 'Idempotent-Replayed') {
      expect(value, 'a mock answer is never a replay').toBeNull();
      continue;
    }
    expect(value, `the documented header ${name}`).not.toBeNull();
    const schema = deref(bundle, header.node.schema as Node, `${header.pointer}/schema`).node;
    const typed = schema.type === 'integer' || schema.type === 'number' ? Number(value) : value;
    expect(schemaErrors(`${header.pointer}/schema`, typed), `the header ${name}: ${value}`).toEqual([]);
  }
}

function responsesOf(operation: Operation): [string, Node][] {
  return Object.entries(operation.node.responses as Record<string, Node>);
}

function firstSuccess(operation: Operation): string {
  const statuses = responsesOf(operation).map(([status]) => status);
  const success = statuses.filter((status) => /^2\d\d$/.test(status)).sort()[0];
  if (!success) throw new Error(`${operation.operationId} documents no 2xx response`);
  return success;
}

/** Whether a media type is JSON (`application/json`, `application/problem+json`). */
function isJson(mediaType: string): boolean {
  return /^application\/(.+\+)?json$/.test(mediaType);
}

interface ExampleCase {
  title: string;
  operation: Operation;
  status: string;
  mediaType: string;
  example: { name: string; value: unknown } | undefined;
}

/** One case per documented response, media type and named example (or one per media type without any). */
const exampleCases: ExampleCase[] = operations.flatMap((operation) =>
  responsesOf(operation).flatMap(([status, responseRef]) => {
    const at = `${operation.pointer}/responses/${status}`;
    const { node: response, pointer } = deref(bundle, responseRef, at);
    return Object.entries((response.content ?? {}) as Record<string, Node>).flatMap(([mediaType, media]) => {
      const examples = examplesOf(bundle, media, `${pointer}/content/${pointerSegment(mediaType)}`);
      const named = examples.length > 0 ? examples : [undefined];
      return named.map((example) => ({
        title: `${operation.operationId} ${status} ${example?.name ?? mediaType}`,
        operation,
        status,
        mediaType,
        example,
      }));
    });
  }),
);

const securedOperations = operations.filter(isSecured);
const scoreSubject = operations.find((operation) => operation.operationId === 'scoreSubject') as Operation;
const operationsWithBody = operations.filter((operation) => operation.node.requestBody !== undefined);

let prism: PrismServer;

beforeAll(async () => {
  prism = await startPrism(snapshot.path);
});

afterAll(async () => {
  await prism?.stop();
  snapshot.remove();
});

describe('the Prism mock of the contract', () => {
  it.each(operations.map((operation) => ({ ...operation, verb: operation.method.toUpperCase() })))(
    'answers a valid $verb $key ($operationId) with its first 2xx, as documented',
    async (operation) => {
      const status = firstSuccess(operation);
      const answer = await send(prism, operation);
      expect(answer.response.headers.get('sl-violations'), 'Prism found the request valid').toBeNull();
      expect(answer.response.status, answer.text).toBe(Number(status));
      const responseRef = (operation.node.responses as Record<string, Node>)[status] as Node;
      expectAnswerMatches(answer, responseRef, `${operation.pointer}/responses/${status}`);
    },
  );

  it.each(exampleCases)(
    'answers Prefer: code, example with the documented example: $title',
    async ({ operation, status, mediaType, example }) => {
      const prefer = example ? `code=${status}, example=${example.name}` : `code=${status}`;
      const answer = await send(prism, operation, { prefer, accept: mediaType });
      expect(answer.response.status, answer.text).toBe(Number(status));
      expect(answer.response.headers.get('content-type')?.split(';')[0]).toBe(mediaType);
      if (example)
        expect(isJson(mediaType) ? JSON.parse(answer.text) : answer.text).toStrictEqual(example.value);
      const responseRef = (operation.node.responses as Record<string, Node>)[status] as Node;
      expectAnswerMatches(answer, responseRef, `${operation.pointer}/responses/${status}`);
    },
  );

  it.each(securedOperations)(
    'answers $operationId without Authorization with 401 and the documented missing_api_key example',
    async (operation) => {
      const answer = await send(prism, operation, { authorized: false });
      expect(answer.response.status, answer.text).toBe(401);
      expect(answer.response.headers.get('content-type')?.split(';')[0]).toBe(PROBLEM_JSON);
      const unauthorized = (operation.node.responses as Record<string, Node>)['401'] as Node;
      const { node, pointer } = deref(bundle, unauthorized, `${operation.pointer}/responses/401`);
      // Prism answers a failed security check with the first example of the 401 response.
      const media = (node.content as Record<string, Node>)[PROBLEM_JSON] as Node;
      const first = examplesOf(bundle, media, `${pointer}/content/${pointerSegment(PROBLEM_JSON)}`)[0];
      expect(first?.value).toMatchObject({ code: 'missing_api_key', status: 401 });
      expect(JSON.parse(answer.text)).toStrictEqual(first?.value);
      expectAnswerMatches(answer, unauthorized, `${operation.pointer}/responses/401`);
    },
  );

  it('answers an invalid score request with a 400 validation_failed problem', async () => {
    const answer = await send(prism, scoreSubject, { body: { subject: '' } });
    expect(answer.response.status, answer.text).toBe(400);
    expect(answer.response.headers.get('content-type')?.split(';')[0]).toBe(PROBLEM_JSON);
    expect(answer.response.headers.get('sl-violations'), 'Prism lists what it found invalid').not.toBeNull();
    const problem = JSON.parse(answer.text) as { code?: string };
    expect(schemaErrors('/components/schemas/Problem', problem)).toEqual([]);
    expect(problem.code).toBe('validation_failed');
  });

  // Prism alone answers an invalid request with the operation's 422 example when it documents one (an
  // idempotency or webhook-URL refusal), else its first 400 example; the mock's front answers as the server
  // does: 400 validation_failed naming the fields.
  it.each(operationsWithBody)(
    'answers an invalid body to $operationId as the server does: 400 validation_failed naming /body',
    async (operation) => {
      const answer = await send(prism, operation, { body: [] });
      expect(answer.response.status, answer.text).toBe(400);
      expect(answer.response.headers.get('content-type')?.split(';')[0]).toBe(PROBLEM_JSON);
      const problem = JSON.parse(answer.text);
      expect(schemaErrors('/components/schemas/Problem', problem)).toEqual([]);
      expect(problem).toMatchObject({ code: 'validation_failed', errors: [{ path: '/body' }] });
    },
  );
});
