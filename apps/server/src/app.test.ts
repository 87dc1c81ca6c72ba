import type { Problem } from '@scenario-scoring/api-types';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forEachDatabase } from '../test/support/test-databases.js';
import { testFeatures } from '../test/support/test-features.js';
import { startTestServer, type TestServer } from '../test/support/test-server.js';
import { loadContract } from './common/contract.js';
import { contractOperations } from './http/contract-routes.js';
import { contractValidation, warmUpContractValidation } from './http/contract-validation.js';
import type { Logger } from './request-logging/logger.js';

const VALID_SCORE = { subject: 'applicant-8841', context: { jurisdiction: 'DE', utilization: 0.35 } };

forEachDatabase('createApp', ({ storage }) => {
  let server: TestServer;
  let key: string;
  beforeAll(async () => {
    ({ key } = await testFeatures(storage()).keys.create('app'));
    server = await startTestServer({ storage: storage() });
  });
  afterAll(() => server.close());

  const problemOf = async (response: Response) => {
    expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(response.headers.get('x-request-id')).toMatch(/^req_/);
    const problem = (await response.json()) as Problem;
    expect(problem.request_id).toBe(response.headers.get('x-request-id'));
    return problem;
  };

  it('answers an unknown route with 404 not_found', async () => {
    for (const path of ['/v1/nothing-here', '/nothing-here']) {
      const response = await server.request(path, { key });
      expect(response.status).toBe(404);
      expect(await problemOf(response)).toMatchObject({
        code: 'not_found',
        title: 'Not found',
        detail: `No operation exists at GET ${path}.`,
      });
    }
  });

  it("matches the contract's paths case-sensitively, as the mock does: another case is 404 for every method", async () => {
    const score = { subject: 'case', context: { jurisdiction: 'DE' } };
    for (const path of ['/V1/scoring/score', '/v1/Scoring/score', '/v1/scoring/SCORE']) {
      for (const method of ['POST', 'GET'] as const) {
        const response = await server.request(path, {
          key,
          method,
          ...(method === 'POST' && { body: score }),
        });
        expect(response.status, `${method} ${path}`).toBe(404);
        expect(await problemOf(response)).toMatchObject({ code: 'not_found' });
      }
    }
    // A trailing slash stays accepted (the request log and metrics name the operation, too).
    expect((await server.request('/v1/scoring/score/', { key, method: 'POST', body: score })).status).toBe(
      200,
    );
  });

  it('answers a wrong method with 405 and the methods the contract allows in Allow', async () => {
    const response = await server.request('/v1/scoring/score', { key, method: 'GET' });
    expect(response.status).toBe(405);
    expect(response.headers.get('allow')).toBe('POST');
    expect(await problemOf(response)).toMatchObject({
      code: 'method_not_allowed',
      title: 'Method not allowed',
    });

    const onTemplate = await server.request('/v1/webhooks/wh_01JZ4VD5E7F9G1H3J5K7M9N1P3', {
      key,
      method: 'PUT',
    });
    expect(onTemplate.status).toBe(405);
    expect(onTemplate.headers.get('allow')).toBe('GET, HEAD, DELETE, PATCH');
  });

  it('answers an invalid query parameter with every problem listed', async () => {
    const response = await server.request('/v1/webhooks?limit=0&colour=red', { key });
    expect(response.status).toBe(400);
    const problem = await problemOf(response);
    expect(problem.code).toBe('validation_failed');
    expect(problem.errors).toContainEqual({
      path: '/query/colour',
      message: "Unknown query parameter 'colour'",
    });
    expect(problem.errors?.map((error) => error.path)).toContain('/query/limit');
  });

  // Review: an unknown query parameter was refused alone: the other unknown ones, the missing required
  // ones and the body's problems went unlisted until it was removed.
  it('lists every unknown query parameter with every other problem of the request', async () => {
    const proofs = await problemOf(
      await server.request('/v1/log/proofs/consistency?first=0&second=1', { key }),
    );
    expect(proofs.code).toBe('validation_failed');
    expect(proofs.errors?.map((error) => error.path).sort()).toEqual([
      '/query/first',
      '/query/from',
      '/query/second',
      '/query/to',
    ]);
    const run = await problemOf(
      await server.request('/v1/scoring/runs?bogus=1', {
        key,
        method: 'POST',
        body: { items: [{ subject: 'a', context: { jurisdiction: 'DE', utilization: 'high' } }] },
      }),
    );
    expect(run.code).toBe('validation_failed');
    expect(run.errors).toContainEqual({ path: '/query/bogus', message: "Unknown query parameter 'bogus'" });
    expect(run.errors?.map((error) => error.path)).toContain('/body/items/0/context/utilization');
    // The text policy's problems (a query integer not written in decimal, a NUL in the body) are listed
    // with the contract's, each path once.
    const both = await problemOf(
      await server.request('/v1/scoring/runs?deadline=1&limit=0x10', {
        key,
        method: 'POST',
        body: { items: [{ subject: 'a\u0000', context: { jurisdiction: 'DE', utilization: 'high' } }] },
      }),
    );
    expect(both.errors?.map((error) => error.path).sort()).toEqual([
      '/body/items/0/context/utilization',
      '/body/items/0/subject',
      '/query/deadline',
      '/query/limit',
    ]);
    const proofs0x = await problemOf(
      await server.request('/v1/log/proofs/consistency?from=0x10&second=1', { key }),
    );
    expect(proofs0x.errors).toEqual([
      { path: '/query/from', message: 'must be a decimal integer' },
      { path: '/query/second', message: "Unknown query parameter 'second'" },
      { path: '/query/to', message: "must have required property 'to'" },
    ]);
  });

  it('replaces an X-Request-Id it does not echo, whatever its length, as the guide says', async () => {
    for (const id of ['x'.repeat(129), 'x'.repeat(1025), 'x'.repeat(8000), 'a b']) {
      for (const path of ['/v1/webhooks', '/healthz', '/log/verifier-key']) {
        const response = await server.request(path, { key, headers: { 'x-request-id': id } });
        expect(response.status, `${path} with ${id.length} characters`).toBe(200);
        expect(response.headers.get('x-request-id')).toMatch(/^req_/);
      }
    }
    const echoed = await server.request('/v1/webhooks', { key, headers: { 'x-request-id': 'trace-1' } });
    expect(echoed.headers.get('x-request-id')).toBe('trace-1');
  });

  it('refuses a bracketed query parameter with 400, whatever the name in the brackets', async () => {
    const queries = ['a', '__proto__', 'constructor', 'toString', 'prototype', ''].map(
      (name) => `cursor[${name}]=b`,
    );
    for (const query of [...queries, '[a]=b', '__proto__[a]=b', 'cursor=x&cursor[__proto__]=b']) {
      const response = await server.request(`/v1/webhooks?${query}`, { key });
      expect(response.status, query).toBe(400);
      expect((await problemOf(response)).code, query).toBe('validation_failed');
    }
  });

  it('compiles the validator at start: the warm-up step sends every operation through it', async () => {
    // Timing the first request would be flaky on a loaded machine; which operations were warmed is exact.
    const contract = loadContract();
    const validation = contractValidation(contract, { validateResponses: true, checkDocument: true });
    const warmed = await warmUpContractValidation(validation, contract);
    expect([...warmed].sort()).toEqual(
      contractOperations(contract.document)
        .map((o) => o.operationId)
        .sort(),
    );
    expect(warmed).toContain('scoreSubject');
  });
});

