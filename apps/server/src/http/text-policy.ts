import type { ValidationError } from '@scenario-scoring/api-types';
import type { RequestHandler } from 'express';
import { AppError } from '../errors/app-error.js';
import { validationDetail } from '../errors/error-translation.js';

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

/** JSON Pointer escaping of one reference token (RFC 6901). */
function pointerToken(key: string): string {
  return key.replaceAll('~', '~0').replaceAll('/', '~1');
}

/** Collects every string (and key) of `value` that breaks the policy, as `{path, message}`. */
export function collectTextViolations(value: unknown, path: string, into: ValidationError[]): void {
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

/** Query and path integers are decimal only: `limit=0x10`, `1e1` or ` 16` would otherwise be coerced to numbers. */
const DECIMAL_INTEGER = /^-?[0-9]+$/;

/**
 * Enforces the text policy on the parsed body and the query (runs after the body parser, before the
 * contract validator), and requires the integer query parameters `integerQuery` names, and the integer
 * path parameters of `integerPaths`, to be decimal.
 * Every violation is listed in one 400 `validation_failed`.
 */
export function textPolicy(
  integerQuery: ReadonlySet<string>,
  integerPaths: readonly IntegerPathTemplate[] = [],
): RequestHandler {
  return (req, _res, next) => {
    const errors: ValidationError[] = [];
    const method = req.method === 'HEAD' ? 'GET' : req.method;
    for (const template of integerPaths) {
      const match = template.method === method ? template.pattern.exec(req.path) : null;
      for (const [i, name] of template.names.entries()) {
        const segment = match?.[i + 1];
        if (segment !== undefined && template.integers.has(name) && !DECIMAL_INTEGER.test(decoded(segment)))
          errors.push({ path: `/path/${name}`, message: 'must be a decimal integer' });
      }
    }
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
    if (req.body !== undefined) collectTextViolations(req.body, '/body', errors);
    if (errors.length > 0)
      throw new AppError('validation_failed', { detail: validationDetail(errors), errors });
    next();
  };
}

/**
 * The names of the contract's integer query parameters (`limit`, `tree_size`), following `$ref`s to
 * `components/parameters` and, for their schema, to `components/schemas`.
 */
export function integerQueryParameters(
  operations: readonly { definition: Readonly<Record<string, unknown>> }[],
  components: Readonly<Record<string, unknown>> | undefined,
): Set<string> {
  const names = new Set<string>();
  for (const { definition } of operations) {
    for (const entry of (definition.parameters as Record<string, unknown>[] | undefined) ?? []) {
      const parameter = resolveParameter(entry, components);
      if (parameter?.in === 'query' && parameter.name && integerSchema(parameter, components))
        names.add(parameter.name);
    }
  }
  return names;
}

type Parameter = { in?: string; name?: string; schema?: { type?: unknown; $ref?: unknown } };

/** The parameter itself, or the `components/parameters` entry its `$ref` names. */
function resolveParameter(
  entry: Record<string, unknown>,
  components: Readonly<Record<string, unknown>> | undefined,
): Parameter | undefined {
  const ref = typeof entry.$ref === 'string' ? entry.$ref : undefined;
  return (
    ref ? (components?.parameters as Record<string, unknown>)?.[ref.split('/').pop() as string] : entry
  ) as Parameter | undefined;
}

/** Whether the parameter's schema, inline or a `$ref` to `components/schemas` (the log's `TreeSize`), is an integer. */
function integerSchema(parameter: Parameter, components: Readonly<Record<string, unknown>> | undefined) {
  const ref = parameter.schema?.$ref;
  const schema = (
    typeof ref === 'string'
      ? (components?.schemas as Record<string, unknown>)?.[ref.split('/').pop() as string]
      : parameter.schema
  ) as { type?: unknown } | undefined;
  return schema?.type === 'integer';
}

/** An operation with integer path parameters: its path, capturing every parameter's segment in order. */
export interface IntegerPathTemplate {
  method: string;
  pattern: RegExp;
  /** Every path parameter's name, in the order of the pattern's groups. */
  names: string[];
  integers: ReadonlySet<string>;
}

const decoded = (segment: string) => {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
};

/** The operations whose path has integer parameters (`/v1/log/tiles/{level}/{index}`), as matchers. */
export function integerPathParameters(
  operations: readonly { method: string; path: string; definition: Readonly<Record<string, unknown>> }[],
  components: Readonly<Record<string, unknown>> | undefined,
): IntegerPathTemplate[] {
  const templates: IntegerPathTemplate[] = [];
  for (const { method, path, definition } of operations) {
    const integers = new Set<string>();
    for (const entry of (definition.parameters as Record<string, unknown>[] | undefined) ?? []) {
      const parameter = resolveParameter(entry, components);
      if (parameter?.in === 'path' && parameter.name && integerSchema(parameter, components))
        integers.add(parameter.name);
    }
    if (integers.size === 0) continue;
    const names = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1] as string);
    const source = path
      .split(/\{[^}]+\}/)
      .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
      .join('([^/]+)');
    templates.push({ method: method.toUpperCase(), pattern: new RegExp(`^${source}/?$`), names, integers });
  }
  return templates;
}
