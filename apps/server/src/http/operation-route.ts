import type { OperationId, operations } from '@scenario-scoring/api-types';
import type { Request, RequestHandler, Response } from 'express';
import type { ContractOperation } from './contract-routes.js';

type Operation<Id extends OperationId> = operations[Id];

/** An operation's parameters `in` the path or the query (`{}` when it has none there). */
type OperationParameters<Id extends OperationId, In extends 'path' | 'query'> =
  Operation<Id> extends {
    parameters: { [K in In]?: infer P };
  }
    ? [P] extends [undefined | never]
      ? Record<string, never>
      : NonNullable<P>
    : Record<string, never>;

/** The path parameters of an operation (`{}` when it has none); its integers are numbers (see {@link expressHandler}). */
export type OperationParams<Id extends OperationId> = OperationParameters<Id, 'path'>;

/** The query of an operation (`{}` when it has none); its integers are numbers (see {@link expressHandler}). */
export type OperationQuery<Id extends OperationId> = OperationParameters<Id, 'query'>;

/** The JSON body of an operation (validated before the handler runs), `undefined` when it takes none. */
export type OperationBody<Id extends OperationId> =
  Operation<Id> extends {
    requestBody?: { content: { 'application/json': infer B } };
  }
    ? Operation<Id>['requestBody'] extends { content: unknown }
      ? B
      : B | undefined
    : undefined;

type SuccessStatus = 200 | 201 | 202 | 204;
type JsonContent<R> = R extends { content: { 'application/json': infer J } } ? J : never;

/** What an operation answers on success: the union of its 2xx JSON bodies (errors go to the error handler). */
export type OperationReply<Id extends OperationId> = {
  [S in Extract<keyof Operation<Id>['responses'], SuccessStatus>]: JsonContent<Operation<Id>['responses'][S]>;
}[Extract<keyof Operation<Id>['responses'], SuccessStatus>];

/**
 * A route handler typed by its operation in the generated contract types: `req.params`, `req.query` and
 * `req.body` are what the validator let through, with the parameters the contract declares `integer` as
 * numbers, and `res.json` only takes a success reply of the contract.
 */
export type OperationHandler<Id extends OperationId> = (
  req: Request<OperationParams<Id>, OperationReply<Id>, OperationBody<Id>, OperationQuery<Id>>,
  res: Response<OperationReply<Id>>,
) => void | Promise<void>;

/** The implemented operations, by operationId: the compiler checks each handler against its operation. */
export type OperationRoutes = { [Id in OperationId]?: OperationHandler<Id> };

/**
 * The Express handler of a typed route, and the one place the typed request meets Express's untyped one.
 * The contract validator runs before every handler, so what it lets through has the operation's types,
 * except that Express hands path parameters over as strings (it sets `req.params` again for each route,
 * after the validator): the parameters `operation` declares `integer`, in the path or the query, are made
 * numbers here, once, so a handler never converts them. The validator refused anything but a decimal
 * integer before. An operation without integer parameters gets its handler unwrapped.
 */
export function expressHandler(
  handler: NonNullable<OperationRoutes[OperationId]>,
  operation: Pick<ContractOperation, 'definition'>,
  components?: Readonly<Record<string, unknown>>,
): RequestHandler {
  const untyped = handler as unknown as RequestHandler;
  const path = integerParameterNames(operation.definition, components, 'path');
  const query = integerParameterNames(operation.definition, components, 'query');
  if (path.length === 0 && query.length === 0) return untyped;
  return (req, res, next) => {
    const params = req.params as Record<string, unknown>;
    for (const name of path) {
      const value = params[name];
      if (typeof value === 'string') params[name] = Number(value);
    }
    if (query.length > 0) {
      const parsed = req.query as Record<string, unknown>;
      for (const name of query) {
        const value = parsed[name];
        if (typeof value === 'string') parsed[name] = Number(value);
      }
      // Express 5 parses `req.query` again on each read (a getter), unless the validator made it a
      // property of the request (it does, not configurable): then the object changed above is kept.
      if (!Object.hasOwn(req, 'query'))
        Object.defineProperty(req, 'query', { value: parsed, writable: true });
    }
    return untyped(req, res, next);
  };
}

/** The names of an operation's parameters `in` the path or the query whose schema is `type: integer`, following `$ref`s. */
export function integerParameterNames(
  definition: Readonly<Record<string, unknown>>,
  components: Readonly<Record<string, unknown>> | undefined,
  where: 'path' | 'query',
): string[] {
  const named = (section: string, ref: unknown) =>
    typeof ref === 'string'
      ? (components?.[section] as Record<string, Record<string, unknown>> | undefined)?.[
          ref.split('/').pop() as string
        ]
      : undefined;
  const names: string[] = [];
  for (const entry of (definition.parameters as Record<string, unknown>[] | undefined) ?? []) {
    const parameter = named('parameters', entry.$ref) ?? entry;
    let schema = parameter.schema as Record<string, unknown> | undefined;
    // A shared schema (`TreeSize`) may be a `$ref`, possibly to another `$ref`; a few hops at most.
    for (let hop = 0; hop < 8 && typeof schema?.$ref === 'string'; hop++)
      schema = named('schemas', schema.$ref);
    if (parameter.in === where && schema?.type === 'integer' && typeof parameter.name === 'string')
      names.push(parameter.name);
  }
  return names;
}