forEachDatabase('createApp, when something fails unexpectedly', ({ storage }) => {
  const logged: { message: string; fields?: Record<string, unknown> }[] = [];
  const logger: Logger = { info() {}, error: (message, fields) => logged.push({ message, fields }) };
  let server: TestServer;
  let key: string;
  beforeAll(async () => {
    ({ key } = await testFeatures(storage()).keys.create('failing'));
    const real = testFeatures(storage());
    const logs = Object.create(real.logs) as typeof real.logs;
    logs.append = async () => {
      throw new Error('disk full at /var/lib/secret-path (password=hunter2)');
    };
    server = await startTestServer({ storage: storage(), features: { ...real, logs }, logger });
  });
  afterAll(() => server.close());

  it('answers 500 internal_error, disclosing nothing, and logs the error under the request id', async () => {
    const response = await server.request('/v1/scoring/score', { key, body: VALID_SCORE });
    expect(response.status).toBe(500);
    const text = await response.text();
    expect(text).not.toMatch(/disk full|secret|hunter2|Error|\bat\b.*\.js/);
    const requestId = response.headers.get('x-request-id');
    expect(JSON.parse(text)).toEqual({
      type: '/docs#section/errors/internal_error',
      title: 'Internal error',
      status: 500,
      detail: 'The server failed unexpectedly. Quote the request_id when you report it.',
      instance: '/v1/scoring/score',
      code: 'internal_error',
      request_id: requestId,
    });
    expect(logged).toContainEqual({
      message: 'unexpected error',
      fields: expect.objectContaining({
        requestId,
        error: expect.objectContaining({ message: expect.stringContaining('disk full') }),
      }),
    });
  });

  describe('when a handler drifts from the contract', () => {
    it('is caught by response validation (development and tests) as a 500', async () => {
      // A run whose stored status the contract does not know: the handler answers it as it is.
      const drifted = await startTestServer({ storage: storage(), logger });
      try {
        const created = await drifted.request('/v1/scoring/runs', {
          key,
          body: { items: [{ subject: 'drift', context: { jurisdiction: 'DE' } }] },
        });
        expect(created.status).toBe(202);
        const { id } = (await created.json()) as { id: string };
        await sql`update runs set status = 'paused' where id = ${id}`.execute(storage().db);
        const response = await drifted.request(`/v1/scoring/runs/${id}`, { key });
        expect(response.status).toBe(500);
        const unexpected = logged.findLast((entry) => entry.message === 'unexpected error');
        expect(unexpected?.fields?.error).toMatchObject({
          message: expect.stringContaining('/response/status'),
        });
      } finally {
        await drifted.close();
      }
    });
  });
});
