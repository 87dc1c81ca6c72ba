import type { ValidationError } from '@scenario-scoring/api-types';
import type { RequestHandler } from 'express';
import { AppError } from '../errors/app-error.js';
import { validationDetail } from '../errors/validation-detail.js';

/**
 * The one text policy of the API (stated in the contract's error guide): a string, and an object key,
 * may contain any Unicode scalar value except U+0000. A lone surrogate (`"\ud800"` without its pair)
 * is not a character at all: it cannot be encoded as UTF-8, so it could be neither logged nor
 * canonicalised. NUL is refused because PostgreSQL cannot store it in text, and the API answers the same
 * on both databases. Checked at the edge so no database ever discovers it.
 */
// With the `u` flag a surrogate pair is one code point, so the class matches lone surrogates only.
// biome-ignore lint/suspicious/noControlCharactersInRegex: NUL is exactly what this looks for.
const FORBIDDEN = /\u0000|[\ud800-\udfff]/u;
// biome-ignore lint/suspicious/noControlCharactersInRegex: as above.
const FORBIDDEN_ALL = /\u0000|[\ud800-\udfff]/gu;

/** Why `text` breaks the policy, or undefined when it does not. */
export function textPolicyViolation(text: string): string | undefined {
  const match = FORBIDDEN.exec(text);
  if (match === null) return undefined;
  if (match[0] === '\u0000') return `contains U+0000 (NUL) at index ${match.index}, which is not accepted`;
  return `contains a lone surrogate (U+${match[0].charCodeAt(0).toString(16).toUpperCase()}) at index ${match.index}, which is not a Unicode character`;
}

/** The most violations one problem lists: a body of a million bad strings needs no million lines. */
const MAX_LISTED = 20;

/** JSON Pointer escaping of one reference token (RFC 6901), as the contract validator writes its paths. */
export function pointerToken(key: string): string {
  return key.replaceAll('~', '~0').replaceAll('/', '~1');
}

/**
 * Whether any string or key of `value` breaks the policy. Nearly every body passes, so the check walks it
 * first without making a JSON Pointer per string and key (a run of 1,000 items has about 10,000 of them);
 * only a body that breaks it is walked again to name where.
 */
export function hasTextViolation(value: unknown): boolean {
  // An explicit stack, as below.
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const current = stack.pop();
    if (typeof current === 'string') {
      if (FORBIDDEN.test(current)) return true;
    } else if (Array.isArray(current)) {
      for (const element of current) stack.push(element);
    } else if (typeof current === 'object' && current !== null) {
      for (const key of Object.keys(current)) {
        if (FORBIDDEN.test(key)) return true;
        stack.push((current as Record<string, unknown>)[key]);
      }
    }
  }
  return false;
}

/** Collects every string (and key) of `value` that breaks the policy, as `{path, message}`. */
export function collectTextViolations(value: unknown, path: string, into: ValidationError[]): void {
  if (!hasTextViolation(value)) return;
  // An explicit stack: a deeply nested body must not overflow the call stack.
  const stack: [unknown, string][] = [[value, path]];
  while (stack.length > 0 && into.length < MAX_LISTED) {
    const [current, at] = stack.pop() as [unknown, string];
    if (typeof current === 'string') {
      const problem = textPolicyViolation(current);
      if (problem !== undefined) into.push({ path: at, message: problem });
    } else if (Array.isArray(current)) {
      for (let i = current.length - 1; i >= 0; i--) stack.push([current[i], `${at}/${i}`]);
    } else if (typeof current === 'object' && current !== null) {
      const keys = Object.keys(current);
      for (let i = keys.length - 1; i >= 0; i--) {
        const key = keys[i] as string;
        const problem = textPolicyViolation(key);
        // A bad key cannot be named faithfully; its path shows it with the bad unit replaced.
        const shown = `${at}/${pointerToken(key.replace(FORBIDDEN_ALL, '\ufffd'))}`;
        if (problem !== undefined) into.push({ path: shown, message: `key ${problem}` });
        stack.push([(current as Record<string, unknown>)[key], shown]);
      }
    }
  }
}

/** Query integers are decimal only: `limit=0x10`, `1e1` or ` 16` would otherwise be coerced to numbers. */
const DECIMAL_INTEGER = /^-?[0-9]+$/;

/** Where an operation's integer path parameters sit: the `/`-separated segments of its template. */
export type IntegerPathSegments = ReadonlyMap<string, readonly { index: number; name: string }[]>;

