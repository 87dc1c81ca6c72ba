import type { ValidationError } from '@scenario-scoring/api-types';
import type { RequestHandler } from 'express';
import { type OpenApiDocument, resolveRef } from '../common/contract.js';
import { AppError } from '../errors/app-error.js';
import { MAX_PROBLEM_ERRORS } from '../errors/problem.js';
import { validationDetail } from '../errors/validation-detail.js';
import { pointerToken } from '../transport/text-policy.js';
import type { ContractOperation } from './contract-routes.js';

/**
 * What the contract lets a request body hold, as far as its members and arrays go: for an object, the
 * members it names (`members`, when the schema closes it with `additionalProperties: false`; absent when it
 * does not, so any member passes); for an array, its items' shape (absent: not checked) and its `maxItems`.
 */
export interface BodyShape {
  members?: Map<string, BodyShape>;
  items?: BodyShape;
  maxItems?: number;
}

/** The message the contract validator gives an unknown member, so that both answers read the same. */
export const UNKNOWN_MEMBER = 'must NOT have additional properties';

/** Keywords that make what a schema accepts more than its own `properties` say: such a schema is not checked here. */
const COMPOSING = [
  'allOf',
  'oneOf',
  'anyOf',
  'not',
  'if',
  'patternProperties',
  'dependentSchemas',
  'unevaluatedProperties',
];

type Schema = Readonly<Record<string, unknown>>;

/**
 * What a walk of a body found against its shape: the members the shape does not name (how many, and the
 * first `MAX_PROBLEM_ERRORS` with the JSON Pointer of the object holding each), and the first array longer
 * than its `maxItems` (the walk stops there).
 */
export interface ShapeViolations {
  unknownCount: number;
  unknown: { at: string; name: string }[];
  tooLong?: { at: string; maxItems: number };
}

/** `object` with its `$ref`s followed (`{}` when one leads nowhere or outside the document). */
function resolved(document: OpenApiDocument, object: Schema): Schema {
  return resolveRef(document, object) ?? {};
}

/**
 * A builder of shapes from the schemas of `document`, `$ref`s followed. Only plain schemas are shaped: one
 * that composes others (`oneOf`, `allOf`, …) gets an empty shape, so nothing under it is ever refused here
 * (the validator still checks it all); the contract's request bodies have none today (unknown-members.test.ts
 * checks that they are shaped to the leaves).
 */
export function shapeBuilder(document: OpenApiDocument): (schema: Schema) => BodyShape {
  const built = new Map<Schema, BodyShape>();
  const resolve = (schema: Schema) => resolved(document, schema);
  const shapeOf = (raw: Schema): BodyShape => {
    const schema = resolve(raw);
    const known = built.get(schema);
    if (known !== undefined) return known;
    const shape: BodyShape = {};
    // Kept before its members are built, so a recursive schema ends.
    built.set(schema, shape);
    if (COMPOSING.some((keyword) => schema[keyword] !== undefined)) return shape;
    if (schema.additionalProperties === false) {
      const properties = (schema.properties ?? {}) as Record<string, Schema>;
      shape.members = new Map(Object.entries(properties).map(([name, member]) => [name, shapeOf(member)]));
    }
    if (typeof schema.items === 'object' && schema.items !== null)
      shape.items = shapeOf(schema.items as Schema);
    if (typeof schema.maxItems === 'number') shape.maxItems = schema.maxItems;
    return shape;
  };
  return (schema) => shapeOf(resolve(schema));
}

/** Each operation's JSON request body shape (operationId → shape), from the contract. */
export function requestBodyShapes(
  operations: readonly ContractOperation[],
  document: OpenApiDocument,
): Map<string, BodyShape> {
  const shapeOf = shapeBuilder(document);
  const shapes = new Map<string, BodyShape>();
  for (const { operationId, definition } of operations) {
    const body = definition.requestBody as Schema | undefined;
    if (body === undefined) continue;
    const content = resolved(document, body).content as Record<string, { schema?: Schema }> | undefined;
    const schema = content?.['application/json']?.schema;
    if (schema !== undefined) shapes.set(operationId, shapeOf(schema));
  }
  return shapes;
}

