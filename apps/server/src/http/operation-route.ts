import type { OperationId, operations } from '@scenario-scoring/api-types';
import type { Request, RequestHandler, Response } from 'express';

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

/** The path parameters of an operation (`{}` when it has none). */
export type OperationParams<Id extends OperationId> = OperationParameters<Id, 'path'>;

/** The query of an operation, as the contract validator coerced it (`{}` when it has none). */
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
 * `req.body` are what the validator let through, `res.json` only takes a success reply of the contract.
 */
export type OperationHandler<Id extends OperationId> = (
  req: Request<OperationParams<Id>, OperationReply<Id>, OperationBody<Id>, OperationQuery<Id>>,
  res: Response<OperationReply<Id>>,
) => void | Promise<void>;

/** The implemented operations, by operationId: the compiler checks each handler against its operation. */
export type OperationRoutes = { [Id in OperationId]?: OperationHandler<Id> };

/**
 * The Express handler of a typed route. The one place the typed request meets Express's untyped one: the
 * contract validator runs before every handler, so what it lets through has the operation's types.
 */
export function expressHandler(handler: NonNullable<OperationRoutes[OperationId]>): RequestHandler {
  return handler as unknown as RequestHandler;
}
