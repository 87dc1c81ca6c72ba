import type { IncomingMessage } from 'node:http';
import type { ValidationError } from '@scenario-scoring/api-types';
import type { RequestHandler } from 'express';
import type { OpenApiDocument } from '../common/contract.js';
import { AppError } from '../errors/app-error.js';
import { MAX_PROBLEM_ERRORS } from '../errors/problem.js';
import { validationDetail } from '../errors/validation-detail.js';
import { bodyMemberCount } from '../transport/json-body.js';
import { pointerToken } from '../transport/text-policy.js';
import type { ContractOperation } from './contract-routes.js';

/**
 * What the contract lets a request body hold, as far as its members go: for an object, the members it
 * names (`members`, when the schema closes it with `additionalProperties: false`; absent when it does not,
 * so any member passes), and for an array, its items' shape (absent: not checked).
 */
export interface BodyShape {
  members?: Map<string, BodyShape>;
  items?: BodyShape;
}

/** The message the contract validator gives an unknown member, so that both answers read the same. */
const UNKNOWN_MEMBER = 'must NOT have additional properties';

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

/** Members a body has that its shape does not name: how many, and the first of them as validation errors. */
export interface UnknownMembers {
  count: number;
  listed: ValidationError[];
}

/**
 * Each operation's JSON request body shape (operationId → shape), from the contract, `$ref`s followed.
 * Only plain schemas are shaped: one that composes others (`oneOf`, `allOf`, …) gets an empty shape, so
 * nothing under it is ever refused here (the validator still checks it all); the contract has none in
 * its request bodies today (unknown-members.test.ts checks that the bodies are shaped to the leaves).
 */
export function requestBodyShapes(
  operations: readonly ContractOperation[],
  document: OpenApiDocument,
): Map<string, BodyShape> {
  const built = new Map<Schema, BodyShape>();
  const resolve = (schema: Schema): Schema => {
    let current = schema;
    for (let hop = 0; hop < 16 && typeof current.$ref === 'string'; hop++) {
      const ref = current.$ref as string;
      if (!ref.startsWith('#/')) return {};
      let target: unknown = document;
      for (const token of ref.slice(2).split('/'))
        target = (target as Record<string, unknown> | undefined)?.[
          token.replaceAll('~1', '/').replaceAll('~0', '~')
        ];
      current = (target ?? {}) as Schema;
    }
    return current;
  };
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
    return shape;
  };
  const shapes = new Map<string, BodyShape>();
  for (const { operationId, definition } of operations) {
    const body = definition.requestBody as Schema | undefined;
    if (body === undefined) continue;
    const content = resolve(body).content as Record<string, { schema?: Schema }> | undefined;
    const schema = content?.['application/json']?.schema;
    if (schema !== undefined) shapes.set(operationId, shapeOf(schema));
  }
  return shapes;
}

/**
 * Counts the members of `value` that `shape` does not name, listing the first `MAX_PROBLEM_ERRORS` (with
 * their JSON Pointer under `at`). Only known members are walked into, so the depth is the schema's.
 */
function findUnknownMembers(value: unknown, shape: BodyShape, at: string, found: UnknownMembers): void {
  if (value === null || typeof value !== 'object') return;
  if (Array.isArray(value)) {
    if (shape.items === undefined) return;
    for (let i = 0; i < value.length; i++) findUnknownMembers(value[i], shape.items, `${at}/${i}`, found);
    return;
  }
  const members = shape.members;
  if (members === undefined) return;
  const record = value as Record<string, unknown>;
  for (const name in record) {
    const member = members.get(name);
    if (member !== undefined) {
      findUnknownMembers(record[name], member, `${at}/${pointerToken(name)}`, found);
      continue;
    }
    found.count++;
    if (found.listed.length < MAX_PROBLEM_ERRORS)
      found.listed.push({ path: `${at}/${pointerToken(name)}`, message: UNKNOWN_MEMBER });
  }
}

/** The members of the body `value` unknown to `shape`: how many, and the first `MAX_PROBLEM_ERRORS` (under `/body`). */
export function unknownMembers(value: unknown, shape: BodyShape): UnknownMembers {
  const found: UnknownMembers = { count: 0, listed: [] };
  findUnknownMembers(value, shape, '/body', found);
  return found;
}

/**
 * Refuses a JSON body with more members unknown to the contract than a problem lists
 * (`MAX_PROBLEM_ERRORS`) with 400 `validation_failed`, naming the first of them and counting them all,
 * before the contract validator sees it: the validator makes an error object for each one (a few µs
 * apiece on the main thread), so a 1 MiB body of 60,000 unknown members cost 250–500 ms there, every
 * tenant's requests waiting. Found by one walk of the parsed body guided by the contract's shapes, only
 * when the body has more members than that at all; fewer are left to the validator, which lists them with
 * any other error.
 */
export function refuseUnknownMembers(
  shapes: ReadonlyMap<string, BodyShape>,
  memberCount: (req: IncomingMessage) => number | undefined = bodyMemberCount,
): RequestHandler {
  return (req, res, next) => {
    const members = memberCount(req);
    if (members === undefined || members <= MAX_PROBLEM_ERRORS) return next();
    const shape = res.locals.operationId === undefined ? undefined : shapes.get(res.locals.operationId);
    if (shape === undefined) return next();
    const found = unknownMembers(req.body, shape);
    if (found.count <= MAX_PROBLEM_ERRORS) return next();
    throw new AppError('validation_failed', {
      detail: validationDetail(found.listed, found.count),
      errors: found.listed,
    });
  };
}