/** A JSON Pointer of the tokens of `path` (member names escaped, indexes as they are). */
function pointerOf(path: readonly (string | number)[]): string {
  let pointer = '';
  for (const token of path) pointer += `/${typeof token === 'number' ? token : pointerToken(token)}`;
  return pointer;
}

/**
 * Walks `value` against `shape` into `found`: only into known members and checked arrays, so the depth is
 * the schema's; a path string is made only for what is listed (a valid 1,000-item run costs no string per
 * member). Returns false once an array is too long: the walk stops there.
 */
function walk(value: unknown, shape: BodyShape, path: (string | number)[], found: ShapeViolations): boolean {
  if (value === null || typeof value !== 'object') return true;
  if (Array.isArray(value)) {
    if (shape.maxItems !== undefined && value.length > shape.maxItems) {
      found.tooLong = { at: pointerOf(path), maxItems: shape.maxItems };
      return false;
    }
    const items = shape.items;
    if (items === undefined) return true;
    for (let i = 0; i < value.length; i++) {
      path.push(i);
      const goOn = walk(value[i], items, path, found);
      path.pop();
      if (!goOn) return false;
    }
    return true;
  }
  const members = shape.members;
  if (members === undefined) return true;
  const record = value as Record<string, unknown>;
  for (const name in record) {
    const member = members.get(name);
    if (member === undefined) {
      found.unknownCount++;
      if (found.unknown.length < MAX_PROBLEM_ERRORS) found.unknown.push({ at: pointerOf(path), name });
      continue;
    }
    path.push(name);
    const goOn = walk(record[name], member, path, found);
    path.pop();
    if (!goOn) return false;
  }
  return true;
}

/** What `value` breaks of `shape`: its unknown members and the first array past its `maxItems`. */
export function shapeViolations(value: unknown, shape: BodyShape): ShapeViolations {
  const found: ShapeViolations = { unknownCount: 0, unknown: [] };
  walk(value, shape, [], found);
  return found;
}

/**
 * Refuses with 400 `validation_failed`, before the contract validator sees it, a JSON body with an array
 * longer than its `maxItems` (one error, `must NOT have more than N items`, the validator's first) or with
 * more members unknown to the contract than a problem lists (`MAX_PROBLEM_ERRORS`: the first of them named,
 * all counted). The validator collects every error: it checked each item of a run of 524,280 items (1 MiB)
 * after the 1,000-item bound failed, copying its error list at every item (ajv's `$ref` merge), a stall of
 * 17 minutes; and it made an error object per unknown member (a 1,000-item run with 60,000 of them cost
 * 250–500 ms). One walk of the parsed body guided by the contract's shapes (0.1 ms for a valid 1,000-item
 * run); a body within both bounds goes on to the validator, which lists every error it has.
 */
export function refuseUnknownMembers(shapes: ReadonlyMap<string, BodyShape>): RequestHandler {
  return (req, res, next) => {
    const shape = res.locals.operationId === undefined ? undefined : shapes.get(res.locals.operationId);
    if (shape === undefined || req.body === undefined) return next();
    const found = shapeViolations(req.body, shape);
    if (found.tooLong !== undefined) {
      const errors = [
        {
          path: `/body${found.tooLong.at}`,
          message: `must NOT have more than ${found.tooLong.maxItems} items`,
        },
      ];
      throw new AppError('validation_failed', { detail: validationDetail(errors), errors });
    }
    if (found.unknownCount <= MAX_PROBLEM_ERRORS) return next();
    const errors: ValidationError[] = found.unknown.map(({ at, name }) => ({
      path: `/body${at}/${pointerToken(name)}`,
      message: UNKNOWN_MEMBER,
    }));
    throw new AppError('validation_failed', { detail: validationDetail(errors, found.unknownCount), errors });
  };
}
