import { Agent, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type ErrorRequestHandler, type RequestHandler } from 'express';
import * as OpenApiValidator from 'express-openapi-validator';
import type { Contract } from '../common/contract.js';
import { requestExample } from './contract-examples.js';
import { contractOperations } from './contract-routes.js';

/** How strictly the contract is enforced. */
export interface ContractValidationOptions {
  /** Validate responses too (development and tests): a handler drifting from the contract answers 500. */
  validateResponses: boolean;
  /**
   * Check the document against the OpenAPI 3.1 schema first (the validator's `validateApiSpec`), so a
   * malformed contract fails the warm-up. The production build checks the contract it ships once (see
   * scripts/check-contract.ts), so a production start skips it: it is about a tenth of the start-up.
   */
  checkDocument: boolean;
}

/**
 * The express-openapi-validator middleware for the contract. The validator compiles each operation's
 * schemas on its first request: the runtime warms it up (`warmUpContractValidation`) as a step of start-up,
 * before it listens, so no client's first request pays for it.
 */
export function contractValidation(contract: Contract, options: ContractValidationOptions): RequestHandler[] {
  const handlers = OpenApiValidator.middleware({
    // The validator clones the document before it touches it.
    apiSpec: contract.document as unknown as Parameters<typeof OpenApiValidator.middleware>[0]['apiSpec'],
    validateApiSpec: options.checkDocument,
    validateRequests: { allErrors: true },
    // Responses of 5xx are never validated (the validator skips them), so 501 stubs need no exclusion.
    validateResponses: options.validateResponses ? { allErrors: true } : false,
    // Authentication is the server's own middleware, which runs first.
    validateSecurity: false,
    ignoreUndocumented: false,
    fileUploader: false,
  });
  return handlers;
}

/**
 * The validator's middlewares without its response validation (the one named `responseMiddleware`): for
 * checking a request's headers and query apart from its route (an NDJSON run, run-upload.ts), whose
 * answers are written by the upload itself, never through the validator's `res.json`.
 */
export function requestValidationOnly(handlers: readonly RequestHandler[]): RequestHandler[] {
  return handlers.filter((handler) => handler.name !== 'responseMiddleware');
}

const WARM_UP_HEADER = 'x-warm-up-operation';

/**
 * Sends a request per operation (the contract's own example) through the validator on a loopback listener
 * of its own, so every operation's schemas are compiled; resolves with the operations it warmed. Rejects
 * when the contract is invalid or one of its own request examples does not pass.
 */
export async function warmUpContractValidation(
  handlers: readonly RequestHandler[],
  contract: Contract,
): Promise<string[]> {
  const operations = contractOperations(contract.document);
  const warmed: string[] = [];
  const reached = new Set<string>();
  const failures: string[] = [];
  const app = express();
  app.use(express.json({ strict: false, type: 'application/json' }), ...handlers);
  // Answering with an empty object compiles the operation's response validators (it then fails them).
  app.use((req, res) => {
    reached.add(String(req.headers[WARM_UP_HEADER]));
    res.status(200).json({});
  });
  const onError: ErrorRequestHandler = (error, req, res, _next) => {
    const operationId = String(req.headers[WARM_UP_HEADER]);
    if (!reached.has(operationId)) failures.push(`${operationId}: ${describe(error)}`);
    res.status(204).end();
  };
  app.use(onError);

  const server = app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve, reject) => server.once('listening', resolve).once('error', reject));
  const { port } = server.address() as AddressInfo;
  // node:http rather than fetch: fetch's first call loads Node's own copy of undici, a cost of its own.
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  try {
    for (const operation of operations) {
      const { url, body } = requestExample(operation, contract.document);
      const text = body === undefined ? undefined : JSON.stringify(body);
      await send(
        agent,
        port,
        operation.method.toUpperCase(),
        url,
        {
          [WARM_UP_HEADER]: operation.operationId,
          ...(text !== undefined && {
            'content-type': 'application/json',
            'content-length': String(Buffer.byteLength(text)),
          }),
        },
        text,
      );
      warmed.push(operation.operationId);
    }
  } finally {
    agent.destroy();
    await new Promise((resolve) => server.close(resolve));
  }
  if (failures.length > 0) {
    throw new Error(
      `the contract failed to compile or rejects its own examples:\n- ${failures.join('\n- ')}`,
    );
  }
  return warmed;
}

/** Sends one request on the loopback listener and reads its answer to the end. */
function send(
  agent: Agent,
  port: number,
  method: string,
  path: string,
  headers: Record<string, string>,
  body: string | undefined,
): Promise<void> {
  return new Promise((resolve, reject) => {
    const sent = request({ host: '127.0.0.1', port, method, path, headers, agent }, (response) => {
      response.once('end', resolve).once('error', reject).resume();
    });
    sent.once('error', reject).end(body);
  });
}

function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const items = (error as { errors?: { path?: string; message?: string }[] }).errors ?? [];
  return [error.message, ...items.map((item) => `${item.path} ${item.message}`)].join('; ');
}
