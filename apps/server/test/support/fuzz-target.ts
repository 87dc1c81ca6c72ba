/**
 * What the contract fuzzer sends its requests to: the built server on a fresh database, a receiver its
 * webhooks deliver to, and one call that checks every answer against the contract.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'vitest';
import {
  type ContractOperation,
  expectDocumentedResponse,
} from '../../../../test/contract/src/harness/contract-validator.js';
import { BuiltServer, databaseEnv, requireBuiltServer } from './built-server.js';
import { createTestDatabase, type DatabaseKind, type TestDatabase } from './test-databases.js';

/** One request of the fuzzer. */
export interface FuzzRequest {
  operation: ContractOperation;
  /** The concrete path, parameters filled in (already percent-encoded), with its query. */
  url: string;
  method: string;
  body?: string | Buffer | undefined;
  headers?: Record<string, string>;
  /** Sent without the API key (an unauthenticated operation, or a request that must be refused 401). */
  anonymous?: boolean;
}

/** Which test of the suite a request belongs to: each operation must be sent valid and invalid requests. */
export type FuzzPhase = 'valid' | 'invalid' | 'chain';

/** The answer, its body parsed when it is JSON. */
export interface FuzzAnswer {
  status: number;
  body: unknown;
  headers: Headers;
}

export class FuzzTarget {
  readonly kind: DatabaseKind;
  #database: TestDatabase | undefined;
  #server: BuiltServer | undefined;
  #receiver: Server | undefined;
  baseUrl = '';
  apiKey = '';
  receiverUrl = '';
  /** Requests sent, by operationId-like key (`POST /v1/...`). */
  readonly counts = new Map<string, number>();
  /** The test now sending; `exercised` counts, per phase, the requests sent to each operation (`get /v1/...`). */
  phase: FuzzPhase = 'valid';
  readonly exercised: Record<FuzzPhase, Map<string, number>> = {
    valid: new Map(),
    invalid: new Map(),
    chain: new Map(),
  };

  constructor(kind: DatabaseKind) {
    this.kind = kind;
  }

  async start(): Promise<void> {
    requireBuiltServer();
    this.#receiver = createServer((req, res) => {
      req.resume();
      req.on('end', () => res.end('ok'));
    });
    this.#receiver.listen(0, '127.0.0.1');
    await new Promise((resolve) => this.#receiver?.once('listening', resolve));
    this.receiverUrl = `http://127.0.0.1:${(this.#receiver.address() as AddressInfo).port}/hook`;
    this.#database = await createTestDatabase(this.kind);
    this.#server = new BuiltServer({
      ...databaseEnv(this.#database),
      RATE_LIMIT_PER_SECOND: '1000000',
      ANONYMOUS_RATE_LIMIT_PER_SECOND: '0',
      WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32',
      WEBHOOK_MAX_PER_TENANT: '10000',
      // Every valid createErasure is accepted: the fuzzing sends hundreds, faster than they complete.
      ERASURE_MAX_PENDING: '0',
      WEBHOOK_RETRY_SCHEDULE: '1s',
      // Records reach a signed checkpoint within 100 ms, so the log's operations have trees to prove.
      LOG_CHECKPOINT_INTERVAL: '100ms',
    });
    this.baseUrl = await this.#server.baseUrl();
    await this.#server.waitUntilReady();
    this.apiKey = this.#server.firstKey() ?? '';
    expect(this.apiKey).toMatch(/^sk_/);
  }

  /** The server's log lines at level error (there must be none: no 5xx, no unexpected error). */
  errorLines(): Record<string, unknown>[] {
    return (this.#server?.logLines() ?? []).filter((line) => line.level === 'error' || line.level === 50);
  }

  async stop(): Promise<void> {
    const status = await this.#server?.stop();
    this.#receiver?.closeAllConnections();
    this.#receiver?.close();
    await this.#database?.dispose();
    expect(status?.code, this.#server?.output.slice(-4000)).toBe(0);
  }

  /** Sends `request`; asserts the answer is no 5xx and is one the contract documents for the operation. */
  async send(request: FuzzRequest): Promise<FuzzAnswer> {
    const label = `${request.method} ${request.operation.path}`;
    this.counts.set(label, (this.counts.get(label) ?? 0) + 1);
    const operation = `${request.operation.method} ${request.operation.path}`;
    const exercised = this.exercised[this.phase];
    exercised.set(operation, (exercised.get(operation) ?? 0) + 1);
    const headers: Record<string, string> = {
      ...(!request.anonymous && { authorization: `Bearer ${this.apiKey}` }),
      ...request.headers,
    };
    if (request.body !== undefined) headers['content-type'] ??= 'application/json';
    const response = await fetch(`${this.baseUrl}${request.url}`, {
      method: request.method,
      headers,
      ...(request.body !== undefined && { body: request.body }),
    });
    const text = await response.text();
    const type = response.headers.get('content-type') ?? '';
    const body = text !== '' && /json/.test(type) ? JSON.parse(text) : text;
    const shown = `${label} ${request.url.slice(0, 200)} → ${response.status} ${text.slice(0, 300)}`;
    expect(response.status, shown).toBeLessThan(500);
    expectDocumentedResponse(request.operation, response, body);
    return { status: response.status, body, headers: response.headers };
  }
}
