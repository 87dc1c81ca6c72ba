import { randomBytes } from 'node:crypto';
import type { Problem } from '@scenario-scoring/api-types';
import { NoteSigner } from '@scenario-scoring/tlog';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { logRecords, testRecord, testSequencer } from '../../test/support/log-fixtures.js';
import { forEachDatabase } from '../../test/support/test-databases.js';
import { testFeatures } from '../../test/support/test-features.js';
import { startTestServer, type TestServer } from '../../test/support/test-server.js';
import { loadContract } from '../common/contract.js';
import { contractOperations } from './contract-routes.js';
import { requiredScopes } from './required-scopes.js';

const SCORE_BODY = { subject: 'applicant-8841', context: { jurisdiction: 'DE', on_time_ratio: 0.96 } };

describe('the scopes the contract requires', () => {
  const { document } = loadContract();
  const operations = contractOperations(document);
  const scopes = requiredScopes(operations, document.security);

  it('asks log:read for the audit reads (tag Logs, the policies and the model catalog), full for every other operation with an API key', () => {
    for (const { operationId, definition } of operations) {
      const tags = definition.tags as string[];
      const open = Array.isArray(definition.security) && definition.security.length === 0;
      const audit = tags.includes('Logs') || ['getPolicy', 'listModels', 'getModel'].includes(operationId);
      const expected = open ? undefined : audit ? 'log:read' : 'full';
      expect(scopes.get(operationId), operationId).toBe(expected);
    }
    expect(scopes.get('getLogCheckpoint')).toBe('log:read');
    expect(scopes.get('scoreSubject')).toBe('full');
    expect(scopes.get('getPolicy')).toBe('log:read');
    expect(scopes.has('getLogVerifierKey')).toBe(false);
  });

  it('documents 403 insufficient_scope exactly on the operations a log:read key cannot use', () => {
    for (const { operationId, definition } of operations) {
      const responses = definition.responses as Record<string, unknown>;
      expect('403' in responses, operationId).toBe(scopes.get(operationId) === 'full');
    }
  });

  it('refuses a contract whose requirement names no scope, several, or one the server does not know', () => {
    const one = operations.filter((operation) => operation.operationId === 'scoreSubject');
    expect(() => requiredScopes(one, [{ bearerAuth: [] }])).toThrow(/exactly one scope/);
    expect(() => requiredScopes(one, [{ bearerAuth: ['full', 'log:read'] }])).toThrow(/exactly one scope/);
    expect(() => requiredScopes(one, [{ bearerAuth: ['log:write'] }])).toThrow(/unknown scope/);
    expect(() => requiredScopes(one, [{ otherAuth: ['full'] }])).toThrow(/exactly one scope/);
  });
});

forEachDatabase('API key scopes over HTTP', ({ storage }) => {
  const signer = new NoteSigner('test-log', randomBytes(32));
  const tenant = 'scoped';
  const records = Array.from({ length: 2 }, (_, n) => testRecord(tenant, n));
  let server: TestServer;
  let full: string;
  let auditor: string;
  beforeAll(async () => {
    server = await startTestServer({ storage: storage(), logSigner: signer });
    const { keys } = testFeatures(storage());
    ({ key: full } = await keys.create(tenant));
    ({ key: auditor } = await keys.create(tenant, 'log:read'));
    await logRecords(storage(), records);
    await testSequencer(storage(), signer).sequencer.sequenceOnce();
  });
  afterAll(() => server.close());

  const cid = () => records[0]?.cid as string;
  const reads = () => [
    `/v1/logs/${cid()}`,
    '/v1/log/checkpoint',
    `/v1/log/proofs/inclusion/${cid()}?tree_size=2`,
    '/v1/log/tiles/0/0',
    '/v1/scoring/policies/DE',
  ];

  it('lets a log:read key read records, checkpoints, proofs, tiles, policies and the verifier key', async () => {
    for (const path of reads()) {
      const response = await server.request(path, { key: auditor });
      expect(response.status, path).toBe(200);
    }
    const head = await server.request('/v1/log/checkpoint', { key: auditor, method: 'HEAD' });
    expect(head.status).toBe(200);
    expect((await server.request('/log/verifier-key', { key: auditor })).status).toBe(200);
  });

  it('answers a log:read key 403 insufficient_scope on scoring, runs and webhooks', async () => {
    const refused: [string, Parameters<TestServer['request']>[1]][] = [
      ['/v1/scoring/score', { body: SCORE_BODY }],
      ['/v1/scoring/runs', { body: { items: [SCORE_BODY] } }],
      ['/v1/scoring/runs/run_01JZ4V8Q6Y3M2N5P7R9S1T3V5X', {}],
      ['/v1/webhooks/register', { body: { url: 'http://127.0.0.1:9/a', events: ['*'] } }],
      ['/v1/webhooks', {}],
      ['/v1/webhooks/wh_01JZ4V8Q6Y3M2N5P7R9S1T3V5X', { method: 'DELETE' }],
    ];
    for (const [path, request] of refused) {
      const response = await server.request(path, { ...request, key: auditor });
      expect(response.status, path).toBe(403);
      expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      const problem = (await response.json()) as Problem;
      expect(problem).toMatchObject({ code: 'insufficient_scope', status: 403, title: 'Insufficient scope' });
      expect(problem.detail).toMatch(/log:read.*needs the scope full/);
    }
  });

  it('lets a full key use every operation, the log reads included', async () => {
    for (const path of reads()) {
      expect((await server.request(path, { key: full })).status, path).toBe(200);
    }
    expect((await server.request('/v1/scoring/score', { key: full, body: SCORE_BODY })).status).toBe(200);
    const run = await server.request('/v1/scoring/runs', { key: full, body: { items: [SCORE_BODY] } });
    expect(run.status).toBe(202);
    const webhook = await server.request('/v1/webhooks/register', {
      key: full,
      body: { url: 'http://127.0.0.1:9/a', events: ['*'] },
    });
    expect(webhook.status).toBe(201);
    const { id } = (await webhook.json()) as { id: string };
    expect((await server.request(`/v1/webhooks/${id}`, { key: full, method: 'DELETE' })).status).toBe(204);
  });

  it('still answers 401 before the scope, and 404 for a path that is no operation', async () => {
    expect((await server.request('/v1/scoring/score', { body: SCORE_BODY })).status).toBe(401);
    expect((await server.request('/v1/nothing', { key: auditor })).status).toBe(404);
  });
});