/**
 * Enforces the text policy on the parsed body and the query (runs after the body parser, before the
 * contract validator), and requires the integer query parameters `integerQuery` names, and the integer
 * path parameters `integerPath` places, to be decimal (the validator would coerce `0x10` or `1e3`).
 * Every violation is listed in one 400 `validation_failed`.
 */
export function textPolicy(
  integerQuery: ReadonlySet<string>,
  integerPath: IntegerPathSegments = new Map(),
): RequestHandler {
  return (req, res, next) => {
    const errors: ValidationError[] = [];
    for (const [name, value] of Object.entries(req.query)) {
      const values = Array.isArray(value) ? value : [value];
      for (const item of values) {
        if (typeof item !== 'string') continue;
        const problem = textPolicyViolation(item);
        if (problem !== undefined) errors.push({ path: `/query/${name}`, message: problem });
        else if (integerQuery.has(name) && !DECIMAL_INTEGER.test(item))
          errors.push({ path: `/query/${name}`, message: 'must be a decimal integer' });
      }
    }
    const segments = integerPath.get(res.locals.operationId ?? '');
    if (segments !== undefined) {
      const parts = req.path.split('/');
      for (const { index, name } of segments) {
        // Percent-encoded digits are not digits either: the raw segment must be decimal.
        if (!DECIMAL_INTEGER.test(parts[index] ?? ''))
          errors.push({ path: `/path/${name}`, message: 'must be a decimal integer' });
      }
    }
    if (req.body !== undefined) collectTextViolations(req.body, '/body', errors);
    if (errors.length > 0)
      throw new AppError('validation_failed', { detail: validationDetail(errors), errors });
    next();
  };
}

interface ParameterObject {
  in?: string;
  name?: string;
  schema?: { type?: unknown; $ref?: unknown };
}

/** A parameter with its `$ref` (to `components/parameters`) and its schema's `$ref` (to `components/schemas`) followed. */
function resolvedParameters(
  definition: Readonly<Record<string, unknown>>,
  components: Readonly<Record<string, unknown>> | undefined,
): ParameterObject[] {
  const lastSegment = (ref: string) => ref.split('/').pop() as string;
  const parameters: ParameterObject[] = [];
  for (const entry of (definition.parameters as Record<string, unknown>[] | undefined) ?? []) {
    const ref = typeof entry.$ref === 'string' ? entry.$ref : undefined;
    const parameter = (
      ref ? (components?.parameters as Record<string, unknown>)?.[lastSegment(ref)] : entry
    ) as ParameterObject | undefined;
    if (parameter === undefined) continue;
    let schema = parameter.schema;
    // A shared schema (`TreeSize`) is a `$ref`, possibly to another `$ref`; a few hops at most.
    for (let hop = 0; hop < 8 && typeof schema?.$ref === 'string'; hop++)
      schema = (components?.schemas as Record<string, ParameterObject['schema']>)?.[lastSegment(schema.$ref)];
    parameters.push({ ...parameter, schema });
  }
  return parameters;
}

/** The names of the contract's integer query parameters (`limit`, `from`), following `$ref`s. */
export function integerQueryParameters(
  operations: readonly { definition: Readonly<Record<string, unknown>> }[],
  components: Readonly<Record<string, unknown>> | undefined,
): Set<string> {
  const names = new Set<string>();
  for (const { definition } of operations)
    for (const parameter of resolvedParameters(definition, components))
      if (parameter.in === 'query' && parameter.schema?.type === 'integer' && parameter.name)
        names.add(parameter.name);
  return names;
}

/** Per operationId, the template segments of its integer path parameters (`/v1/log/tiles/{level}/{index}`). */
export function integerPathParameters(
  operations: readonly { operationId: string; path: string; definition: Readonly<Record<string, unknown>> }[],
  components: Readonly<Record<string, unknown>> | undefined,
): Map<string, { index: number; name: string }[]> {
  const places = new Map<string, { index: number; name: string }[]>();
  for (const { operationId, path, definition } of operations) {
    const integers = new Set(
      resolvedParameters(definition, components)
        .filter((p) => p.in === 'path' && p.schema?.type === 'integer' && p.name)
        .map((p) => p.name as string),
    );
    const segments = path
      .split('/')
      .map((segment, index) => ({ index, name: segment.slice(1, -1) }))
      .filter(({ name }) => integers.has(name));
    if (segments.length > 0) places.set(operationId, segments);
  }
  return places;
}
